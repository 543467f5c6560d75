"""`orchestra eval` and `orchestra envs`: run baseline agents on any registered env (no JAX import).

``orchestra eval --env ID --agent NAME --episodes N --seed S [--output-json PATH]
[--trajectories PATH] [--env-kwargs JSON]`` prints a table (success rate, mean cost in USD, mean
latency in seconds, tool-call mix) with a progress bar, writes one JSON line per episode
(transcript and final ``info``) to ``--trajectories``, and the summary JSON (keys
``success_rate``, ``mean_cost_usd``, ``mean_latency_s``, ``tool_calls``, ...) to ``--output-json``.
Episode i is reset with seed ``S + i``, so a run is reproducible.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["main", "run_episodes", "summarize", "wald_interval", "format_table", "format_mix"]

# Tools whose calls are also counted under the model they used (see OrchestraEnv's info).
MODEL_TOOLS = frozenset({"call_expert", "search", "enhance_reasoning", "answer"})


def wald_interval(p: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wald 95% interval for a proportion, clipped to [0, 1]; (nan, nan) for n == 0."""
    if n <= 0:
        return (math.nan, math.nan)
    half = z * math.sqrt(max(p * (1 - p), 0.0) / n)
    return (max(0.0, p - half), min(1.0, p + half))


def _jsonable(x: Any) -> Any:
    import numpy as np

    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer, np.bool_)):
        return x.item()
    return x


