"""The `orchestra` console script: ``train`` and ``sft`` here; ``eval`` and ``envs`` from
`orchestra_gym.cli` (this module sits at the top of the import graph; JAX is imported only by the
subcommands that need it). ``eval --agent policy:RUN_DIR`` (a trained run) is registered here with
`orchestra_gym.agents.register_agent_kind`, since `orchestra_gym` never imports `orchestra_jax`."""

from __future__ import annotations

import argparse
import sys

__all__ = ["main"]


def _policy_agents(run_dir: str, seed: int, models: object) -> object:
    """``--agent policy:RUN_DIR``: a trained run as the agent (JAX is imported here, only when used)."""
    from orchestra_jax.agents import policy_agent_factory

    return policy_agent_factory(run_dir, seed, models)


def main(argv: list[str] | None = None) -> int:
    """Run the `orchestra` command line; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("train", "sft"):
        from orchestra_jax import train

        return int(train.train_main(argv[1:]) if argv[0] == "train" else train.sft_main(argv[1:]))
    from orchestra_gym.agents import register_agent_kind
    from orchestra_gym.cli import add_subcommands

    register_agent_kind("policy", _policy_agents, "run dir")

    parser = argparse.ArgumentParser(prog="orchestra", description="ToolOrchestra environments and trainer")
    sub = parser.add_subparsers(dest="command", required=True)
    add_subcommands(sub)
    sub.add_parser("train", help="train an orchestrator with GRPO (orchestra train --help)")
    sub.add_parser("sft", help="supervised warm start on golden trajectories (orchestra sft --help)")
    args = parser.parse_args(argv)
    from orchestra_gym.cli import run_command

    return run_command(args, parser)


if __name__ == "__main__":
    raise SystemExit(main())
