"""`orchestra eval` and `orchestra envs`: argument parsing and printing only (no JAX import).

``orchestra eval --env ID --agent NAME --episodes N --seed S [--output-json PATH]
[--trajectories PATH] [--env-kwargs JSON]`` runs `orchestra_gym.evaluation.evaluate` and prints
its table (success rate, mean cost in USD, mean latency in seconds, tool-call mix; for HLE and
FRAMES also the paper's Table 1 columns) with a progress bar, writes one JSON line per episode
(transcript and final ``info``) to ``--trajectories``, and the summary JSON (keys
``success_rate``, ``mean_cost_usd``, ``mean_latency_s``, ``tool_calls``, ...) to ``--output-json``.
Episode i is reset with seed ``S + i``, so a run is reproducible.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import gymnasium as gym

from orchestra_gym.evaluation import evaluate, format_qa_table, format_table, jsonable
from orchestra_gym.registration import ENV_SPECS

__all__ = ["main", "add_subcommands", "run_command"]


def _eval(args: argparse.Namespace) -> int:
    kwargs = json.loads(args.env_kwargs) if args.env_kwargs else {}
    if args.data_path:
        kwargs["data_path"] = args.data_path
    if args.models:
        kwargs["models"] = args.models
    _, summary = evaluate(
        args.env, args.agent, args.episodes, seed=args.seed, env_kwargs=kwargs, all_tasks=args.all_tasks,
        trajectories_path=args.trajectories, progress=not args.no_progress,
    )
    print(format_table(summary, args.env, args.agent))
    if "qa" in summary:  # QA envs: the paper's Table 1 units (accuracy with a Wald 95% interval, cents, minutes, calls per model)
        print(format_qa_table(summary["qa"], args.env, args.agent))
    if args.output_json:
        Path(args.output_json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output_json).write_text(json.dumps(jsonable(summary), indent=2))
    return 0


def _envs(args: argparse.Namespace) -> int:
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
    p.add_argument("--data-path", help="dataset file for envs that need one (HLE, FRAMES)")
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
    try:
        return int(args.func(args))
    except (ValueError, KeyError, FileNotFoundError, RuntimeError, gym.error.Error) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        parser.exit(2, f"{parser.prog} {args.command}: error: {msg}\n")


if __name__ == "__main__":
    raise SystemExit(main())
