"""Tool calls overlapped with decoding (issue 36 item 2): one GRPO step's rollouts of the main job's workload,
lockstep vs `rollout.overlap_tools`, with the simulated experts' latency played as real sleeps.

Builds the main job's run (`orchestra train --preset tiny-toolscale`: `orchestra_jax.train.Run`) and its
supervised warm start (`--sft-steps`, the preset's 1200 by default; resumed from OUTPUT_DIR when there), wraps
every env in `orchestra_gym.wrappers.SleepLatency` (each step sleeps its ``info["latency_s"]`` x
`--sleep-latency`, clipped to [`--min-sleep`, `--max-sleep`] s), then collects GRPO step `--step`'s sampled
rollouts exactly as `Run.grpo` does (same preferences, env seeds, sampler seed), once lockstep and once
overlapped (`collect_rollouts(overlap_tools=True)`: two cohorts taking turns), in the same process after
one untimed pass of each without sleeps (so that compiles are not timed). Reports per mode the rollout wall
time, useful tokens/s (tokens the policy generated / wall), the env steps' sleep total, and the ratio.

Usage: PYTHONPATH=. python benchmarks/bench_async.py [--sft-steps 20] [--sleep-latency 0.1]
       [--min-sleep 0.5] [--max-sleep 3]
       [--tool-workers 0] [--output-dir runs/bench-async] [--record]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path


import numpy as np  # noqa: E402


def run(args) -> dict:
    from bench_rollout_slots import main_job_step
    from orchestra_gym.wrappers import SleepLatency
    from orchestra_jax.rollout import collect_rollouts
    from orchestra_jax.rollout_source import step_seed

    s = args.step
    cfg, r, params, sft_s, options, per_task = main_job_step(args.sft_steps, args.output_dir, s)
    slept: list[float] = []

    def sleep(sec: float) -> None:
        slept.append(sec)
        if scale_now[0] is not None:
            time.sleep(sec)

    scale_now: list = [None]
    envs = [SleepLatency(e, scale=args.sleep_latency, min_s=args.min_sleep, max_s=args.max_sleep, sleep=sleep)
            for e in r.envs[:cfg.rollout.tasks_per_step * per_task]]
    sampler = r.sampler(params)
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=args.tool_workers) if args.tool_workers else r.pool

    def collect(overlap: bool):
        return collect_rollouts(
            sampler, r.tok, envs, options, rollouts_per_task=per_task, seed=step_seed(cfg.seed, s),
            max_new_tokens=cfg.rollout.max_new_tokens, max_seq_len=cfg.rollout.max_seq_len,
            temperature=cfg.rollout.temperature, max_turns=cfg.env.max_turns, executor=pool, overlap_tools=overlap)

    for overlap in (False, True):  # untimed, no sleeps: compiles (the overlapped cohorts have other shapes)
        collect(overlap)
    out = {"preset": "tiny-toolscale", "sft_steps": cfg.sft.steps, "sft_s": round(sft_s, 1), "grpo_step": s,
           "sleep_latency": args.sleep_latency, "min_sleep": args.min_sleep, "max_sleep": args.max_sleep,
           "tool_workers": pool._max_workers, "load_before": os.getloadavg()[0]}
    scale_now[0] = args.sleep_latency
    for name, overlap in (("lockstep", False), ("overlap", True)):
        slept.clear()
        t = time.perf_counter()
        trajs, stats = collect(overlap)
        wall = time.perf_counter() - t
        turns = np.asarray([x.turns for x in trajs])
        out[name] = {"rollout_s": round(wall, 2), "generated_tokens": stats.generated_tokens,
                     "useful_tokens_per_s": round(stats.generated_tokens / wall, 1), "env_steps": len(slept),
                     "sleep_total_s": round(sum(slept), 1), "cut": stats.cut, "turns_mean": float(turns.mean()),
                     "turns_max": int(turns.max()), "rows": len(trajs)}
    out["load_after"] = os.getloadavg()[0]
    out["wall_ratio"] = round(out["lockstep"]["rollout_s"] / out["overlap"]["rollout_s"], 2)
    out["tokens_per_s_ratio"] = round(out["overlap"]["useful_tokens_per_s"] / out["lockstep"]["useful_tokens_per_s"], 2)
    r.close()
    return out


def table(out: dict) -> str:
    lines = [f"tiny-toolscale, GRPO step {out['grpo_step']}'s sampled rollouts ({out['lockstep']['rows']} rows) after a "
             f"{out['sft_steps']}-step warm start; each env step sleeps its simulated latency x {out['sleep_latency']}, "
             f"clipped to [{out['min_sleep']}, {out['max_sleep']}] s (`orchestra_gym.wrappers.SleepLatency`); "
             f"{out['tool_workers']} env-step threads.", "",
             "| engine | rollout wall (s) | tokens generated | useful tokens/s | env steps | their sleeps (s) | turns mean / max | cut |",
             "|---|---|---|---|---|---|---|---|"]
    for name in ("lockstep", "overlap"):
        m = out[name]
        lines.append(f"| {name} | {m['rollout_s']} | {m['generated_tokens']} | {m['useful_tokens_per_s']} | {m['env_steps']} | "
                     f"{m['sleep_total_s']} | {m['turns_mean']:.2f} / {m['turns_max']} | {m['cut']} |")
    lines += ["", f"Wall time lockstep / overlap: {out['wall_ratio']}x; useful tokens/s overlap / lockstep: "
              f"{out['tokens_per_s_ratio']}x. Load average (1 min) {out['load_before']:.2f} before, {out['load_after']:.2f} after."]
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sft-steps", type=int, default=None, help="warm-start steps (default: the preset's)")
    p.add_argument("--step", type=int, default=0, help="which GRPO step's rollouts (tasks, seeds)")
    p.add_argument("--sleep-latency", type=float, default=0.1, help="seconds slept per simulated second")
    p.add_argument("--min-sleep", type=float, default=0.5)
    p.add_argument("--max-sleep", type=float, default=3.0)
    p.add_argument("--tool-workers", type=int, default=0, help="threads of the env steps (0: the preset's rollout.tool_workers)")
    p.add_argument("--output-dir", default="runs/bench-async")
    p.add_argument("--json", default="")
    p.add_argument("--record", action="store_true")
    args = p.parse_args(argv)
    out = run(args)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    from _record import report
    report(table(out), record=args.record, title="Tool calls overlapped with decoding (issue 36 item 2)",
           script="bench_async.py", argv=argv, note="The 2-core machine (AMD EPYC) is shared with another agent's "
           "training runs: seconds are loaded (load averages above); both engines ran in the same process, one "
           "after the other, on the same rollouts' tasks and seeds.")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