def run_episodes(
    env_id: str,
    agent_name: str,
    episodes: int,
    seed: int = 0,
    env_kwargs: dict[str, Any] | None = None,
    progress: bool = True,
    trajectories_path: str | None = None,
    all_tasks: bool = False,
) -> list[dict[str, Any]]:
    """Run `episodes` episodes of `agent_name` on `env_id`; return one record per episode.

    With ``all_tasks`` the env's fixed task list (``env.unwrapped.task_ids``: tau2, HLE, FRAMES)
    is played once per task, in order, and `episodes` caps the count (0 = all).

    Each record: ``task_id``, ``seed``, ``outcome``, ``solved``, ``cost_usd``, ``latency_s``,
    ``turns``, ``tool_calls`` (dict), ``parse_errors``, ``end_reason``, ``reward_vector``,
    ``reward_breakdown``.

    Raises:
        gymnasium.error.Error: unknown env id; ValueError: unknown agent.
    """
    import gymnasium as gym
    from tqdm import tqdm

    import orchestra_gym  # noqa: F401  (registers the ids)
    from orchestra_gym.agents import make_agent

    env = gym.make(env_id, **(env_kwargs or {}))
    task_ids: list[Any] = [None] * episodes
    if all_tasks:
        ids = getattr(env.unwrapped, "task_ids", None)
        if not ids:
            raise ValueError(f"{env_id} has no fixed task list; --all-tasks works for tau2, HLE and FRAMES envs")
        task_ids = list(ids)[: episodes or None]
    records = []
    traj_file = open(trajectories_path, "w", encoding="utf-8") if trajectories_path else None
    try:
        for i in tqdm(range(len(task_ids)), desc=f"{agent_name} on {env_id}", disable=not progress, file=sys.stderr):
            agent = make_agent(agent_name, seed=seed + i)
            opts = {"task_id": task_ids[i]} if task_ids[i] is not None else None
            obs, info = env.reset(seed=seed + i, options=opts)
            agent.reset(env, obs, info)
            done = False
            while not done:
                obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
                done = terminated or truncated
            u = env.unwrapped
            rec = {
                "task_id": getattr(u.task, "id", None),
                "seed": seed + i,
                "outcome": float(info["outcome"]),
                "solved": bool(info["solved"]),
                "cost_usd": float(info["episode_cost_usd"]),
                "latency_s": float(info["episode_latency_s"]),
                "turns": float(info["turn"]),
                "tool_calls": dict(info["tool_calls"]),
                "parse_errors": float(info["parse_errors"]),
                "end_reason": info["end_reason"],
                "reward_vector": _jsonable(info["reward_vector"]),
                "reward_vector_names": list(info["reward_vector_names"]),
                "reward_breakdown": _jsonable(info["reward_breakdown"]),
            }
            records.append(rec)
            if traj_file:
                traj_file.write(json.dumps({**rec, "messages": [m.to_dict() for m in u.messages]}, ensure_ascii=False) + "\n")
    finally:
        if traj_file:
            traj_file.close()
        env.close()
    return records


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Aggregate episode records: success rate (+ Wald 95% interval), mean outcome, mean cost
    (USD), mean latency (s), mean tool calls per episode by tool, parse errors, end reasons."""
    n = len(records)
    sr = sum(r["solved"] for r in records) / n if n else math.nan
    calls: dict[str, float] = {}
    for r in records:
        for k, v in r["tool_calls"].items():
            calls[k] = calls.get(k, 0.0) + v
    reasons: dict[str, int] = {}
    for r in records:
        reasons[r["end_reason"]] = reasons.get(r["end_reason"], 0) + 1
    lo, hi = wald_interval(sr, n) if n else (math.nan, math.nan)
    # tau2: components of the reward basis that could not be judged offline (no NL judge)
    not_judged: dict[str, int] = {}
    for r in records:
        for comp in (r["reward_breakdown"] or {}).get("not_evaluated", []) or []:
            not_judged[comp] = not_judged.get(comp, 0) + 1
    judged = [r for r in records if not (r["reward_breakdown"] or {}).get("not_evaluated")]
    return {
        "not_fully_judged": {
            "episodes": n - len(judged),
            "components": not_judged,
            "judgeability_reported": any("not_evaluated" in (r["reward_breakdown"] or {}) for r in records),
        },
        "success_rate_judged": sum(r["solved"] for r in judged) / len(judged) if judged else math.nan,
        "episodes": n,
        "success_rate": sr,
        "success_rate_ci95": [lo, hi],
        "mean_outcome": sum(r["outcome"] for r in records) / n if n else math.nan,
        "mean_cost_usd": sum(r["cost_usd"] for r in records) / n if n else math.nan,
        "mean_latency_s": sum(r["latency_s"] for r in records) / n if n else math.nan,
        "mean_turns": sum(r["turns"] for r in records) / n if n else math.nan,
        "tool_calls": {k: v / n for k, v in sorted(calls.items())},
        "parse_errors": sum(r["parse_errors"] for r in records) / n if n else math.nan,
        "end_reasons": reasons,
    }


def format_table(summary: dict[str, Any], env_id: str, agent: str) -> str:
    """A plain-text table of a summary (one row; the tool-call mix below it)."""
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


def _eval(args: argparse.Namespace) -> int:
    kwargs = json.loads(args.env_kwargs) if args.env_kwargs else {}
    if args.data_path:
        kwargs[_data_keyword(args.env)] = args.data_path
    if args.models:
        kwargs["models"] = args.models
    records = run_episodes(
        args.env, args.agent, args.episodes, args.seed, kwargs, progress=not args.no_progress,
        trajectories_path=args.trajectories, all_tasks=args.all_tasks,
    )
    summary = summarize(records)
    summary.update(env=args.env, agent=args.agent, seed=args.seed)
    print(format_table(summary, args.env, args.agent))
    from orchestra_gym.registration import ENV_SPECS

    if ENV_SPECS.get(args.env, ("",))[0].startswith("orchestra_gym.envs.qa:"):
        # QA envs: the paper's Table 1 units (accuracy with a Wald 95% interval, cents, minutes, calls per model)
        from orchestra_gym.envs.qa import format_qa_table, qa_metrics

        summary["qa"] = qa_metrics(records)
        print(format_qa_table(summary["qa"], args.env, args.agent))
    if args.output_json:
        Path(args.output_json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output_json).write_text(json.dumps(_jsonable(summary), indent=2))
    return 0


def _data_keyword(env_id: str) -> str:
    """The keyword `--data-path` fills for `env_id`: ``data_path`` (HLE, FRAMES: a dataset file) or
    ``data_dir`` (tau2: the ``data/tau2`` folder).

    Raises:
        ConfigError: the env takes no data location (ToolScale generates its tasks).
    """
    from orchestra_gym.errors import ConfigError
    from orchestra_gym.registration import ENV_SPECS, EnvFactory, accepted_kwargs

    if env_id not in ENV_SPECS:
        return "data_path"  # gym.make reports the unknown id
    accepted = accepted_kwargs(EnvFactory(env_id, ENV_SPECS[env_id][0]).env_class()) or []
    for key in ("data_path", "data_dir"):
        if key in accepted:
            return key
    raise ConfigError(f"--data-path: {env_id} takes no data file or folder (its tasks are generated); "
                      f"drop --data-path")


def _envs(args: argparse.Namespace) -> int:
    from orchestra_gym.registration import ENV_SPECS

    for env_id, (entry, _) in ENV_SPECS.items():
        print(f"{env_id:<32} {entry}")
    return 0


def add_subcommands(sub: "argparse._SubParsersAction") -> None:
    """Add ``eval`` and ``envs`` to an argparse subparsers object (used by the `orchestra` script)."""
    p = sub.add_parser("eval", help="run a baseline agent on an environment and print a table")
    p.add_argument("--env", required=True, help="environment id, e.g. ToolOrchestra-ToolScale-v0")
    p.add_argument("--agent", required=True, help="random | oracle | cascade | expert-<k>")
    p.add_argument("--episodes", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output-json", help="write the summary JSON here")
    p.add_argument("--trajectories", help="write one JSON line per episode here (transcript + info)")
    p.add_argument("--env-kwargs", help="JSON object of keyword arguments for gym.make")
    p.add_argument("--data-path", help="dataset file (HLE, FRAMES) or tau2 data folder (data/tau2 of tau2-bench); "
                   "refused for ToolScale, whose tasks are generated")
    p.add_argument("--models", help="models file (TOML) for real endpoints")
    p.add_argument("--all-tasks", action="store_true", help="play every task of a fixed task list once (tau2, HLE, FRAMES); --episodes 0 = all")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.set_defaults(func=_eval)
    q = sub.add_parser("envs", help="list the registered environment ids")
    q.set_defaults(func=_envs)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m orchestra_gym.cli`` (the `orchestra` script adds train/sft)."""
    parser = argparse.ArgumentParser(prog="orchestra")
    add_subcommands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return run_command(args, parser)


def run_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Run a parsed subcommand; a user error (bad id, agent, option or data path) is one line on
    stderr and exit code 2, not a traceback."""
    import gymnasium as gym

    try:
        return int(args.func(args))
    except (ValueError, KeyError, FileNotFoundError, RuntimeError, gym.error.Error) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        parser.exit(2, f"{parser.prog} {args.command}: error: {msg}\n")


if __name__ == "__main__":
    raise SystemExit(main())
