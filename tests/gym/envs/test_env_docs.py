"""Every registered env class documents every keyword it accepts (Gymnasium's rule: a stranger can use an env
from its docstring alone). The accepted keywords come from the class signatures (`inspect`, following
``**kwargs`` up the class hierarchy: `orchestra_gym.registration.accepted_kwargs`); the documented ones are the
names in the class docstring's Arguments section, plus those of each env class that section refers to by name
(``plus the `FunctionCallingEnv` arguments``, ``see `OrchestraEnv```), read the same way."""

from __future__ import annotations

import inspect
import re

import pytest

from orchestra_gym.env import OrchestraEnv
from orchestra_gym.registration import ENV_SPECS, EnvFactory, accepted_kwargs

_SECTION = re.compile(r"^(?:## )?Arguments[^\n]*\n(.*?)(?=^## |^[A-Z][A-Za-z ]+:\s*$|\Z)", re.S | re.M)


def arguments_section(cls: type) -> str:
    """The Arguments section of `cls`'s own docstring, its header line included ("" when it has none)."""
    m = _SECTION.search(inspect.cleandoc(cls.__doc__ or ""))
    return m.group(0) if m else ""


def documented(cls: type) -> set[str]:
    """Names the Arguments section of `cls` documents (``name`` or ``name:``), with the sections of the env
    classes of its hierarchy that it refers to as `Class`."""
    text = arguments_section(cls)
    names = set(re.findall(r"``([a-z_][a-z0-9_]*)``", text)) | set(re.findall(r"\b([a-z_][a-z0-9_]*):", text))
    for base in cls.__mro__[1:]:
        if issubclass(base, OrchestraEnv) and f"`{base.__name__}`" in text:
            names |= documented(base)
    return names


@pytest.mark.parametrize("env_id", sorted(ENV_SPECS))
def test_each_registered_env_documents_every_keyword_it_accepts(env_id):
    cls = EnvFactory(env_id, ENV_SPECS[env_id][0]).env_class()
    accepted = accepted_kwargs(cls)
    assert accepted is not None and len(accepted) >= 23  # every registered class ends its **kwargs in OrchestraEnv
    assert arguments_section(cls), f"{cls.__name__} has no Arguments section"
    assert [k for k in accepted if k not in documented(cls)] == []


def test_the_doc_reader_sees_what_is_missing():
    class Undocumented(OrchestraEnv):
        """An env.

        ## Arguments
        ``color``: the color; see `OrchestraEnv`.
        """

        def __init__(self, color: str = "red", shade: int = 0, **kwargs):
            super().__init__(**kwargs)

    missing = [k for k in accepted_kwargs(Undocumented) if k not in documented(Undocumented)]
    assert missing == ["shade"]
    assert {"max_turns", "preference_split", "render_mode"} <= documented(Undocumented)
