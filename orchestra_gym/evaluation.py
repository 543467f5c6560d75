"""The one episode runner and the one metrics module of orchestra_gym.

Runner: `run_episodes` plays an agent on an env over a list of tasks and trials and returns one
`EpisodeResult` per episode (task id, trial, seed, the final ``info``, optionally the transcript).
It is synchronous; an episode depends only on its own seed, task and reset options, so the plan
(`EpisodeResult.trial`, ``seed + index``) stays the same when episodes run concurrently or are
resumed. `evaluate` is the runner plus the metrics for one registered env id and one baseline agent
(what ``orchestra eval`` prints).

Metrics, all computed from episodes' final ``info`` dicts (or `EpisodeResult`s, which hold them):

* `summarize`: success rate with its Wald 95% interval (`wald_interval`), mean outcome, cost (USD),
  latency (s), turns, tool mix (calls per episode by tool), parse errors, end reasons, and tau2's
  components that could not be judged offline.
* `qa_metrics`: the columns of ToolOrchestra's Table 1 (accuracy % with its interval, cost in
  cents, latency in minutes per task) and Table 15 (calls per anonymised model).
* `rollout_summary`: the trainer's per-step summary (success, cost per solved task, valid-format
  rate, tool mix...).
* `preference_score`: the App. L preference metric of a run against a baseline run
  (`orchestra_gym.rewards.preference_metric`).

`format_table`, `format_qa_table` and `format_mix` render them as text.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

import gymnasium as gym
import numpy as np
from tqdm import tqdm

from orchestra_gym.agents import Agent, make_agent
from orchestra_gym.envs.qa import QA_MODELS, QAEnv
from orchestra_gym.rewards import RewardLayout, preference_metric

__all__ = [
    "EpisodeResult",
    "run_episodes",
    "evaluate",
    "summarize",
    "qa_metrics",
    "rollout_summary",
    "preference_score",
    "wald_interval",
    "mean_tool_calls",
    "format_table",
    "format_qa_table",
    "format_mix",
    "jsonable",
    "MODEL_TOOLS",
]

# Tools whose calls are also counted under the model they used (see OrchestraEnv's info).
MODEL_TOOLS = frozenset({"call_expert", "search", "enhance_reasoning", "answer"})


# ------------------------------------------------------------------------------------ episodes
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
    """

    task_id: Any
    trial: int
    seed: int
    info: dict[str, Any]
    steps: int = 0
    messages: list[dict[str, Any]] | None = None

    @property
    def end_reason(self) -> str:
        """Why the episode ended (``answer``, ``user_stop``, ``turn_limit``, ``cost_budget``...)."""
        return str(self.info.get("end_reason"))

    @property
    def solved(self) -> bool:
        """Whether the outcome counts as solved (``info["solved"]``)."""
        return bool(self.info.get("solved", False))

    def record(self) -> dict[str, Any]:
        """A flat, JSON-able summary of the episode (one ``orchestra eval --trajectories`` line
        without its ``messages``): ``task_id``, ``seed``, ``outcome``, ``solved``, ``cost_usd``
        (USD), ``latency_s`` (s), ``turns``, ``tool_calls``, ``parse_errors``, ``end_reason``,
        ``reward_vector``, ``reward_vector_names``, ``reward_breakdown``, ``trial``."""
        info = self.info
        return {
            "task_id": self.task_id,
            "seed": self.seed,
            "outcome": float(info["outcome"]),
            "solved": bool(info["solved"]),
            "cost_usd": float(info["episode_cost_usd"]),
            "latency_s": float(info["episode_latency_s"]),
            "turns": float(info["turn"]),
            "tool_calls": dict(info["tool_calls"]),
            "parse_errors": float(info["parse_errors"]),
            "end_reason": info["end_reason"],
            "reward_vector": jsonable(info["reward_vector"]),
            "reward_vector_names": list(info["reward_vector_names"]),
            "reward_breakdown": jsonable(info["reward_breakdown"]),
            "trial": self.trial,
        }


#: What the metrics read: an `EpisodeResult` or an episode's final ``info``.
Outcome = Union[EpisodeResult, Mapping[str, Any]]


