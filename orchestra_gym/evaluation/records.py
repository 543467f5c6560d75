"""The episode record of orchestra_gym's evaluation: `EpisodeResult` and its trajectories line.

`EpisodeResult` is what the runner (`orchestra_gym.evaluation.runner`) returns per episode and what
every metric (`orchestra_gym.evaluation.metrics`) reads; `EpisodeResult.record` and
`trajectory_line` are the one format of a ``trajectories.jsonl`` line (written as each episode
ends by `TrajectoryWriter`, rewritten by `orchestra_gym.evaluation.runs.regrade`, read back by
`EpisodeResult.from_record`). `jsonable` makes NumPy values plain for JSON; `is_infra` tells an
infrastructure failure (left out of every metric) from a played episode.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

__all__ = ["EpisodeResult", "Outcome", "jsonable", "strict_json", "is_infra", "TrajectoryWriter", "trajectory_line", "ORCHESTRATOR_USAGE"]

#: The orchestrator's own usage keys (``info["episode_orchestrator_<key>"]``, `OrchestraEnv.add_orchestrator_usage`).
ORCHESTRATOR_USAGE = ("cost_usd", "latency_s", "prompt_tokens", "completion_tokens")


@dataclass
class EpisodeResult:
    """One played episode.

    Attributes:
        task_id: the task's id (``env.unwrapped.task.id``).
        trial: which trial of the task (0-based; see `run_episodes`).
        seed: the seed ``reset`` got.
        info: the final ``info`` (the env's end-of-episode keys: ``outcome``, ``solved``,
            ``reward_vector``, ``reward_vector_names``, ``reward_breakdown``, ``end_reason``, and
            the episode totals ``episode_cost_usd`` (USD), ``episode_latency_s`` (s), ``turn``,
            ``tool_calls``, ``parse_errors``).
        steps: calls of ``env.step``.
        messages: the transcript as message dicts (role, content, ...), when kept.
        infra_error: None for a played episode; else why its last attempt failed for a reason
            outside the agent (`infra_error_of`): an infra failure, left out of every metric and
            counted apart (``infra_failures``).
        attempts: plays of this episode (1 + infra retries).
    """

    task_id: Any
    trial: int
    seed: int
    info: dict[str, Any]
    steps: int = 0
    messages: list[dict[str, Any]] | None = None
    infra_error: str | None = None
    attempts: int = 1

    @property
    def end_reason(self) -> str:
        """Why the episode ended (``answer``, ``user_stop``, ``turn_limit``, ``cost_budget``...)."""
        return str(self.info.get("end_reason"))

    @property
    def solved(self) -> bool:
        """Whether the outcome counts as solved (``info["solved"]``)."""
        return bool(self.info.get("solved", False))

    def record(self) -> dict[str, Any]:
        """A JSON-able record of the episode (one trajectories line without its ``messages``):
        the flat columns ``task_id``, ``seed``, ``outcome``, ``solved``, ``cost_usd`` (USD),
        ``latency_s`` (s), ``turns``, ``tool_calls``, ``parse_errors``, ``end_reason``,
        ``reward_vector``, ``reward_vector_names``, ``reward_breakdown``, ``trial``, the
        orchestrator's own part of the usage (``orchestrator_cost_usd``, ``orchestrator_latency_s``,
        ``orchestrator_prompt_tokens``, ``orchestrator_completion_tokens``: 0 for agents without a
        priced model; included in ``cost_usd`` and ``latency_s``); then ``steps``, ``infra_error``, ``attempts`` and ``info`` (the whole final ``info``, what
        `from_record` restores and `regrade` re-reads). An infra failure without a final
        ``info`` has outcome 0, cost 0 and end reason ``infra_error``."""
        info = self.info
        return {
            "task_id": self.task_id,
            "seed": self.seed,
            "outcome": float(info.get("outcome", 0.0)),
            "solved": bool(info.get("solved", False)),
            "cost_usd": float(info.get("episode_cost_usd", 0.0)),
            "latency_s": float(info.get("episode_latency_s", 0.0)),
            "turns": float(info.get("turn", 0.0)),
            "tool_calls": dict(info.get("tool_calls", {})),
            "parse_errors": float(info.get("parse_errors", 0.0)),
            "end_reason": info.get("end_reason", "infra_error"),
            "reward_vector": jsonable(info.get("reward_vector", [])),
            "reward_vector_names": list(info.get("reward_vector_names", [])),
            "reward_breakdown": jsonable(info.get("reward_breakdown", {})),
            "trial": self.trial,
            **{f"orchestrator_{k}": float(info.get(f"episode_orchestrator_{k}", 0.0)) for k in ORCHESTRATOR_USAGE},
            "steps": self.steps,
            "infra_error": self.infra_error,
            "attempts": self.attempts,
            "info": jsonable(info),
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> "EpisodeResult":
        """The episode of a trajectories line (`record` plus ``messages``); ``reward_vector`` comes
        back as a list of floats.

        Raises:
            KeyError: a line without ``info`` (written before run folders existed): the key named.
        """
        return cls(record["task_id"], int(record["trial"]), int(record["seed"]), dict(record["info"]),
                   int(record.get("steps", 0)), record.get("messages"), record.get("infra_error"),
                   int(record.get("attempts", 1)))


#: What the metrics read: an `EpisodeResult` or an episode's final ``info``.
Outcome = Union[EpisodeResult, Mapping[str, Any]]


def jsonable(x: Any, array: Any = None) -> Any:
    """`x` with NumPy arrays and scalars made plain Python (lists, floats, ints, bools), dict keys str;
    `array` (default ``ndarray.tolist``) turns each array into its JSON value."""
    if isinstance(x, dict):
        return {str(k): jsonable(v, array) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v, array) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist() if array is None else array(x)
    if isinstance(x, (np.floating, np.integer, np.bool_)):
        return x.item()
    return x


def strict_json(x: Any, **dumps_kwargs: Any) -> str:
    """`x` as strict JSON (RFC 8259): `jsonable`, with every non-finite float (NaN, +-inf: e.g. the
    success rate of a run without a graded episode) written as ``null``, never as a bare ``NaN``
    that strict parsers refuse. `dumps_kwargs` go to `json.dumps` (``indent``...)."""
    def finite(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {k: finite(w) for k, w in v.items()}
        if isinstance(v, list):
            return [finite(w) for w in v]
        return v

    plain = jsonable(x)
    try:  # the common case, without a walk over the value: nothing non-finite
        return json.dumps(plain, allow_nan=False, **dumps_kwargs)
    except ValueError:
        return json.dumps(finite(plain), allow_nan=False, **dumps_kwargs)


def is_infra(x: Outcome) -> bool:
    """Whether an episode is an infra failure: an `EpisodeResult` with ``infra_error``, or a final
    ``info`` with ``end_reason == "orchestrator_error"``."""
    if isinstance(x, EpisodeResult):
        return x.infra_error is not None
    return x.get("end_reason") == "orchestrator_error"


def trajectory_line(result: EpisodeResult) -> str:
    """One line of a ``trajectories.jsonl``: `EpisodeResult.record` plus ``messages`` as JSON (UTF-8
    kept as is; strict: a non-finite float is ``null``, `strict_json`), newline-terminated;
    `EpisodeResult.from_record` reads it back."""
    return strict_json({**result.record(), "messages": result.messages}, ensure_ascii=False) + "\n"


class TrajectoryWriter:
    """Appends one JSON line per finished episode, flushed at once; one lock, so safe under threads."""

    def __init__(self, path: str | os.PathLike[str], append: bool):
        self.path = str(path)
        self.file = open(path, "a" if append else "w", encoding="utf-8")
        self.lock = threading.Lock()

    def write(self, result: EpisodeResult) -> None:
        """Append `result`'s line. Raises OSError naming the file (a full or read-only disk); a line cut short
        by it is the torn last line that `orchestra eval --resume` drops and plays again."""
        line = trajectory_line(result)
        with self.lock, self._named():
            self.file.write(line)
            self.file.flush()

    def close(self) -> None:
        with self._named():
            self.file.close()

    def _named(self) -> "contextlib.AbstractContextManager[None]":
        """Re-raise an OSError of the file with its path (``write`` errors carry none)."""
        @contextlib.contextmanager
        def named():
            try:
                yield
            except OSError as e:
                if e.filename:
                    raise
                raise type(e)(e.errno, e.strerror, self.path) from e
        return named()
