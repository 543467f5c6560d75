"""Baseline agents fitted on played episodes: `fit_router`, the classical router's table and cost weight.

In the evaluation layer, above `orchestra_gym.agents`: fitting plays episodes through the runner
(`orchestra_gym.evaluation.runner.run_episodes`) and scores operating points on the accuracy-cost plane
(`orchestra_gym.evaluation.metrics.hull_gap`); the agents never import the evaluation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from orchestra_gym.agents import Agent, ExpertAgent, RouterAgent
from orchestra_gym.evaluation.metrics import hull_gap
from orchestra_gym.evaluation.runner import run_episodes

__all__ = ["fit_router", "ROUTER_COST_WEIGHTS"]

#: Cost weights (success units per USD) that `fit_router` tries: from "cost is free" to "a cent costs 0.5".
ROUTER_COST_WEIGHTS = (0.0, 1.0, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0, 50.0)


def fit_router(
    env_factory: Callable[[], gym.Env],
    experts: Sequence[str],
    tasks: int,
    *,
    seed: int = 0,
    options: Mapping[str, Any] | None = None,
    cost_weights: Sequence[float] = ROUTER_COST_WEIGHTS,
    max_concurrency: int = 1,
) -> tuple[RouterAgent, dict[str, Any]]:
    """Fit the classical router (`orchestra_gym.agents.RouterAgent`) on training tasks.

    Every expert is played alone (``always expert-k``) on the same `tasks` training tasks (episode
    seeds ``seed``, ``seed + 1``, ...: pick a seed range the evaluation does not use), recording each
    task's features. For each cost weight in `cost_weights` the table of `RouterAgent.fit` is scored on
    those same records (the router's episode on a task is its expert's), and the weight whose operating
    point lies furthest above the fixed experts' accuracy-cost hull (`hull_gap`) is kept: RouterBench's
    willingness-to-pay sweep, with the operating point chosen on training data only.

    Returns:
        (router, fit): fit holds ``cost_weight``, ``table`` (``"category/difficulty" -> expert``),
        ``train_success``, ``train_cost_usd`` (mean per task), ``train_hull_gap``, ``experts``
        (per expert: success and mean cost on the training tasks) and ``tasks``.

    Raises:
        ValueError: no experts, tasks < 1, or no cost weights.
    """
    if not experts or tasks < 1 or not cost_weights:
        raise ValueError(f"fit_router needs experts, tasks >= 1 and cost weights; got {list(experts)}, {tasks}, "
                         f"{list(cost_weights)}")
    features: dict[int, tuple[str, str]] = {}

    class _Recording(ExpertAgent):
        def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
            super().reset(env, observation, info)
            features[self.seed] = RouterAgent.features(env.unwrapped.task)

    records: list[dict[str, Any]] = []
    for expert in experts:
        def make(s: int, expert: str = expert) -> Agent:
            agent = _Recording(expert)
            agent.seed = s  # the episode's seed (run_episodes builds episode i's agent with seed + i)
            return agent

        results = run_episodes(env_factory, make, tasks, seed=seed, options=options, max_concurrency=max_concurrency)
        for r in results:
            records.append({"expert": expert, "seed": r.seed, "solved": r.solved,
                            "cost_usd": float(r.info["episode_cost_usd"])})
    for rec in records:  # the features of each training task, read at its reset
        rec["features"] = features.get(rec["seed"], ("", ""))
    by_expert = {e: [r for r in records if r["expert"] == e] for e in experts}
    points = [(float(np.mean([r["cost_usd"] for r in rs])), float(np.mean([r["solved"] for r in rs])))
              for rs in by_expert.values()]
    outcome = {(r["expert"], r["seed"]): r for r in records}
    best: tuple[float, RouterAgent, float, float] | None = None
    for w in cost_weights:
        router = RouterAgent.fit(records, float(w))
        played = [outcome[(router.table.get(f, router.default), seed_)]
                  for seed_, f in sorted({(r["seed"], r["features"]) for r in records})]
        succ = float(np.mean([r["solved"] for r in played]))
        cost = float(np.mean([r["cost_usd"] for r in played]))
        gap = hull_gap(succ, cost, points)
        if best is None or gap > best[0] + 1e-12:
            best = (gap, router, succ, cost)
    gap, router, succ, cost = best
    fit = {
        "cost_weight": router.cost_weight,
        "table": {f"{c}/{d}": e for (c, d), e in sorted(router.table.items())},
        "train_success": succ, "train_cost_usd": cost, "train_hull_gap": gap, "tasks": tasks,
        "experts": {e: {"success": p[1], "mean_cost_usd": p[0]} for e, p in zip(experts, points)},
    }
    return router, fit