def jsonable(x: Any) -> Any:
    """`x` with NumPy arrays and scalars made plain Python (lists, floats, ints, bools), dict keys str."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer, np.bool_)):
        return x.item()
    return x


def _env_name(env: gym.Env) -> str:
    return env.spec.id if env.spec is not None else type(env.unwrapped).__name__


def run_episodes(
    env_factory: Callable[[], gym.Env],
    agent_factory: Callable[[int], Agent],
    episodes: int = 0,
    *,
    seed: int = 0,
    task_ids: Sequence[Any] | None = None,
    all_tasks: bool = False,
    trials: int = 1,
    options: Mapping[str, Any] | None = None,
    keep_messages: bool = False,
    trajectories_path: str | os.PathLike[str] | None = None,
    progress: bool = False,
    desc: str | None = None,
) -> list[EpisodeResult]:
    """Play agents on an env: the one episode runner.

    The tasks: `task_ids` when given; else, with `all_tasks`, the env's fixed task list
    (``env.unwrapped.task_ids``: tau2, HLE, FRAMES); `episodes` caps either (0 = all). Otherwise
    `episodes` episodes whose tasks the env draws from their seeds. Each task is played `trials`
    times, trial by trial (every task once, then every task again...); episode number i of that
    order is reset with seed ``seed + i`` and ``options`` plus ``{"task_id": ...}`` (with one trial
    and drawn tasks: episode i has seed ``seed + i``, as ``orchestra eval`` always did). Trials
    of drawn tasks are further draws.

    Args:
        env_factory: builds the env (called once now; once per worker when episodes run concurrently).
        agent_factory: ``seed -> agent`` for each episode (an object with ``reset(env, obs, info)``
            and ``act(obs, info)``, see `orchestra_gym.agents.Agent`); return the same object to
            reuse one agent.
        episodes: the number of drawn-task episodes, or the cap on a task list (0 = all).
        seed: the first episode's seed.
        task_ids: the tasks to play (``options["task_id"]`` of each episode).
        all_tasks: play the env's fixed task list.
        trials: plays of each task (>= 1).
        options: reset options of every episode (``preference``, ``tools``, ...).
        keep_messages: keep each transcript in `EpisodeResult.messages`.
        trajectories_path: write one JSON line per episode as it ends (`EpisodeResult.record`
            plus ``messages``).
        progress: show a progress bar on stderr; desc: its label.

    Returns:
        One `EpisodeResult` per episode, in play order. The env is closed.

    Raises:
        ValueError: `trials` < 1, `episodes` < 0, or `all_tasks` on an env without a task list.
    """
    env = env_factory()
    traj_file = None
    try:
        if trials < 1:
            raise ValueError(f"trials must be >= 1, got {trials}")
        if episodes < 0:
            raise ValueError(f"episodes must be >= 0 (0 = every task of a task list), got {episodes}")
        if task_ids is None and all_tasks:
            task_ids = getattr(env.unwrapped, "task_ids", None)
            if not task_ids:
                raise ValueError(f"{_env_name(env)} has no fixed task list; --all-tasks works for tau2, HLE and FRAMES envs")
        tasks: list[Any] = list(task_ids)[: episodes or None] if task_ids is not None else [None] * episodes
        plan = [(trial, tid) for trial in range(trials) for tid in tasks]
        traj_file = open(trajectories_path, "w", encoding="utf-8") if trajectories_path else None
        results = []
        for i in tqdm(range(len(plan)), desc=desc or _env_name(env), disable=not progress, file=sys.stderr):
            trial, tid = plan[i]
            opts = dict(options or {}, **({"task_id": tid} if tid is not None else {}))
            result = _play(env, agent_factory(seed + i), seed + i, trial, opts or None, keep_messages or bool(traj_file))
            if traj_file:
                line = {**result.record(), "messages": result.messages}
                traj_file.write(json.dumps(line, ensure_ascii=False) + "\n")
                if not keep_messages:
                    result.messages = None
            results.append(result)
    finally:
        if traj_file:
            traj_file.close()
        env.close()
    return results


def _play(env: gym.Env, agent: Agent, seed: int, trial: int, options: dict[str, Any] | None, keep: bool) -> EpisodeResult:
    """One episode: reset, then the agent's actions until terminated or truncated."""
    obs, info = env.reset(seed=seed, options=options)
    agent.reset(env, obs, info)
    steps, done = 0, False
    while not done:
        obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
        steps += 1
        done = terminated or truncated
    u = env.unwrapped
    messages = [m.to_dict() for m in u.messages] if keep else None
    return EpisodeResult(getattr(u.task, "id", None), trial, seed, info, steps, messages)


