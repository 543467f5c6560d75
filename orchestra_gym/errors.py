"""The project's error family and the one "did you mean" hint.

Every exception the project raises on purpose derives from `OrchestraError` (the model: Gymnasium's
one `gymnasium.error.Error` base), so that a caller catches the whole family with one clause and both
command lines (`orchestra_gym.cli`, `orchestra_jax.cli`) turn any of them into one line on stderr and
exit code 2 (except a training run stopped on purpose, `TrainingStopped`: exit code 1). Each keeps its builtin base (`ValueError`, `RuntimeError`), so code that catches those keeps
working. Every user-facing error names the field, what was wrong and the fix (STYLE.md).

The family, where each is defined: `OrchestraError`, `ConfigError`, `InfraError` and
`DependencyNotInstalled` here; the others where they are raised, at the layer that owns the failure
(they cannot be re-exported from this bottom module without an import cycle: their modules import the
base from here; `orchestra_jax`'s are never re-exported, since `orchestra_gym` never imports it):

- `OrchestraError` (Exception): the base.
- `ConfigError` (ValueError): a bad config value, keyword or argument.
- `InfraError` (RuntimeError): an endpoint or timeout failure, not the agent's.
- `DependencyNotInstalled` (ImportError): a command or part whose extra is not installed.
- `orchestra_gym.tools.models.ModelsFileError` (a ConfigError): a models file that cannot be used.
- `orchestra_gym.tools.search.SearchError` (a ConfigError): a bad corpus, index folder or search config.
- `orchestra_gym.tools.cache.CacheError` (RuntimeError): a record/replay cache file that cannot be used.
- `orchestra_gym.tools.sandbox.SandboxError` (RuntimeError): the code sandbox cannot be set up.
- `orchestra_gym.tools.http.ResponseTooLarge` (Exception): an endpoint's reply over the size limit.
- `orchestra_gym.tools.llm.BadUsage` (ValueError): a reply's ``usage`` that cannot be billed.
- `orchestra_gym.domains.synthetic.core.ToolError` (Exception): a domain tool call that cannot be carried out.
- `orchestra_gym.domains.tau2.toolkit.ModelValidationError` (ValueError): a record failing tau2's validation.
- `orchestra_gym.domains.arith.ArithmeticLimitError` (ValueError): an expression over the evaluation limits.
- `orchestra_gym.serving.client.ServerError` (RuntimeError): an error frame of an env server.
- `orchestra_gym.evaluation.runner.EvaluationStopped` (Exception): an evaluation stopped by a signal.
- `orchestra_gym.evaluation.episode.EpisodeAbandoned` (Exception): an episode abandoned by a stop request (not recorded).
- `orchestra_jax.guard.TrainingStopped` (RuntimeError): a run stopped on purpose (the guard, a non-finite update).
- `orchestra_jax.checkpoint.CheckpointError` (RuntimeError): a checkpoint that cannot be used; its
  `orchestra_jax.checkpoint.NonFiniteStateError` (also a ValueError): a state with non-finite values.

`orchestra_jax.run_checkpoints.TrainingInterrupted` (KeyboardInterrupt) is not a member: a run stopped at a
step boundary by Ctrl-C or SIGTERM, checkpointed, is an interrupt, not an error, so `except Exception` never
swallows it.

Step-order errors use Gymnasium's own type, `gymnasium.error.ResetNeeded` (re-exported here, not a
member of the family), so that code written against Gymnasium catches them. A few private control-flow
signals (``_Abandoned``, ``_DeadlineExceeded``, ``_Damaged``) never leave their module and are not members.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from gymnasium.error import ResetNeeded

__all__ = ["OrchestraError", "ConfigError", "InfraError", "DependencyNotInstalled", "ResetNeeded", "did_you_mean",
           "close_matches"]


class OrchestraError(Exception):
    """The base of every exception the project raises on purpose (the table of the module docstring).

    ``except OrchestraError`` catches the family; the command lines print its message as one line and
    exit with code 2.
    """


class ConfigError(OrchestraError, ValueError):
    """A bad configuration value (training config, model config, models file, env keyword).

    The message names the key and the fix. Subclasses `ValueError`, so callers that catch
    `ValueError` keep working.
    """


class InfraError(OrchestraError, RuntimeError):
    """An infrastructure failure, not the agent's: an endpoint still down after its retries, a
    timeout, a dropped connection.

    Agents raise it (or let ``httpx.TransportError`` / ``TimeoutError`` / ``ConnectionError``
    through) when they cannot produce an action for a reason outside the policy;
    `orchestra_gym.evaluation.run_episodes` retries the episode up to ``max_retries`` times and
    then records it as an infra failure, reported apart and never counted as a task failure.
    """


class DependencyNotInstalled(OrchestraError, ImportError):
    """An optional part that needs an extra that is not installed (Gymnasium's name for it); the message
    names the extra and the install command from the clone, e.g. ``pip install -e ".[jax]"``."""


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
