"""Every aggregate and statistic of orchestra_gym's evaluation, as pure functions over episode records.

Each reads episodes' final ``info`` dicts or `orchestra_gym.evaluation.records.EpisodeResult`s
(which hold them), infra failures left out; nothing here plays, reads files or prints.

* `summarize`: success rate with its Wald 95% interval (`wald_interval`), mean outcome, cost (USD),
  latency (s), turns, tool mix (`mean_tool_calls`, calls per episode by tool), parse errors, end
  reasons, infra failures, and tau2's components that could not be judged offline; `by_label`: success
  and tool mix per task label.
* `pass_hat_k` / `pass_hat_ks`: tau2-bench's pass^k (unbiased, per task, averaged over tasks).
* `qa_metrics`, `tau2_task_weighted`: the columns of ToolOrchestra's Table 1 (accuracy % with its
  interval, cost in cents, latency in minutes per task) and Table 15 (calls per model).
* `cost_accuracy_hull`, `hull_accuracy`, `hull_gap`, `aiq`: the accuracy-cost plane of RouterBench
  (the non-decreasing convex hull and the area under it).
* `rollout_summary`: the trainer's per-step summary (success, cost per solved task, valid-format
  rate, tool mix...).
* `preference_score`: the App. L preference metric of a run against a baseline run
  (`orchestra_gym.rewards.preference_metric`); `group_preference_score`: the same comparison in the
  group form of the training reward, with reference runs as the group
  (`orchestra_gym.rewards.reference_group_scores`).
* `asked_moves` / `moves_as_asked`: how a run under a preference should move from the default's
  (ToolOrchestra Sec. 6.4 / Table 3), and whether it did.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from orchestra_gym.envs.qa import QA_MODELS
from orchestra_gym.evaluation.records import EpisodeResult, Outcome, is_infra
from orchestra_gym.rewards import RewardLayout, episode_preference_weights, preference_metric, reference_group_scores
from orchestra_gym.tasks.tau2 import tau2_score
from orchestra_gym.types import Preference

__all__ = ["summarize", "wald_interval", "mean_tool_calls", "by_label", "qa_metrics", "pass_hat_k", "pass_hat_ks",
           "rollout_summary", "preference_score", "group_preference_score", "asked_moves", "moves_as_asked",
           "cost_accuracy_hull", "hull_accuracy", "hull_gap", "aiq", "tau2_task_weighted", "TAU2_PREFIX"]

def _info(x: Outcome) -> Mapping[str, Any]:
    return x.info if isinstance(x, EpisodeResult) else x


def wald_interval(p: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wald interval ``p +- z sqrt(p (1 - p) / n)`` for a proportion, clipped to [0, 1] (z = 1.96:
    95%); (nan, nan) for n == 0, zero width for p in {0, 1}."""
    if n <= 0:
        return (math.nan, math.nan)
    half = z * math.sqrt(max(p * (1 - p), 0.0) / n)
    return (max(0.0, p - half), min(1.0, p + half))


def mean_tool_calls(episodes: Sequence[Outcome]) -> dict[str, float]:
    """The tool mix: calls per episode by tool (and by model: ``expert-2``, ``answer-1``...), from
    each final ``info["tool_calls"]``, keys sorted; {} for no episodes."""
    n = len(episodes)
    calls: dict[str, float] = {}
    for e in episodes:
        for k, v in _info(e).get("tool_calls", {}).items():
            calls[k] = calls.get(k, 0.0) + v
    return {k: v / n for k, v in sorted(calls.items())}


def by_label(episodes: Sequence[Outcome], key: str = "task_difficulty") -> dict[str, dict[str, Any]]:
    """Success and tool mix per task label: episodes grouped by their final ``info[key]`` (the env's
    ``task_difficulty`` or ``task_category``; episodes without it under ``"unknown"``), labels sorted.

    Returns: label -> {"episodes": int, "success_rate": float, "tool_mix": `mean_tool_calls` of the group}.
    """
    groups: dict[str, list[Outcome]] = {}
    for e in episodes:
        groups.setdefault(str(_info(e).get(key, "unknown")), []).append(e)
    return {label: {"episodes": len(g), "success_rate": sum(bool(_info(e).get("solved", False)) for e in g) / len(g),
                    "tool_mix": mean_tool_calls(g)} for label, g in sorted(groups.items())}