def evaluate(
    env_id: str,
    agent: str,
    episodes: int,
    *,
    seed: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    all_tasks: bool = False,
    trials: int = 1,
    trajectories_path: str | os.PathLike[str] | None = None,
    progress: bool = False,
) -> tuple[list[EpisodeResult], dict[str, Any]]:
    """A baseline agent on a registered env: `run_episodes` then the metrics (``orchestra eval``).

    Args:
        env_id: a registered id (``orchestra_gym.ENV_IDS``); env_kwargs: keyword arguments of ``gym.make``.
        agent: a baseline name (`orchestra_gym.agents.make_agent`: random, oracle, cascade,
            expert-<k>); episode i's agent is seeded with that episode's seed.
        episodes, seed, all_tasks, trials, trajectories_path, progress: as `run_episodes`.

    Returns:
        ``(results, summary)``: `summarize` plus ``env``, ``agent``, ``seed``, and for QA envs
        (HLE, FRAMES) ``qa`` (`qa_metrics`).

    Raises:
        gymnasium.error.Error: unknown env id; ValueError: unknown agent or a bad argument.
    """
    env = gym.make(env_id, **dict(env_kwargs or {}))
    is_qa = isinstance(env.unwrapped, QAEnv)
    results = run_episodes(
        lambda: env, lambda s: make_agent(agent, seed=s), episodes, seed=seed, all_tasks=all_tasks, trials=trials,
        trajectories_path=trajectories_path, progress=progress, desc=f"{agent} on {env_id}",
    )
    summary = summarize(results)
    summary.update(env=env_id, agent=agent, seed=seed)
    if is_qa:
        summary["qa"] = qa_metrics(results)
    return results, summary


# ------------------------------------------------------------------------------------ metrics
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


def summarize(episodes: Sequence[Outcome]) -> dict[str, Any]:
    """Aggregate episodes (`EpisodeResult`s or final ``info`` dicts).

    Returns:
        ``episodes`` (count); ``success_rate`` (solved fraction, nan for none) and
        ``success_rate_ci95`` (`wald_interval`); ``mean_outcome``; ``mean_cost_usd`` (USD);
        ``mean_latency_s`` (s); ``mean_turns``; ``tool_calls`` (`mean_tool_calls`);
        ``parse_errors`` (mean per episode); ``end_reasons`` (reason -> count);
        ``not_fully_judged`` (tau2: ``episodes`` whose reward basis had a component without an
        offline judge, ``components`` -> count, ``judgeability_reported``) and
        ``success_rate_judged`` (success on the fully judged episodes).
    """
    infos = [_info(e) for e in episodes]
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
        "success_rate": sr,
        "success_rate_ci95": [lo, hi],
        "mean_outcome": sum(float(i["outcome"]) for i in infos) / n if n else math.nan,
        "mean_cost_usd": sum(float(i["episode_cost_usd"]) for i in infos) / n if n else math.nan,
        "mean_latency_s": sum(float(i["episode_latency_s"]) for i in infos) / n if n else math.nan,
        "mean_turns": sum(float(i["turn"]) for i in infos) / n if n else math.nan,
        "tool_calls": mean_tool_calls(infos),
        "parse_errors": sum(float(i["parse_errors"]) for i in infos) / n if n else math.nan,
        "end_reasons": reasons,
    }


def qa_metrics(episodes: Sequence[Outcome], z: float = 1.96) -> dict[str, Any]:
    """ToolOrchestra Table 1 / Table 15 columns (QA envs) from `EpisodeResult`s or final ``info`` dicts.

    Args:
        episodes: each with ``solved`` (bool), ``episode_cost_usd`` (USD), ``episode_latency_s``
            (s) and ``tool_calls`` (dict name -> count).
        z: normal quantile (1.96 for 95%).

    Returns:
        ``n``; ``accuracy`` in [0, 1] (nan when n == 0); ``accuracy_ci95`` = `wald_interval`
        (any n: (nan, nan) for n = 0, a zero-width interval for p in {0, 1}, unlike HLE's script
        which needs >= 100 items); ``cost_cents`` (mean US cents per task); ``latency_min`` (mean
        minutes per task); ``model_calls`` (total calls per anonymised model of
        `orchestra_gym.envs.qa.QA_MODELS`, Table 15) and ``model_call_share`` (fraction of all
        model calls).
    """
    infos = [_info(e) for e in episodes]
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
    `RewardLayout.preference_weights`) for all, or each episode's own ``info["preference"]``
    when None.

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
        weights.append(layout.preference_weights(r.info.get("preference") if preference is None else preference))
    return preference_metric(np.stack(vectors), np.stack(baselines), np.stack(weights))


