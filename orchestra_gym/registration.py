"""The table of environment ids and their registration with Gymnasium (cheap: strings only).

Each id is registered with an `EnvFactory` entry point: it imports the env class only when the
env is made, and checks the keywords first, so that ``gym.make(id, data_path=...)`` on an env
without that keyword is a `ConfigError` naming the keyword, the env's accepted ones and the
nearest match, instead of a ``TypeError`` from deep inside Gymnasium. It wraps the env in
`RefusalSafeChecker` (Gymnasium's passive env checker, surviving a refused first reset) in place of
the checker ``gym.make`` would add.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import gymnasium as gym

from orchestra_gym.errors import ConfigError, close_matches

__all__ = ["ENV_SPECS", "ENV_IDS", "REMOTE_ID", "EnvFactory", "RefusalSafeChecker", "accepted_kwargs", "register_all"]

# id -> (entry point "module:Class", default kwargs, max_episode_steps handled by the env itself)
ENV_SPECS: dict[str, tuple[str, dict]] = {
    "ToolOrchestra-ToolScale-v0": ("orchestra_gym.envs.function_calling:ToolScaleEnv", {}),
    "ToolOrchestra-Tau2-Mock-v0": ("orchestra_gym.envs.tau2:Tau2Env", {"domain": "mock"}),
    "ToolOrchestra-Tau2-Retail-v0": ("orchestra_gym.envs.tau2:Tau2Env", {"domain": "retail"}),
    "ToolOrchestra-Tau2-Airline-v0": ("orchestra_gym.envs.tau2:Tau2Env", {"domain": "airline"}),
    "ToolOrchestra-Tau2-Telecom-v0": ("orchestra_gym.envs.tau2:Tau2Env", {"domain": "telecom"}),
    "ToolOrchestra-Tau2-BankingKnowledge-v0": ("orchestra_gym.envs.tau2_banking:Tau2BankingEnv", {}),
    "ToolOrchestra-HLE-v0": ("orchestra_gym.envs.qa:HLEEnv", {}),
    "ToolOrchestra-FRAMES-v0": ("orchestra_gym.envs.qa:FRAMESEnv", {}),
}
ENV_IDS: tuple[str, ...] = tuple(ENV_SPECS)
REMOTE_ID = "Remote-v0"  # gym.make("orchestra_gym:Remote-v0", base_url=...): orchestra_gym.serving.client.RemoteEnv


def accepted_kwargs(cls: type) -> list[str] | None:
    """Keyword arguments `cls(...)` accepts, following ``**kwargs`` up the class hierarchy.

    Returns:
        The names in declaration order (subclass first), or None when some ``__init__`` takes
        ``**kwargs`` that end nowhere known (then every keyword may be valid).
    """
    names: list[str] = []
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        if klass in (gym.Env, object):
            return None  # **kwargs that no known __init__ consumes: anything may be meant
        params = list(inspect.signature(init).parameters.values())[1:]
        names += [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in names]
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            return names
    return None


class RefusalSafeChecker(gym.wrappers.PassiveEnvChecker):
    """Gymnasium's passive env checker (the same checks, in the same place: the innermost wrapper),
    except that a first ``reset`` that raises (a refused option, e.g. ``options={"pricing": "nope"}``)
    leaves the checker as it was, so the next reset is the checked one and stepping works.

    Gymnasium 1.4's `PassiveEnvChecker` marks its reset check done before the reset runs; after a
    refused first reset its first ``step`` fails with ``TypeError: cannot unpack non-iterable
    NoneType object``. Not listed in ``env.spec.additional_wrappers`` (as ``gym.make``'s own checker).
    """

    def reset(self, *, seed: "int | None" = None, options: "dict[str, Any] | None" = None) -> tuple[Any, dict]:
        first = not self.checked_reset
        try:
            return super().reset(seed=seed, options=options)
        except BaseException:
            if first:
                self.checked_reset, self._previous_data = False, None
            raise

    @property
    def spec(self) -> Any:
        return self.env.spec


class EnvFactory:
    """Entry point of one env id: ``EnvFactory(env_id, "module:Class")(**kwargs)`` makes the env,
    wrapped in `RefusalSafeChecker`.

    Picklable (vector envs copy it). Raises `ConfigError` for a keyword the class does not accept.
    """

    def __init__(self, env_id: str, entry_point: str):
        self.env_id, self.entry_point = env_id, entry_point

    def __repr__(self) -> str:
        return f"EnvFactory({self.env_id!r}, {self.entry_point!r})"

    def env_class(self) -> type:
        """The env class (imported now)."""
        module, _, name = self.entry_point.partition(":")
        return getattr(importlib.import_module(module), name)

    def __call__(self, **kwargs: Any) -> gym.Env:
        cls = self.env_class()
        accepted = accepted_kwargs(cls)
        if accepted is not None:
            fixed = set(ENV_SPECS.get(self.env_id, ("", {}))[1])  # set by the id itself
            offered = [a for a in accepted if a not in fixed]
            for key in kwargs:
                if key not in accepted:
                    near = close_matches(key, offered, n=1, cutoff=0.5)  # 0.5: data_path -> data_dir
                    hint = f" (did you mean {near[0]!r}?)" if near else ""
                    raise ConfigError(
                        f"gym.make({self.env_id!r}): unknown keyword {key!r}{hint}; "
                        f"{cls.__name__} accepts: {', '.join(offered)}")
        return RefusalSafeChecker(cls(**kwargs))


def register_all() -> None:
    """Register every id in `ENV_SPECS` (idempotent; the entry points are imported lazily)."""
    for env_id, (entry_point, kwargs) in ENV_SPECS.items():
        if env_id in gym.registry:
            continue
        gym.register(id=env_id, entry_point=EnvFactory(env_id, entry_point), kwargs=dict(kwargs),
                     disable_env_checker=True)  # EnvFactory adds the checker: RefusalSafeChecker
    if REMOTE_ID not in gym.registry:  # a client of `orchestra serve` (needs the serve extra when made)
        gym.register(id=REMOTE_ID, entry_point="orchestra_gym.serving.client:RemoteEnv", disable_env_checker=True)