def summarize(episodes: Sequence[Outcome]) -> dict[str, Any]:
    """Aggregate episodes (`EpisodeResult`s or final ``info`` dicts).

    Infra failures (`is_infra`) are left out of every figure and counted in ``infra_failures``.

    Returns:
        ``episodes`` (count of graded episodes); ``infra_failures``; ``success_rate`` (solved fraction, nan for none) and
        ``success_rate_ci95`` (`wald_interval`); ``mean_outcome``; ``mean_cost_usd`` (USD);
        ``mean_latency_s`` (s); ``mean_orchestrator_cost_usd`` / ``mean_orchestrator_latency_s`` (the
        orchestrator's own part of both, `LLMAgent`); ``mean_turns``; ``tool_calls`` (`mean_tool_calls`);
        ``parse_errors`` (mean per episode); ``end_reasons`` (reason -> count);
        ``not_fully_judged`` (tau2: ``episodes`` whose reward basis had a component without an
        offline judge, ``components`` -> count, ``judgeability_reported``) and
        ``success_rate_judged`` (success on the fully judged episodes).
    """
    infos = [_info(e) for e in episodes if not is_infra(e)]
    n = len(infos)
    sr = sum(i["solved"] for i in infos) / n if n else math.nan
    reasons: dict[str, int] = {}
    for i in infos:
        reasons[i["end_reason"]] = reasons.get(i["end_reason"], 0) + 1
    lo, hi = wald_interval(sr, n) if n else (math.nan, math.nan)
    # tau2: components of the reward basis that could not be judged offline (no NL judge)
    not_judged: dict[str, int] = {}
    for i in infos:
        for comp in (i.get("reward_breakdown") or {}).get("not_evaluated", []) or []:
            not_judged[comp] = not_judged.get(comp, 0) + 1
    judged = [i for i in infos if not (i.get("reward_breakdown") or {}).get("not_evaluated")]
    return {
        "not_fully_judged": {
            "episodes": n - len(judged),
            "components": not_judged,
            "judgeability_reported": any("not_evaluated" in (i.get("reward_breakdown") or {}) for i in infos),
        },
        "success_rate_judged": sum(i["solved"] for i in judged) / len(judged) if judged else math.nan,
        "episodes": n,
        "infra_failures": len(episodes) - n,
        "success_rate": sr,
        "success_rate_ci95": [lo, hi],
        "mean_outcome": sum(float(i["outcome"]) for i in infos) / n if n else math.nan,
        "mean_cost_usd": sum(float(i["episode_cost_usd"]) for i in infos) / n if n else math.nan,
        "mean_latency_s": sum(float(i["episode_latency_s"]) for i in infos) / n if n else math.nan,
        "mean_orchestrator_cost_usd": sum(float(i.get("episode_orchestrator_cost_usd", 0.0)) for i in infos) / n if n else math.nan,
        "mean_orchestrator_latency_s": sum(float(i.get("episode_orchestrator_latency_s", 0.0)) for i in infos) / n if n else math.nan,
        "mean_turns": sum(float(i["turn"]) for i in infos) / n if n else math.nan,
        "tool_calls": mean_tool_calls(infos),
        "parse_errors": sum(float(i["parse_errors"]) for i in infos) / n if n else math.nan,
        "end_reasons": reasons,
    }


