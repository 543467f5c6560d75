"""Environment step overhead: steps per second for every registered env id with the oracle agent.

No model runs here: the oracle plays golden actions, so the number is the cost of the environment
itself (parsing, tools over the domain database, the user simulator, accounting, grading).

Usage: python benchmarks/bench_env.py [--episodes N] [--envs ID ...] [--record]
Prints the table; with ``--record`` appends it to benchmarks/RESULTS.md with the command, the machine and the date.
"""

from __future__ import annotations

import argparse
import sys
import time

import gymnasium as gym
from _record import append_section, command

import orchestra_gym
from orchestra_gym.agents import OracleAgent
from orchestra_gym.evaluation import play_episode



class Timed(gym.Wrapper):
    """Times the env's own `reset` and `step` calls (seconds, counts), not the agent's."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.t_reset = self.t_step = 0.0
        self.resets = self.steps = 0

    def reset(self, **kwargs):
        t0 = time.perf_counter()
        out = self.env.reset(**kwargs)
        self.t_reset, self.resets = self.t_reset + time.perf_counter() - t0, self.resets + 1
        return out

    def step(self, action):
        t0 = time.perf_counter()
        out = self.env.step(action)
        self.t_step, self.steps = self.t_step + time.perf_counter() - t0, self.steps + 1
        return out


def bench(env_id: str, episodes: int, seed: int = 0) -> dict:
    env = Timed(gym.make(env_id))
    agent = OracleAgent()
    solved = sum(bool(play_episode(env, agent, seed + i).solved) for i in range(episodes))
    env.close()
    return {
        "env": env_id,
        "episodes": episodes,
        "steps": env.steps,
        "steps_per_s": env.steps / env.t_step,
        "reset_ms": 1000 * env.t_reset / env.resets,
        "step_ms": 1000 * env.t_step / env.steps,
        "success": solved / episodes,
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=200)
    p.add_argument("--envs", nargs="*", default=None, help="env ids (default: every registered id whose data is found)")
    p.add_argument("--record", action="store_true", help="write into the repository: append the section to benchmarks/RESULTS.md (default: print only)")
    p.add_argument("--no-record", action="store_true", help=argparse.SUPPRESS)  # the default now; kept for old commands
    args = p.parse_args(argv)
    ids = args.envs or list(orchestra_gym.ENV_IDS)
    rows = []
    for i in ids:
        try:
            gym.make(i).close()
        except Exception as e:  # data not present here (tau2 data dir, HLE file): say so, go on
            print(f"skipping {i}: {type(e).__name__}: {str(e).splitlines()[0][:160]}", file=sys.stderr)
            continue
        rows.append(bench(i, args.episodes))
    head = "| env | episodes | steps | steps/s | reset ms | step ms | oracle success |\n|---|---|---|---|---|---|---|"
    lines = [
        f"| {r['env']} | {r['episodes']} | {r['steps']} | {r['steps_per_s']:.0f} | {r['reset_ms']:.2f} | {r['step_ms']:.3f} | {r['success']:.3f} |"
        for r in rows
    ]
    table = "\n".join([head, *lines])
    print(table)
    if args.record:
        append_section("Env step overhead (oracle agent)", command("bench_env.py", argv), table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
