"""The package's exceptions and the one "did you mean" hint.

Every user-facing error names the field, what was wrong and the fix (STYLE.md). Step-order errors
use Gymnasium's own type, `gymnasium.error.ResetNeeded` (re-exported here), so that code written
against Gymnasium catches them.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from gymnasium.error import ResetNeeded

__all__ = ["ConfigError", "InfraError", "ResetNeeded", "did_you_mean", "close_matches"]


class ConfigError(ValueError):
    """A bad configuration value (training config, model config, models file, env keyword).

    The message names the key and the fix. Subclasses `ValueError`, so callers that catch
    `ValueError` keep working.
    """


class InfraError(RuntimeError):
    """An infrastructure failure, not the agent's: an endpoint still down after its retries, a
    timeout, a dropped connection.

    Agents raise it (or let ``httpx.TransportError`` / ``TimeoutError`` / ``ConnectionError``
    through) when they cannot produce an action for a reason outside the policy;
    `orchestra_gym.evaluation.run_episodes` retries the episode up to ``max_retries`` times and
    then records it as an infra failure, reported apart and never counted as a task failure.
    """


def close_matches(name: object, choices: Iterable[object], n: int = 1, cutoff: float = 0.6) -> list[str]:
    """Up to `n` entries of `choices` closest to `name` (difflib ratio >= `cutoff`), best first.

    Non-string names and choices are compared by `str()`.
    """
    return difflib.get_close_matches(str(name), [str(c) for c in choices], n=n, cutoff=cutoff)


def did_you_mean(name: object, choices: Iterable[object], n: int = 1) -> str:
    """The hint `` (did you mean 'x'?)`` for the closest choice(s), or ``""`` when none is close.

    Example: ``f"unknown tool {name!r}{did_you_mean(name, tools)}; known tools: ..."`` gives
    ``unknown tool 'get_ordr' (did you mean 'get_order'?); known tools: ...``. With `n` > 1 the
    hint lists several: `` (did you mean 'a' or 'b'?)``.
    """
    close = close_matches(name, choices, n=n)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"