def qa_metrics(episodes: Sequence[Outcome], z: float = 1.96) -> dict[str, Any]:
    """ToolOrchestra Table 1 / Table 15 columns (QA envs) from `EpisodeResult`s or final ``info`` dicts.

    Args:
        episodes: each with ``solved`` (bool), ``episode_cost_usd`` (USD), ``episode_latency_s``
            (s) and ``tool_calls`` (dict name -> count); infra failures (`is_infra`) are left out.
        z: normal quantile (1.96 for 95%).

    Returns:
        ``n``; ``accuracy`` in [0, 1] (nan when n == 0); ``accuracy_ci95`` = `wald_interval`
        (any n: (nan, nan) for n = 0, a zero-width interval for p in {0, 1}, unlike HLE's script
        which needs >= 100 items); ``cost_cents`` (mean US cents per task); ``latency_min`` (mean
        minutes per task); ``model_calls`` (total calls per anonymised model of
        `orchestra_gym.envs.qa.QA_MODELS`, Table 15) and ``model_call_share`` (fraction of all
        model calls).
    """
    infos = [_info(e) for e in episodes if not is_infra(e)]
    n = len(infos)
    acc = sum(bool(i["solved"]) for i in infos) / n if n else math.nan
    lo, hi = wald_interval(acc, n, z) if n else (math.nan, math.nan)
    calls: dict[str, float] = {}
    for i in infos:
        for k, v in i.get("tool_calls", {}).items():
            if k in QA_MODELS:
                calls[k] = calls.get(k, 0.0) + float(v)
    total = sum(calls.values())
    return {
        "n": n,
        "accuracy": acc,
        "accuracy_ci95": [lo, hi],
        "cost_cents": 100.0 * sum(float(i["episode_cost_usd"]) for i in infos) / n if n else math.nan,
        "latency_min": sum(float(i["episode_latency_s"]) for i in infos) / 60.0 / n if n else math.nan,
        "model_calls": dict(sorted(calls.items())),
        "model_call_share": {k: v / total for k, v in sorted(calls.items())} if total else {},
    }


def pass_hat_k(episodes: Sequence[EpisodeResult], k: int) -> float:
    """pass^k as tau2-bench defines it: per task, the unbiased estimate of the chance that k trials
    drawn from its n all succeed, ``C(c, k) / C(n, k)`` with c solved among n, averaged over the tasks.

    Tasks are told apart by ``task_id``; infra failures (`is_infra`) are not trials; tasks with
    fewer than k trials are left out. Exact integer binomials (`math.comb`), one float division.

    Returns:
        The mean over tasks, a float in [0, 1]; nan when no task has k trials.

    Raises:
        ValueError: k < 1.
    """
    if k < 1:
        raise ValueError(f"pass^k needs k >= 1, got {k}")
    counts: dict[Any, list[int]] = {}
    for e in episodes:
        if not is_infra(e):
            c = counts.setdefault(_task_key(e.task_id), [0, 0])
            c[0] += 1
            c[1] += bool(e.solved)
    per_task = [math.comb(c, k) / math.comb(n, k) for n, c in counts.values() if n >= k]
    return sum(per_task) / len(per_task) if per_task else math.nan


def pass_hat_ks(episodes: Sequence[EpisodeResult], max_k: int) -> dict[int, float]:
    """`pass_hat_k` for k = 1..max_k (pass^1 is the mean per-task success rate)."""
    return {k: pass_hat_k(episodes, k) for k in range(1, max_k + 1)}


def _task_key(task_id: Any) -> Any:
    return json.dumps(task_id, sort_keys=True, default=str) if isinstance(task_id, (list, dict)) else task_id


def rollout_summary(
    infos: Sequence[Mapping[str, Any]],
    *,
    turns: Sequence[int] | None = None,
    invalid_turns: Sequence[int] | None = None,
    cut: Sequence[bool] | None = None,
) -> dict[str, Any]:
    """The trainer's summary of a batch of rollouts, from their last ``info`` dicts.

    Args:
        infos: each rollout's last ``info`` (finished or cut: missing keys count as 0 / unsolved).
        turns: assistant turns per rollout (default ``info["turn"]``).
        invalid_turns: turns whose output was not a valid action (default ``info["parse_errors"]``).
        cut: whether the trainer cut the rollout (token limit; default none).

    Returns:
        ``episodes``; ``success_rate`` (0.0 for no rollouts); ``cost_per_solved_usd`` (total USD /
        solved, inf when none solved); ``mean_cost_usd``; ``mean_latency_s`` (s);
        ``valid_format_rate`` (1 - invalid turns / turns); ``turns_per_episode``; ``cut`` (count);
        ``tool_mix`` (`mean_tool_calls`).

    Raises:
        ValueError: `turns`, `invalid_turns` or `cut` not of the length of `infos`.
    """
    k = len(infos)
    turns = [int(i.get("turn", 0)) for i in infos] if turns is None else list(turns)
    invalid_turns = [int(i.get("parse_errors", 0)) for i in infos] if invalid_turns is None else list(invalid_turns)
    cut = [False] * k if cut is None else list(cut)
    for name, seq in (("turns", turns), ("invalid_turns", invalid_turns), ("cut", cut)):
        if len(seq) != k:
            raise ValueError(f"{name} has {len(seq)} entries for {k} rollouts; give one per rollout")
    n = max(k, 1)
    solved = sum(bool(i.get("solved", False)) for i in infos)
    cost = float(sum(float(i.get("episode_cost_usd", 0.0)) for i in infos))
    total_turns = sum(turns)
    return {
        "episodes": k,
        "success_rate": solved / n,
        "cost_per_solved_usd": cost / solved if solved else float("inf"),
        "mean_cost_usd": cost / n,
        "mean_latency_s": float(sum(float(i.get("episode_latency_s", 0.0)) for i in infos)) / n,
        "valid_format_rate": 1.0 - sum(invalid_turns) / max(total_turns, 1),
        "turns_per_episode": total_turns / n,
        "cut": int(sum(bool(c) for c in cut)),
        "tool_mix": mean_tool_calls(infos),
    }


