"""`orchestra serve` against in-process envs on the same work in one run (issue 35).

    python benchmarks/bench_serve.py [--env ToolOrchestra-ToolScale-v0] [--episodes 40]
                                     [--sessions 1,16,64] [--workers 1] [--step-in thread]
                                     [--procs 2] [--json OUT]

The work: the oracle agent's episodes on seeds 0..episodes-1, recorded once in-process (actions
only), then replayed the same way everywhere, so every row makes the same env calls
(``reset`` + ``step``s) and the agent costs nothing:

- ``in-process``: the replay in ``--procs`` processes (one per core: the throughput the same cores
  give without a server) and in one process (the per-call time a single session is compared to);
- ``served, 1 session``: the replay through `orchestra_gym.serving.client.RemoteEnv` (OpenEnv's
  client, info decoded: what a user's agent pays) against ``orchestra serve`` on 127.0.0.1;
- ``served, N sessions``: N concurrent WebSocket sessions from one asyncio client process speaking
  OpenEnv's wire messages (``{"type": "reset"|"step", "data": ...}``), each replaying the episodes.

Prints one line per row (env calls per second, ms per call, ratio to in-process) and the per-call
overhead of one served session (served ms per call - in-process ms per call). The client runs on
the same cores as the server, as a trainer on one machine would. Timings are ratios within this
run; record them with the machine and its load in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import gymnasium as gym

import orchestra_gym  # noqa: F401  (registers the ids)
from orchestra_gym.agents import OracleAgent
from orchestra_gym.evaluation import play_episode

ROOT = Path(__file__).resolve().parents[1]
Episode = tuple[int, list[Any]]  # (seed, the actions of the episode in order)


class RecordingOracle(OracleAgent):
    """The oracle, keeping the actions of its current episode (`actions`)."""

    def reset(self, env: Any, observation: str, info: dict[str, Any]) -> None:
        super().reset(env, observation, info)
        self.actions: list[Any] = []

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        action = super().act(observation, info)
        self.actions.append(action)
        return action


def record(env_id: str, env_kwargs: dict[str, Any], episodes: int) -> list[Episode]:
    """The oracle agent's actions on seeds 0..episodes-1 (each episode played to its end, `play_episode`)."""
    env, agent, out = gym.make(env_id, **env_kwargs), RecordingOracle(), []
    for seed in range(episodes):
        play_episode(env, agent, seed)
        out.append((seed, list(agent.actions)))
    env.close()
    return out


def _replay(env: gym.Env, episodes: list[Episode], repeats: int) -> tuple[int, float]:
    """(env calls, seconds) of replaying `episodes` `repeats` times on `env` (closed after)."""
    calls, t0 = 0, time.perf_counter()
    for _ in range(repeats):
        for seed, actions in episodes:
            env.reset(seed=seed)
            for a in actions:
                env.step(a)
            calls += 1 + len(actions)
    seconds = time.perf_counter() - t0
    env.close()
    return calls, seconds


def replay_in_process(env_id: str, env_kwargs: dict[str, Any], episodes: list[Episode], repeats: int) -> tuple[int, float]:
    """(env calls, seconds) of replaying `episodes` `repeats` times in this process."""
    return _replay(gym.make(env_id, **env_kwargs), episodes, repeats)


def _replay_worker(args: tuple) -> tuple[int, float]:
    return replay_in_process(*args)


def in_process_parallel(env_id: str, env_kwargs: dict[str, Any], episodes: list[Episode], repeats: int,
                        procs: int) -> tuple[int, float]:
    """(env calls, wall seconds) of `procs` processes each replaying `episodes` `repeats` times."""
    with mp.get_context("spawn").Pool(procs) as pool:
        pool.map(_replay_worker, [(env_id, env_kwargs, episodes[:1], 1)] * procs)  # import and build once
        t0 = time.perf_counter()
        results = pool.map(_replay_worker, [(env_id, env_kwargs, episodes, repeats)] * procs)
        wall = time.perf_counter() - t0
    return sum(c for c, _ in results), wall


class Server:
    """``orchestra serve`` in a subprocess on a free 127.0.0.1 port (stopped by `close`)."""

    def __init__(self, env_id: str, env_kwargs: dict[str, Any], max_sessions: int, workers: int, step_in: str):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        code = "import sys; from orchestra_jax.cli import main; sys.exit(main(sys.argv[1:]))"
        args = ["serve", "--env", env_id, "--env-kwargs", json.dumps(env_kwargs), "--port", str(self.port),
                "--max-sessions", str(max_sessions), "--workers", str(workers), "--step-in", step_in]
        self.proc = subprocess.Popen([sys.executable, "-c", code, *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                                     env={**os.environ, "PYTHONPATH": str(ROOT)})
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(self.url + "/health", timeout=2).read()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"orchestra serve did not start (exit {self.proc.poll()})")
                time.sleep(0.1)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


def _wire_action(action: Any) -> dict[str, Any]:
    return {"text": action} if isinstance(action, str) else {"structured": action}


def served_one_session(url: str, episodes: list[Episode], repeats: int) -> tuple[int, float]:
    """(env calls, seconds) of replaying through one `RemoteEnv` (OpenEnv's client, info decoded)."""
    env = gym.make("orchestra_gym:Remote-v0", base_url=url)
    env.reset(seed=episodes[0][0])  # connect first
    return _replay(env, episodes, repeats)


