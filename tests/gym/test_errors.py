"""orchestra_gym.errors: one error family. Every exception class the two packages define derives from
`OrchestraError` and keeps its builtin base, and the errors module's table names each one where it lives."""

from __future__ import annotations

import importlib
import inspect

import pytest

from orchestra_gym import errors
from orchestra_gym.errors import ConfigError, DependencyNotInstalled, InfraError, OrchestraError, did_you_mean
from tests.gym.test_imports import modules


def _defined_exceptions(package: str) -> dict[str, type]:
    """Qualified name -> class of every public exception class defined (not imported) in `package`."""
    out = {}
    for name in modules(package):
        mod = importlib.import_module(name)
        for attr, obj in vars(mod).items():
            if (inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == name
                    and not attr.startswith("_") and not issubclass(obj, Warning)):
                out[f"{name}.{attr}"] = obj
    return out


@pytest.mark.parametrize("package", ["orchestra_gym", "orchestra_jax"])
def test_every_exception_of_the_package_is_an_orchestra_error_named_in_the_table(package):
    found = _defined_exceptions(package)
    assert len(found) >= (8 if package == "orchestra_gym" else 3)
    # an interrupt (Ctrl-C / SIGTERM at a step boundary) is not an error: it stays a KeyboardInterrupt, so that
    # `except Exception` never swallows it; it is named in the table all the same
    assert sorted(n for n, cls in found.items()
                  if not issubclass(cls, OrchestraError) and not issubclass(cls, KeyboardInterrupt)) == []
    short = {n.removeprefix("orchestra_gym.errors.") for n in found}
    assert sorted(n for n in short if f"`{n}`" not in errors.__doc__) == []


def test_the_family_keeps_the_builtin_bases_callers_catch():
    from orchestra_gym.domains.synthetic.core import ToolError
    from orchestra_gym.tools.models import ModelsFileError
    from orchestra_gym.tools.search import SearchError

    assert issubclass(ConfigError, ValueError) and issubclass(InfraError, RuntimeError)
    assert issubclass(DependencyNotInstalled, ImportError)
    assert issubclass(ModelsFileError, ConfigError) and issubclass(SearchError, ConfigError)
    assert issubclass(ToolError, OrchestraError) and not issubclass(ToolError, ValueError)
    assert not issubclass(errors.ResetNeeded, OrchestraError)  # Gymnasium's own, as code written for Gymnasium expects


@pytest.mark.parametrize("call, text", [
    ("orchestra_gym.preference_text:_part", "preference text split must be one of ('train', 'eval'), got 'tran' "
                                            "(did you mean 'train'?)"),
    ("orchestra_gym.data_paths:dataset_path", "unknown dataset 'frame' (did you mean 'frames'?)"),
    ("orchestra_gym.domains.synthetic:get_domain", "unknown synthetic domain 'railwey' (did you mean 'railway'?)"),
])
def test_config_errors_name_the_value_and_the_closest_choice(call, text):
    module, func = call.split(":")
    fn = getattr(importlib.import_module(module), func)
    arg = {"_part": ((), "tran"), "dataset_path": ("frame",), "get_domain": ("railwey",)}[func]
    with pytest.raises(ConfigError) as e:
        fn(*arg)
    assert str(e.value).startswith(text)


def test_cache_and_pool_modes_hint_the_closest_mode(tmp_path):
    from orchestra_gym.tools.cache import CallCache

    with pytest.raises(ConfigError, match=r"unknown cache mode 'replya' \(did you mean 'replay'\?\)"):
        CallCache(tmp_path / "c.sqlite", mode="replya")
    assert did_you_mean("exlude", ("exclude", "include", "only")) == " (did you mean 'exclude'?)"