def preference_score(
    results: Sequence[EpisodeResult],
    baseline: Sequence[EpisodeResult],
    preference: "Mapping[str, Any] | None" = None,
) -> float:
    """The App. L preference metric of a run against a baseline run (higher is better).

    Episodes are paired by (task id, trial); every episode of `results` needs its baseline
    episode. Each reward vector is normalised by its baseline's and weighted by the preference
    (`orchestra_gym.rewards.preference_metric`): `preference` (a dict, aligned by
    `RewardLayout.preference_weights`) for all, or when None the weights each episode's env reported
    (``info["preference_weights"]``, `orchestra_gym.rewards.episode_preference_weights`).

    Raises:
        ValueError: no episodes, a missing or duplicate pair, or different reward layouts.
    """
    if not results:
        raise ValueError("preference_score needs at least one episode")
    base: dict[tuple[Any, int], EpisodeResult] = {}
    for b in baseline:
        key = (b.task_id, b.trial)
        if key in base:
            raise ValueError(f"baseline has two episodes of task {b.task_id!r}, trial {b.trial}; pair each episode once")
        base[key] = b
    layout = RewardLayout.from_names(results[0].info["reward_vector_names"])
    vectors, baselines, weights = [], [], []
    for r in results:
        b = base.get((r.task_id, r.trial))
        if b is None:
            raise ValueError(f"the baseline has no episode of task {r.task_id!r}, trial {r.trial}; run it on the same tasks")
        for e in (r, b):
            if list(e.info["reward_vector_names"]) != layout.names:
                raise ValueError(
                    f"task {e.task_id!r}: reward vector names {e.info['reward_vector_names']} differ from {layout.names}; "
                    "compare runs with the same tools"
                )
        vectors.append(np.asarray(r.info["reward_vector"], dtype=np.float64))
        baselines.append(np.asarray(b.info["reward_vector"], dtype=np.float64))
        weights.append(episode_preference_weights(r.info, preference))
    return preference_metric(np.stack(vectors), np.stack(baselines), np.stack(weights))


def group_preference_score(
    results: Sequence[EpisodeResult],
    references: "Sequence[Sequence[EpisodeResult]]",
    preference: "Mapping[str, Any] | None" = None,
) -> float:
    """The summed preference reward of a run in the group form (`orchestra_gym.rewards.reference_group_scores`):
    each episode's reward (ToolOrchestra Sec. 3.2) in the group made of it and the reference runs'
    episodes of the same (task id, trial), e.g. always expert-1, expert-2 and expert-3. Higher is better;
    a reference run scored against the references gets its own reward in their group.

    `preference`: a dict for all episodes, or None for each episode's own ``info["preference"]``.

    Raises:
        ValueError: no episodes or no reference runs, a reference without the episode's pair, or
            different reward layouts.
    """
    if not results or not references:
        raise ValueError("group_preference_score needs at least one episode and one reference run")
    layout = RewardLayout.from_names(results[0].info["reward_vector_names"])
    index = []
    for j, ref in enumerate(references):
        table: dict[tuple[Any, int], EpisodeResult] = {}
        for b in ref:
            if list(b.info["reward_vector_names"]) != layout.names:
                raise ValueError(f"reference run {j}: reward vector names {b.info['reward_vector_names']} differ "
                                 f"from {layout.names}; compare runs with the same tools")
            table[(b.task_id, b.trial)] = b
        index.append(table)
    vectors, solved, rvec, rsolved, weights = [], [], [], [], []
    for r in results:
        pairs = [t.get((r.task_id, r.trial)) for t in index]
        if any(b is None for b in pairs):
            raise ValueError(f"a reference run has no episode of task {r.task_id!r}, trial {r.trial}; run it on "
                             "the same tasks")
        vectors.append(np.asarray(r.info["reward_vector"], np.float64))
        solved.append(bool(r.solved))
        rvec.append([np.asarray(b.info["reward_vector"], np.float64) for b in pairs])
        rsolved.append([bool(b.solved) for b in pairs])
        weights.append(episode_preference_weights(r.info, preference))
    scores = reference_group_scores(np.stack(vectors), np.array(solved, bool), np.stack(rvec).transpose(1, 0, 2),
                                    np.array(rsolved, bool).T, np.stack(weights))
    return float(math.fsum(scores.tolist()))


