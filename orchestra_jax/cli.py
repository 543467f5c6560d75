"""The trainer's commands of the `orchestra` console script: ``train``, ``sft`` and ``export``, and the
``policy:RUN_DIR`` agent kind of ``orchestra eval``. The script itself is `orchestra_gym.cli.main`, which
finds these through the entry-point groups ``orchestra.commands`` and ``orchestra.agent_kinds`` of
``pyproject.toml`` (installed with the ``jax`` extra); `main` here runs the same script with them given
directly (``python -m orchestra_jax.cli``). This module sits at the top of the import graph.

JAX is imported only by the subcommands that need it: `orchestra_jax.train` (jax, flax, orbax) is
imported inside `train_main` / `sft_main`, after the config has been checked, so `orchestra envs`
and a bad config answer without loading JAX. ``eval --agent policy:RUN_DIR`` (a trained run) is
`policy_agents`, registered by `orchestra_gym.cli` from the entry point, since `orchestra_gym` never imports
`orchestra_jax`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from typing import Any

from orchestra_gym.cli import main as orchestra_main
from orchestra_jax.run_folder import check_run_folder, saved_config
from orchestra_jax.train_config import ConfigError, TrainConfig, config_keys

__all__ = ["main", "train_main", "sft_main", "export_main", "parse_set", "policy_agents", "COMMANDS"]


def _toml_value(value: Any) -> str:
    """A default as it is written in a config file or after ``--set KEY=`` (TOML); ``None`` as ``(unset)``."""
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k) if not str(k).isidentifier() else k} = {_toml_value(v)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(value)


def _config_keys_help() -> str:
    """The epilog of ``--help``: every config key with its default (`TrainConfig()`: the paper's values; a
    preset changes some) and the one line of help where it is declared (`train_config.config_keys`)."""
    keys = config_keys()
    width = max(len(k) for k, _, _ in keys) + 3
    lines = ["config keys: KEY = DEFAULT  help (files: [section] tables or dotted keys; --set section.key=VALUE;",
             "the defaults are TrainConfig()'s, the paper's; --preset values differ):"]
    for key, default, text in keys:
        lines.append(f"  {key} = {_toml_value(default)}".ljust(width + 14) + f"  {text}".rstrip())
    return "\n".join(lines)


def _parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="GRPO training of an orchestrator policy (ToolOrchestra)",
                                epilog=_config_keys_help(), formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--preset", default=None, help="a TrainConfig preset (default tiny-toolscale)")
    g.add_argument("--config", default=None, help="a .toml or .json TrainConfig file (strict keys)")
    p.add_argument("--max-steps", type=int, default=None, help="GRPO steps (overrides the config)")
    p.add_argument("--seed", type=int, default=None, help="master seed (overrides the config)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a TrainConfig key (repeatable); VALUE is a TOML value, e.g. "
                        "optimizer.learning_rate=3e-4, 'env.preference={outcome=1, cost=0.5}', "
                        "model.overrides.num_layers=2, grpo.loss.kl_coef=0.01; a bare word is a string")
    p.add_argument("--output-dir", default=None, help="run directory (logs, checkpoints, summary.json, plots)")
    p.add_argument("--no-progress", action="store_true", help="no tqdm bar")
    p.add_argument("--resume", action="store_true",
                   help="continue the run in --output-dir with the config saved there (with --max-steps: train further)")
    return p


def parse_set(item: str) -> tuple[str, Any]:
    """``KEY=VALUE`` of ``--set`` -> (key, value): VALUE parsed as a TOML value (number, boolean, string,
    array, inline table); a VALUE that is not TOML is taken as a plain string.

    Raises: ConfigError when there is no ``=`` or the key is empty."""
    key, sep, text = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"--set {item!r}: expected SECTION.KEY=VALUE, e.g. --set optimizer.learning_rate=3e-4")
    try:
        value = tomllib.loads(f"v = {text.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = text.strip()
    return key, value


def apply_sets(cfg: TrainConfig, items: list[str]) -> TrainConfig:
    """``--set`` overrides on `cfg`, in order (`TrainConfig.replace` with dotted keys: ``sft.steps=400``;
    ``model.overrides.num_layers=2`` sets one entry of a dict field). Strict: unknown keys raise
    ConfigError with a did-you-mean hint naming the section."""
    over: dict[str, Any] = {}
    for item in items:
        key, value = parse_set(item)
        over.pop(key, None)  # a repeated key: the last one wins, in its own place
        over[key] = value
    return cfg.replace(**over) if over else cfg


def _load_config(prog: str, argv: list[str] | None) -> TrainConfig | None:
    """Parse the command line and load the config strictly; None (message on stderr) when it is bad."""
    args = _parser(prog).parse_args(argv)
    over: dict[str, Any] = {}
    if args.seed is not None:
        over["seed"] = args.seed
    if args.max_steps is not None:
        over["max_steps"] = args.max_steps
    if args.output_dir is not None:
        over["output_dir"] = args.output_dir
    if args.no_progress:
        over["progress_bar"] = False
    try:
        if args.resume:
            return _resume_config(args, over)
        cfg = TrainConfig.from_file(args.config) if args.config else TrainConfig.preset(args.preset or "tiny-toolscale")
        cfg = apply_sets(cfg, args.sets)
        cfg = cfg.replace(**over) if over else cfg
        cfg.check_env()  # env.id and env.kwargs against the env's keywords: before any file or JAX
        return cfg
    except (ConfigError, FileNotFoundError) as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return None


def _resume_config(args: argparse.Namespace, over: dict[str, Any]) -> TrainConfig:
    """``--resume``: the config saved in the output folder, with --max-steps / --no-progress applied.

    Raises: ConfigError when the folder holds no run, or a setting other than those is given."""
    other = [flag for flag, given in (("--config", args.config), ("--preset", args.preset), ("--set", args.sets),
                                      ("--seed", args.seed is not None)) if given]
    if other:
        raise ConfigError(f"--resume continues the saved config of the run folder; drop {', '.join(other)} (or "
                          "start a new run in a new --output-dir)")
    run_dir = args.output_dir or TrainConfig.tiny_toolscale().output_dir
    saved = saved_config(run_dir)
    if saved is None:
        raise ConfigError(f"--resume: {run_dir} holds no run (no train_config.json); name the run's --output-dir")
    return saved.replace(**{**over, "output_dir": str(run_dir)})


def _run(prog: str, cfg: TrainConfig, *, sft_only: bool = False) -> dict[str, Any] | int:
    """`run_training`, or the exit code of a run that stopped: 130 after Ctrl-C, 143 after SIGTERM (one line:
    stopped, the latest checkpoint, where the same command resumes and how many finished steps it redoes;
    the first Ctrl-C / SIGTERM checkpoints the step in progress when it ends, so none), 1 after
    `TrainingStopped` (its one-line message). Before that, the output folder (`run_folder.check_run_folder`):
    a run of another config there exits 2, a finished run of this config 0, each with one line."""
    try:
        finished = check_run_folder(cfg, sft_only=sft_only)
    except ConfigError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    if finished:
        print(f"{prog}: {finished}", file=sys.stderr)
        return 0
    from orchestra_jax import checkpoint  # lazy: JAX only once the config is good (module doc)
    from orchestra_jax.run_checkpoints import TrainingInterrupted
    from orchestra_jax.run_log import last_logged_step
    from orchestra_jax.train import TrainingStopped, run_training

    try:
        return run_training(cfg, sft_only=sft_only)
    except KeyboardInterrupt as e:
        why = e.signal_name if isinstance(e, TrainingInterrupted) else "Ctrl-C"
        latest = checkpoint.latest(cfg.output_dir)
        if latest is None:
            where = "no checkpoint was written yet; run the same command again to start over."
        else:
            phase, step = latest
            redo = max(0, last_logged_step(cfg.output_dir, phase) - step)
            where = (f"the latest checkpoint is {checkpoint.phase_dir(cfg.output_dir, phase) / str(step)} "
                     f"({phase} step {step}); run the same command again to resume at {phase} step {step + 1} "
                     f"({f'{redo} finished step(s) redone' if redo else 'no finished step is redone'}).")
        print(f"{prog}: stopped ({why}); {where}", file=sys.stderr)
        return 143 if why == "SIGTERM" else 130
    except TrainingStopped as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 1


def train_main(argv: list[str] | None = None) -> int:
    """`orchestra train [--preset NAME | --config FILE] [--seed N] [--set KEY=VALUE ...] [--max-steps N]
    [--output-dir DIR] [--resume]`.

    Resumes from DIR/checkpoints when present and DIR's config is this one (a run of another config there
    exits 2 naming the differing keys; a finished one says so and exits 0; ``--resume`` takes DIR's config). Prints and writes DIR/summary.json. Returns 0; a bad config
    exits with code 2 and the message naming the key, before any compute; a run stopped by the training
    guard or a non-finite update exits 1, Ctrl-C 130, each with one line on stderr."""
    cfg = _load_config("orchestra train", argv)
    if cfg is None:
        return 2
    summary = _run("orchestra train", cfg)
    if isinstance(summary, int):
        return summary
    print(json.dumps({k: summary[k] for k in ("steps", "wall_time_s", "initial_success_rate", "final_success_rate",
                                              "initial_cost_per_solved_usd", "final_cost_per_solved_usd")}))
    print("\n".join(run_report_lines(summary, cfg.output_dir)))
    return 0


def run_report_lines(summary: dict[str, Any], output_dir: str) -> list[str]:
    """What a finished run says at its end: where its files are, and the trained policy beside each fixed rule
    played in the same setting on the same held-out tasks (success rate; cost per solved task in cents), with
    the rules it dominates (at least as accurate and at most as costly, one of them strictly) and those that
    dominate it."""
    final = summary.get("final") or {}
    lines = [f"Run folder {output_dir}: summary.json (all numbers), "
             + ", ".join(summary.get("plots") or []) + (", " if summary.get("plots") else "")
             + "metrics.jsonl (every step), checkpoints/ (resume; `orchestra export`)."]
    if not final:
        return lines

    def point(s: dict[str, Any]) -> tuple[float, float]:
        cost = s.get("cost_per_solved_usd")
        return float(s.get("success_rate") or 0.0), (100 * float(cost) if cost is not None else float("inf"))

    acc, cents = point(final)
    lines.append(f"Trained policy on {final.get('episodes', '?')} held-out tasks: success {acc:.2f}, "
                 f"{cents:.2f} cents per solved task (before GRPO: {summary.get('initial_success_rate', 0):.2f}).")
    better, worse = [], []
    for name, s in (summary.get("baselines") or {}).items():
        a, c = point(s)
        lines.append(f"  fixed rule {name:<12} success {a:.2f}, {c:.2f} cents per solved task")
        if acc >= a and cents <= c and (acc > a or cents < c):
            better.append(name)
        elif a >= acc and c <= cents and (a > acc or c < cents):
            worse.append(name)
    if summary.get("baselines"):
        lines.append(f"It dominates {', '.join(better) or 'no fixed rule'} and is dominated by "
                     f"{', '.join(worse) or 'no fixed rule'} (A dominates B: A is at least as accurate and at most "
                     f"as costly per solved task, and better on one). Its gap to the fixed rules' accuracy-cost hull, "
                     f"on 500 tasks: python benchmarks/bench_orchestration.py --checkpoint {output_dir}")
    return lines


def sft_main(argv: list[str] | None = None) -> int:
    """`orchestra sft [--preset NAME | --config FILE] [--output-dir DIR]`: the warm start only (+ evaluation)."""
    cfg = _load_config("orchestra sft", argv)
    if cfg is None:
        return 2
    if cfg.sft.steps == 0:
        print("orchestra sft: sft.steps is 0 in this config; set sft.steps >= 1", file=sys.stderr)
        return 2
    summary = _run("orchestra sft", cfg, sft_only=True)
    if isinstance(summary, int):
        return summary
    print(json.dumps({k: summary[k] for k in ("sft_steps", "wall_time_s", "final_success_rate")}))
    return 0


def export_main(argv: list[str] | None = None) -> int:
    """`orchestra export RUN_DIR --hf DIR [--phase grpo|sft] [--step N] [--dtype float32|bfloat16|float16]`:
    a trained run as a Hugging Face model directory (`orchestra_jax.export.export_run`) that transformers,
    ``transformers serve`` and vLLM load. Prints the directory; returns 0, or 2 with a one-line message
    when the run folder has no config or checkpoint."""
    p = argparse.ArgumentParser(prog="orchestra export", description="export a trained run as a Hugging Face model")
    p.add_argument("run_dir", help="an `orchestra train` --output-dir")
    p.add_argument("--hf", required=True, metavar="DIR", help="the Hugging Face directory to write")
    p.add_argument("--phase", choices=["grpo", "sft"], default=None, help="checkpoint phase (default: grpo, else sft)")
    p.add_argument("--step", type=int, default=None, help="checkpoint step (default: the newest)")
    p.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], default="float32",
                   help="weight storage dtype (default float32: the trained weights exactly)")
    args = p.parse_args(argv)
    from orchestra_jax.export import export_run  # lazy: JAX only for this command (module doc)

    try:
        out = export_run(args.run_dir, args.hf, phase=args.phase, step=args.step, dtype=args.dtype)
    except (FileNotFoundError, ConfigError) as e:
        print(f"orchestra export: {e}", file=sys.stderr)
        return 2
    print(out)
    return 0


def policy_agents(run_dir: str, seed: int, models: object) -> object:
    """``--agent policy:RUN_DIR``: a trained run as the agent (JAX is imported here, only when used)."""
    from orchestra_jax.agents import policy_agent_factory

    return policy_agent_factory(run_dir, seed, models)


#: The trainer's subcommands (pyproject.toml's ``orchestra.commands`` entry points name the same functions).
COMMANDS = {"train": train_main, "sft": sft_main, "export": export_main}


def main(argv: list[str] | None = None) -> int:
    """Run the `orchestra` command line with the trainer's commands and agent kind given directly (no installed
    entry points needed); returns the exit code."""
    return orchestra_main(argv, commands=COMMANDS, agent_kinds={"policy": policy_agents})


if __name__ == "__main__":
    raise SystemExit(main())