def served_concurrent(url: str, episodes: list[Episode], sessions: int, repeats: int) -> tuple[int, float]:
    """(env calls, wall seconds) of `sessions` concurrent WebSocket sessions each replaying `episodes`
    `repeats` times (session i starts at episode i, so the sessions are not in step)."""
    import websockets

    ws_url = url.replace("http", "ws") + "/ws"

    async def call(ws: Any, message: dict[str, Any]) -> None:
        await ws.send(json.dumps(message))
        reply = json.loads(await ws.recv())
        if reply.get("type") == "error":
            raise RuntimeError(f"server error: {reply.get('data')}")

    async def session(ws: Any, i: int) -> int:
        calls, order = 0, episodes[i % len(episodes):] + episodes[: i % len(episodes)]
        for _ in range(repeats):
            for seed, actions in order:
                await call(ws, {"type": "reset", "data": {"seed": seed}})
                for a in actions:
                    await call(ws, {"type": "step", "data": _wire_action(a)})
                calls += 1 + len(actions)
        return calls

    async def run() -> tuple[int, float]:
        conns = [await websockets.connect(ws_url, max_size=1 << 27, compression=None) for _ in range(sessions)]
        for ws in conns:  # every session's env is built before the clock starts
            await call(ws, {"type": "reset", "data": {"seed": 0}})
        t0 = time.perf_counter()
        counts = await asyncio.gather(*(session(ws, i) for i, ws in enumerate(conns)))
        wall = time.perf_counter() - t0
        for ws in conns:
            await ws.close()
        return sum(counts), wall

    return asyncio.run(run())


def main(argv: "list[str] | None" = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="ToolOrchestra-ToolScale-v0")
    p.add_argument("--env-kwargs", default="{}", help="JSON keywords of every env (in-process and served)")
    p.add_argument("--episodes", type=int, default=40, help="oracle episodes recorded (seeds 0..N-1)")
    p.add_argument("--repeats", type=int, default=3, help="replays of the episodes per process / session (1 session)")
    p.add_argument("--sessions", default="1,16,64", help="concurrent session counts")
    p.add_argument("--workers", type=int, default=1, help="orchestra serve --workers")
    p.add_argument("--step-in", default="thread", choices=["thread", "loop"], help="orchestra serve --step-in")
    p.add_argument("--procs", type=int, default=os.cpu_count() or 1, help="in-process reference processes")
    p.add_argument("--json", default=None, help="write the rows here")
    a = p.parse_args(argv)
    env_kwargs = json.loads(a.env_kwargs)
    counts = [int(s) for s in a.sessions.split(",")]

    episodes = record(a.env, env_kwargs, a.episodes)
    steps = sum(1 + len(x) for _, x in episodes)
    print(f"work: {a.episodes} oracle episodes of {a.env}, {steps} env calls per replay "
          f"({steps / a.episodes:.1f} per episode); {os.cpu_count()} cores", flush=True)
    rows: dict[str, Any] = {}
    replay_in_process(a.env, env_kwargs, episodes, 1)  # warm
    c1, s1 = replay_in_process(a.env, env_kwargs, episodes, a.repeats)
    ms_in = 1e3 * s1 / c1
    rows["in_process_1"] = {"calls_per_s": c1 / s1, "ms_per_call": ms_in}
    # each reference process replays for >= 2 s, so process start-up does not count
    par_repeats = max(a.repeats, int(2.0 / (s1 / a.repeats)) + 1)
    cp, sp = in_process_parallel(a.env, env_kwargs, episodes, par_repeats, a.procs)
    ref = cp / sp
    rows[f"in_process_{a.procs}procs"] = {"calls_per_s": ref}
    print(f"in-process, 1 process:        {c1 / s1:8.1f} calls/s  {ms_in:6.3f} ms/call")
    print(f"in-process, {a.procs} processes:      {ref:8.1f} calls/s  (the reference)")
    # the kernel spreads connections over the workers unevenly: give each room for all of them
    server = Server(a.env, env_kwargs, max_sessions=max(counts) * a.workers, workers=a.workers,
                    step_in=a.step_in)
    try:
        served_one_session(server.url, episodes[:2], 1)  # warm the session path
        cs, ss = served_one_session(server.url, episodes, a.repeats)
        ms_served = 1e3 * ss / cs
        overhead = ms_served - ms_in
        rows["served_remote_env_1"] = {"calls_per_s": cs / ss, "ms_per_call": ms_served, "overhead_ms": overhead}
        print(f"served, 1 session (RemoteEnv): {cs / ss:7.1f} calls/s  {ms_served:6.3f} ms/call  "
              f"overhead {overhead:.3f} ms/call")
        for n in counts:
            repeats = max(1, round(par_repeats * a.procs / n))  # about the reference's work in all
            cn, sn = served_concurrent(server.url, episodes, n, repeats)
            rows[f"served_ws_{n}"] = {"calls_per_s": cn / sn, "ratio_to_in_process": cn / sn / ref,
                                      "ms_per_call_per_session": 1e3 * sn * n / cn}
            print(f"served, {n:3d} sessions (WS):    {cn / sn:7.1f} calls/s  {cn / sn / ref:5.2f} of in-process "
                  f"({a.procs} procs), {a.workers} server worker(s), --step-in {a.step_in}", flush=True)
    finally:
        server.close()
    if a.json:
        Path(a.json).write_text(json.dumps({"env": a.env, "episodes": a.episodes, "workers": a.workers, "step_in": a.step_in,
                                            "procs": a.procs, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