def asked_moves(preference: "Mapping[str, Any] | Preference", default: "Mapping[str, Any] | Preference") -> dict[str, str]:
    """How a run under `preference` should differ from the same policy under `default`, as the user asks
    (the adherence check of ToolOrchestra Sec. 6.4 / Table 3, per metric): the weights are read relative
    to the outcome weight; a larger cost weight asks for a lower cost (``"cost_cents": "down"``), a larger
    latency weight for a lower latency (``"latency_s": "down"``), and smaller cost and latency weights
    with neither larger (accuracy bought with cost or time) for a higher success (``"success": "up"``).
    Tool weights are not read. Returns {} when the two weigh cost and latency alike.

    Raises:
        ValueError: a preference with outcome weight <= 0 (the relative weights are undefined), or as
            `Preference.from_dict`.
    """
    p, d = Preference.from_dict(preference), Preference.from_dict(default)
    for name, x in (("preference", p), ("default", d)):
        if x.outcome <= 0:
            raise ValueError(f"{name}: the outcome weight must be > 0 to read cost and latency against it, "
                             f"got {x.outcome:g}")
    pc, pl, dc, dl = p.cost / p.outcome, p.latency / p.outcome, d.cost / d.outcome, d.latency / d.outcome
    moves: dict[str, str] = {}
    if pc > dc:
        moves["cost_cents"] = "down"
    if pl > dl:
        moves["latency_s"] = "down"
    if not moves and (pc < dc or pl < dl):
        moves["success"] = "up"
    return moves


def moves_as_asked(row: Mapping[str, float], default_row: Mapping[str, float], moves: Mapping[str, str]) -> bool:
    """Whether `row` (keys as in `moves`, e.g. success, cost_cents, latency_s) moved from `default_row` the
    way `asked_moves` says: strictly down / up on every listed metric (True for no moves)."""
    return all((row[k] < default_row[k]) if way == "down" else (row[k] > default_row[k]) for k, way in moves.items())


