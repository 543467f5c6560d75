"""Concurrent evaluation against a slow local endpoint, and the evaluation's own overhead (issue 14).

1. Speed-up: `orchestra_gym.evaluation.run_episodes` plays ``--episodes`` ToolScale episodes with an
   agent that, every turn, sends one chat completion to a local OpenAI-compatible server (the
   scripted server of ``tests/servers.py``, in its own process, answering each request after
   ``--delay-ms`` ms) and then plays the oracle's action. The same episodes run at concurrency 1
   and at ``--concurrency`` in one run; the table gives both wall times and their ratio (goal:
   >= 15x at 32 for 200 episodes and 50 ms). The per-episode results of both runs are checked equal.
2. Overhead: the oracle on ToolScale without any server, played by a bare reset/step loop, by
   `run_episodes`, and by `run_episodes` writing a run folder's trajectories file (one JSON line
   per episode with the full messages): the difference per episode is the evaluation's own cost,
   shown next to the env's cost per step.

Usage: python benchmarks/bench_eval.py [--episodes 200] [--delay-ms 50] [--concurrency 32] [--record]
Prints the table; with ``--record`` (and only then) appends ``## Evaluation (issue 14)`` to
benchmarks/RESULTS.md (command, machine, date, load, table).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _record import append_section, command
import gymnasium as gym

import orchestra_gym  # noqa: F401  (registers the ids)
from orchestra_gym.agents import OracleAgent
from orchestra_gym.evaluation import play_episode, run_episodes
from orchestra_gym.tools.llm import OpenAIChatModel
from orchestra_gym import pricing

ROOT = Path(__file__).resolve().parents[1]
ENV_ID = "ToolOrchestra-ToolScale-v0"

SERVER = """
import sys
from tests.servers import OpenAIServer
srv = OpenAIServer(delay_s=float(sys.argv[1])).start()
print(srv.base_url, flush=True)
sys.stdin.read()  # serve until the benchmark closes stdin
srv.stop()
"""


class EndpointOracle(OracleAgent):
    """Each turn: one chat completion to the endpoint (its reply is ignored), then the oracle's action."""

    name = "endpoint-oracle"

    def __init__(self, model: OpenAIChatModel):
        self.model = model
        self.calls = 0

    def act(self, observation, info):
        reply = self.model.complete([{"role": "user", "content": observation[-200:]}], max_tokens=8)
        if not reply.ok:
            raise RuntimeError(reply.error)
        return super().act(observation, info)


def timed_run(model: OpenAIChatModel, episodes: int, concurrency: int) -> tuple[float, list]:
    t0 = time.perf_counter()
    results = run_episodes(lambda: gym.make(ENV_ID), lambda s: EndpointOracle(model), episodes, seed=0,
                           max_concurrency=concurrency)
    return time.perf_counter() - t0, results


def bare_loop(episodes: int) -> int:
    """The oracle by `play_episode` alone (no runner: no plan, threads or files); returns the steps taken."""
    env = gym.make(ENV_ID)
    agent = OracleAgent()
    steps = sum(play_episode(env, agent, i).steps for i in range(episodes))
    env.close()
    return steps


def overhead(episodes: int, repeats: int = 3) -> dict[str, float]:
    """Seconds per episode (the best of `repeats` interleaved runs, after a warm-up): bare loop,
    run_episodes, run_episodes writing trajectories; steps per episode and seconds per step."""
    best = {"bare": float("inf"), "runner": float("inf"), "files": float("inf")}
    bare_loop(5)  # warm-up: imports, first env
    with tempfile.TemporaryDirectory() as d:
        for _ in range(repeats):
            t0 = time.perf_counter()
            steps = bare_loop(episodes)
            best["bare"] = min(best["bare"], time.perf_counter() - t0)
            t0 = time.perf_counter()
            run_episodes(lambda: gym.make(ENV_ID), lambda s: OracleAgent(), episodes)
            best["runner"] = min(best["runner"], time.perf_counter() - t0)
            t0 = time.perf_counter()
            run_episodes(lambda: gym.make(ENV_ID), lambda s: OracleAgent(), episodes, trajectories_path=Path(d) / "t.jsonl")
            best["files"] = min(best["files"], time.perf_counter() - t0)
        size = (Path(d) / "t.jsonl").stat().st_size
    out = {k: v / episodes for k, v in best.items()}
    out.update(steps=steps / episodes, step=best["bare"] / steps, line_kb=size / episodes / 1024)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=200)
    p.add_argument("--delay-ms", type=float, default=50.0)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--record", action="store_true", help="write into the repository: append the section to benchmarks/RESULTS.md (default: print only)")
    p.add_argument("--no-record", action="store_true", help=argparse.SUPPRESS)  # the default now; kept for old commands
    args = p.parse_args(argv)
    load_before = os.getloadavg()
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(args.delay_ms / 1000)], cwd=ROOT, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        base_url = server.stdout.readline().strip()
        model = OpenAIChatModel("bench", base_url, price=pricing.ModelPrice(1.0, 1.0), max_concurrency=max(64, args.concurrency))
        t_serial, serial = timed_run(model, args.episodes, 1)
        t_conc, conc = timed_run(model, args.episodes, args.concurrency)
        model.close()
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    same = [json.dumps(r.record(), sort_keys=True) for r in serial] == [json.dumps(r.record(), sort_keys=True) for r in conc]
    steps = sum(r.steps for r in serial)
    o = overhead(args.episodes)
    load_after = os.getloadavg()
    table = "\n".join([
        f"{args.episodes} ToolScale episodes, {steps} turns, one chat completion per turn to a local server in its own "
        f"process answering after {args.delay_ms:g} ms; the agent then plays the oracle's action.",
        "",
        "| measurement | result |",
        "|---|---|",
        f"| wall time, concurrency 1 | {t_serial:.2f} s ({1000 * t_serial / steps:.1f} ms per turn) |",
        f"| wall time, concurrency {args.concurrency} | {t_conc:.2f} s |",
        f"| speed-up | {t_serial / t_conc:.1f}x (goal >= 15x) |",
        f"| per-episode results of both runs equal | {same} |",
        f"| oracle, bare reset/step loop (no server; best of 3) | {1000 * o['bare']:.2f} ms per episode ({o['steps']:.1f} steps of "
        f"{1000 * o['step']:.3f} ms) |",
        f"| oracle through `run_episodes` | {1000 * o['runner']:.2f} ms per episode (evaluation overhead "
        f"{1000 * (o['runner'] - o['bare']):+.2f} ms) |",
        f"| ... writing trajectories.jsonl (full messages, {o['line_kb']:.1f} KB per line) | {1000 * o['files']:.2f} ms per "
        f"episode (overhead {1000 * (o['files'] - o['bare']):+.2f} ms) |",
        "",
        f"Load average (1, 5, 15 min) before: {load_before[0]:.1f}, {load_before[1]:.1f}, {load_before[2]:.1f}; after: "
        f"{load_after[0]:.1f}, {load_after[1]:.1f}, {load_after[2]:.1f}. The machine's {os.cpu_count()} cores are shared "
        "with other agents' jobs, so absolute times are noisy; the ratio is measured within one run.",
    ])
    print(table)
    if args.record:
        append_section("Evaluation (issue 14)", command("bench_eval.py", argv), table)
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