# ------------------------------------------------------------------------------------ text
def format_table(summary: dict[str, Any], env_id: str, agent: str) -> str:
    """A plain-text table of a `summarize` result (one row; the tool-call mix and end reasons below it)."""
    head = f"{'env':<30} {'agent':<10} {'episodes':>8} {'success':>8} {'95% CI':>15} {'cost USD':>10} {'latency s':>10}"
    lo, hi = summary["success_rate_ci95"]
    row = (
        f"{env_id:<30} {agent:<10} {summary['episodes']:>8d} {summary['success_rate']:>8.3f} "
        f"{f'[{lo:.2f}, {hi:.2f}]':>15} {summary['mean_cost_usd']:>10.5f} {summary['mean_latency_s']:>10.2f}"
    )
    text = f"{head}\n{row}\ntool calls per episode: {format_mix(summary['tool_calls'])}\nend reasons: {summary['end_reasons']}"
    nj = summary.get("not_fully_judged", {})
    if nj.get("judgeability_reported") and not nj.get("episodes"):
        text += "\nnot judgeable offline: 0 episodes (every component of every reward basis was judged)"
    if nj.get("episodes"):
        text += (
            f"\nnot judgeable offline: {nj['episodes']} episodes (components without a judge: {nj['components']}; "
            f"NL assertions need an LLM judge); success on the fully judged ones: {summary['success_rate_judged']:.3f}"
        )
    return text


def format_mix(tool_calls: dict[str, float], top: int = 6) -> str:
    """The tool-call mix in one line: the `top` most called tools, the rest summed as ``other``.

    Every model id (``expert-1``, ``answer-2``, ...) is listed; the model tools themselves
    (``call_expert``, ``search``, ``enhance_reasoning``, ``answer``) are left out then, since each
    of their calls is already counted under its model."""
    if not tool_calls:
        return "none"
    model_ids = [k for k in tool_calls if re.fullmatch(r"[a-z\-]+-\d+", k)]
    if model_ids:  # a model tool's call is counted under the tool and its model: keep the models only
        tool_calls = {k: v for k, v in tool_calls.items() if k not in MODEL_TOOLS}
    total = sum(tool_calls.values()) or 1.0
    ranked = sorted(tool_calls.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = [kv for kv in ranked if kv[0] in model_ids]
    for kv in ranked:
        if len(shown) >= top:
            break
        if kv not in shown:
            shown.append(kv)
    rest = sum(v for k, v in tool_calls.items() if k not in dict(shown))
    parts = [f"{k} {v:.2f} ({100 * v / total:.0f}%)" for k, v in shown]
    if rest:
        parts.append(f"other {rest:.2f} ({100 * rest / total:.0f}%)")
    return ", ".join(parts)


def format_qa_table(metrics: dict[str, Any], env_id: str, agent: str) -> str:
    """The Table 1 columns of a `qa_metrics` result as text: accuracy (%) with its 95% interval,
    cost (cents), latency (min), then the calls per model."""
    lo, hi = metrics["accuracy_ci95"]
    acc = metrics["accuracy"]
    head = f"{'env':<26} {'agent':<12} {'n':>5} {'accuracy %':>10} {'95% CI':>16} {'cost ¢':>9} {'latency min':>11}"
    row = (f"{env_id:<26} {agent:<12} {metrics['n']:>5d} {100 * acc:>10.1f} {f'[{100 * lo:.1f}, {100 * hi:.1f}]':>16} "
           f"{metrics['cost_cents']:>9.3f} {metrics['latency_min']:>11.3f}")
    calls = ", ".join(f"{k} {int(v)} ({100 * metrics['model_call_share'][k]:.0f}%)" for k, v in metrics["model_calls"].items())
    return f"{head}\n{row}\nmodel calls: {calls or 'none'}"