def cost_accuracy_hull(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The non-decreasing concave hull of (cost, accuracy) points, as its vertices sorted by cost.

    RouterBench (Hu et al. 2024, Sec. 3.2) scores routers on the accuracy-cost plane by the upper
    convex hull of their operating points, made non-decreasing: paying more never buys less, since
    one can always mix two operating points (pick one per task at random). The vertices are input
    points; between them the hull is linear, right of the last vertex it is flat, left of the
    cheapest vertex there is no operating point (`hull_accuracy` and `aiq` say what they take there).

    Args:
        points: (cost, accuracy) pairs; cost in any one unit >= 0 (USD or cents per task),
            accuracy in [0, 1]. At least one point.

    Returns:
        The hull's vertices [(cost, accuracy), ...], costs and accuracies strictly increasing.

    Raises:
        ValueError: no points, or a non-finite value.
    """
    pts = sorted((float(c), float(a)) for c, a in points)
    if not pts:
        raise ValueError("points is empty: the hull needs at least one (cost, accuracy) point")
    if not all(math.isfinite(c) and math.isfinite(a) for c, a in pts):
        raise ValueError(f"points must be finite, got {pts}")
    front: list[tuple[float, float]] = []  # Pareto front: each point more accurate than every cheaper one
    for c, a in pts:
        if front and c == front[-1][0]:
            front[-1] = (c, max(a, front[-1][1]))
        elif not front or a > front[-1][1]:
            front.append((c, a))
    hull: list[tuple[float, float]] = []  # upper hull of the front (monotone chain)
    for c, a in front:
        while len(hull) >= 2:
            (c1, a1), (c2, a2) = hull[-2], hull[-1]
            if (a2 - a1) * (c - c1) <= (a - a1) * (c2 - c1):  # hull[-1] on or under the chord hull[-2] -> (c, a)
                hull.pop()
            else:
                break
        hull.append((c, a))
    return hull


def hull_accuracy(hull: Sequence[tuple[float, float]], cost: float) -> float:
    """Accuracy of the hull (vertices from `cost_accuracy_hull`) at `cost`: linear between
    vertices, flat right of the last one, and the cheapest vertex's accuracy left of the first
    (the conservative choice for a row compared with the hull: `hull_gap`)."""
    if cost <= hull[0][0]:
        return float(hull[0][1])
    for (c1, a1), (c2, a2) in zip(hull, hull[1:]):
        if cost <= c2:
            return float(a1 + (a2 - a1) * (cost - c1) / (c2 - c1))
    return float(hull[-1][1])


def hull_gap(accuracy: float, cost: float, baseline_points: Sequence[tuple[float, float]]) -> float:
    """Accuracy minus the baselines' hull accuracy at the same cost (> 0: above their hull)."""
    return float(accuracy) - hull_accuracy(cost_accuracy_hull(baseline_points), float(cost))


def aiq(points: Sequence[tuple[float, float]], cost_range: tuple[float, float]) -> float:
    """AIQ (RouterBench, Hu et al. 2024): the area under the non-decreasing convex hull of the
    (cost, accuracy) points over ``[c_min, c_max]``, divided by ``c_max - c_min``.

    The hull (`cost_accuracy_hull`) counts 0 left of its cheapest vertex (no operating point that
    cheap) and is flat right of its last; it is linear between vertices, so the trapezoid rule over
    the vertices is exact. One point gives its accuracy times the share of the range at or above
    its cost.

    Returns:
        A float in [0, max accuracy].

    Raises:
        ValueError: an empty or reversed range, or bad points.
    """
    lo, hi = float(cost_range[0]), float(cost_range[1])
    if not hi > lo:
        raise ValueError(f"cost_range must have c_max > c_min, got {cost_range}")
    hull = cost_accuracy_hull(points)
    start = hull[0][0]
    xs = sorted({lo, hi, *(c for c, _ in hull if lo < c < hi)})
    area = 0.0
    for x1, x2 in zip(xs, xs[1:]):
        if x1 >= start:  # a segment left of the first vertex ends at it (it is one of xs): 0 there
            area += (hull_accuracy(hull, x1) + hull_accuracy(hull, x2)) / 2.0 * (x2 - x1)
    return area / (hi - lo)


TAU2_PREFIX = "ToolOrchestra-Tau2-"


def tau2_task_weighted(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """tau2-bench's figure over several domains (ToolOrchestra Table 1 reports one tau2 number):
    accuracy, cost (cents) and latency (min) per task averaged with each domain's task count
    ``n`` as its weight (the accuracy by `orchestra_gym.tasks.tau2.tau2_score`, the one owner of the
    paper's task-weighted tau2 score); the interval is the Wald interval of the pooled accuracy over
    all tasks.

    Raises:
        ValueError: no rows, or no graded task.
    """
    total = sum(int(r["n"]) for r in rows)
    if not rows or total == 0:
        raise ValueError("tau2_task_weighted needs rows with graded tasks (n > 0)")

    def mean(key: str) -> float:
        return sum(float(r[key]) * int(r["n"]) for r in rows if int(r["n"])) / total

    graded = [r for r in rows if int(r["n"])]
    names = [str(r["env"]).removeprefix(TAU2_PREFIX) for r in graded]
    acc = tau2_score({n: (float(r["accuracy"]), int(r["n"])) for n, r in zip(names, graded)}, domains=names).score
    return {"env": "tau2 (" + ", ".join(str(r["env"]).removeprefix(TAU2_PREFIX) for r in rows) + ")",
            "agent": rows[0]["agent"], "n": total, "accuracy": acc, "accuracy_ci95": list(wald_interval(acc, total)),
            "cost_cents": mean("cost_cents"), "latency_min": mean("latency_min"),
            "infra_failures": sum(int(r["infra_failures"]) for r in rows)}
