"""ToolScale-synthetic: procedural, offline function-calling domains and tasks, from a seed.

The generator (instances, tasks, the backend, task export and import) is `orchestra_gym.domains.synthetic.generator`;
the shared domain machinery is `.core`, the booking-style template `.booking`, and each of the ten domains of the
paper (Sec. 3.3) is its own module (`.finance` ... `.weather`). This package face hands their names on.
"""

from orchestra_gym.domains.synthetic.generator import (CATEGORIES, DOMAIN_NAMES, GENERATOR_VERSION, SyntheticBackend,
                                                      SyntheticInstance, export_tasks, get_domain, import_tasks,
                                                      make_instance)

__all__ = ["DOMAIN_NAMES", "CATEGORIES", "GENERATOR_VERSION", "SyntheticInstance", "SyntheticBackend", "make_instance",
           "get_domain", "export_tasks", "import_tasks"]
