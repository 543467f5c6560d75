"""tau2-bench domains (``mock``, ``retail``, ``airline``, ``telecom``) reimplemented to behave like tau2-bench
v0.2.0 (the default) or v1.0.1 (``version="v1.0.1"``), each checked against the version's recorded outputs.

- `Tau2Environment`: a domain's database and tools for one episode (replay API); for telecom a
  `TelecomEnvironment` with the user's own tools and database as well; for tau2-bench v1.0.1's
  ``banking_knowledge`` a `orchestra_gym.domains.tau2.banking_env.BankingEnvironment` (its knowledge
  base, retrieval variants and discoverable tools).
- `evaluate`: tau2's reward rules (DB, COMMUNICATE, ENV_ASSERTION, ACTION, NL_ASSERTION).
- `orchestra_gym.domains.tau2.tasks`: the task loaders and splits (``base``, ``train``, ``test``,
  telecom's ``small`` / ``full``); `orchestra_gym.domains.tau2.data`: where the data is and which
  version it is.
- `orchestra_gym.domains.tau2.backend.Tau2Backend`: the `orchestra_gym.domains.backend.DomainBackend`
  for function-calling envs (import it from its module).

Importing this package reads no data; the database is parsed on the first environment.
"""

from orchestra_gym.domains.tau2.environment import DOMAINS, Tau2Environment
from orchestra_gym.domains.tau2.evaluation import EvaluationResult, evaluate

__all__ = ["Tau2Environment", "evaluate", "EvaluationResult", "DOMAINS"]
