"""`RouterAgent`: the classical router baseline (RouterBench / RouteLLM), a lookup from task features to one expert.

Fitted on played episodes by `orchestra_gym.evaluation.fit.fit_router`.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from orchestra_gym.parsing import render_tool_calls
from orchestra_gym.types import ToolCall

__all__ = ["RouterAgent"]


class RouterAgent:
    """The classical router baseline: a lookup from task features to one expert, used for every turn.

    RouterBench (Hu et al. 2024) and RouteLLM (Ong et al. 2024) route each query to one model from
    features of the query; here the features are the task's ``category`` and ``difficulty``
    (`orchestra_gym.types.Task`), read from ``env.unwrapped.task`` at reset. The table is fitted on
    training tasks with `RouterAgent.fit`: every expert is played on every training task (always
    that expert), and each feature cell gets the expert with the best mean utility
    ``success - cost_weight * cost_usd``. A cell not seen in training falls back to the expert that is
    best over all training tasks. The features are the task generator's labels, which the policy
    never sees (it reads only the request): the router is a strong baseline, not a fair policy.

    Args:
        table: (category, difficulty) -> expert name.
        default: the expert for unseen cells.
        cost_weight: the utility's price of one USD, in success units (kept for the record).
    """

    name = "router"

    def __init__(self, table: "dict[tuple[str, str], str]", default: str, cost_weight: float = 0.0):
        self.table = dict(table)
        self.default = default
        self.cost_weight = float(cost_weight)
        self.expert = default

    @staticmethod
    def features(task: Any) -> "tuple[str, str]":
        """The lookup key of a task: (category, difficulty)."""
        return (str(getattr(task, "category", "") or ""), str(getattr(task, "difficulty", "") or ""))

    @classmethod
    def fit(cls, records: "Sequence[dict[str, Any]]", cost_weight: float) -> "RouterAgent":
        """Fit the table from per-episode records of the fixed experts on training tasks.

        Args:
            records: dicts with ``expert`` (name), ``features`` ((category, difficulty)),
                ``solved`` (bool or 0/1) and ``cost_usd`` (float, USD): one per (expert, task).
            cost_weight: success units per USD in the utility ``success - cost_weight * cost_usd``.

        Raises:
            ValueError: no records.
        """
        if not records:
            raise ValueError("records is empty: play every expert on some training tasks first")
        cells: dict[Any, dict[str, list[float]]] = {}
        overall: dict[str, list[float]] = {}
        for r in records:
            u = float(r["solved"]) - cost_weight * float(r["cost_usd"])
            cells.setdefault(tuple(r["features"]), {}).setdefault(r["expert"], []).append(u)
            overall.setdefault(r["expert"], []).append(u)

        def best(d: "dict[str, list[float]]") -> str:
            return max(sorted(d), key=lambda e: float(np.mean(d[e])))

        table = {k: best(v) for k, v in cells.items()}
        return cls(table, best(overall), cost_weight)

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        self.expert = self.table.get(self.features(env.unwrapped.task), self.default)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return render_tool_calls([ToolCall("call_expert", {"expert": self.expert})])
