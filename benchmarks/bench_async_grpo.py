"""GRPO steps per hour, synchronous against bounded-staleness asynchronous (issue 36 item 3), with the simulated
experts' latency played as real sleeps.

Builds the main job's run (`orchestra train --preset tiny-toolscale`) and its supervised warm start
(`bench_rollout_slots.main_job_step`: `--sft-steps`, the preset's 1200 by default, resumed from OUTPUT_DIR when
there), then for each `--staleness` k trains `--steps` GRPO steps from that warm start (`Run.grpo`,
``grpo.max_staleness = k``, no guard, no evaluation) in a fresh `orchestra_jax.train.Run` whose envs (every env
set, `Run.wrap_envs`) are wrapped in `orchestra_gym.wrappers.SleepLatency`: each env step sleeps its
``info["latency_s"]`` x `--sleep-latency`, clipped to [`--min-sleep`, `--max-sleep`] s. The env steps of all
rollouts in flight share `--tool-workers` threads (`rollout.tool_workers`).

Steps per hour are measured at steady state from the run's own ``time_s`` log: the steps after step k + 1 over
the time from the end of step k + 1 to the end of the last step, so neither the first step's compiles nor the
k + 1 steps whose rollouts all start together at the beginning (`orchestra_jax.async_grpo`) are counted. Also reported per k: mean
rollout seconds (the producer's), mean seconds the trainer waited for its rollouts, the staleness seen, the
success rate of the sampled episodes, and the ratio to k = 0 (goal in issue 36: >= 2x).

Usage: PYTHONPATH=. python benchmarks/bench_async_grpo.py [--sft-steps N] [--steps 10] [--staleness 0 1 2]
       [--sleep-latency 0.1] [--min-sleep 0.5] [--max-sleep 3] [--tool-workers 128]
       [--output-dir runs/bench-async-grpo] [--json F] [--record]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path


import numpy as np  # noqa: E402


def train_steps(base_cfg, params, lag: int, args, out_dir: Path) -> dict:
    """`args.steps` GRPO steps from `params` with max_staleness `lag`, env steps sleeping; their timings."""
    from orchestra_gym.wrappers import SleepLatency
    from orchestra_jax.train import Run

    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    shutil.copy(Path(args.output_dir) / "tokenizer.json", out_dir / "tokenizer.json")  # the warm start's tokenizer
    cfg = base_cfg.replace(max_steps=args.steps, **{"grpo.max_staleness": lag, "guard.enabled": False,
                                                   "rollout.tool_workers": args.tool_workers,
                                                   "checkpoint.every": 10 ** 6, "checkpoint.async_save": False})
    r = Run(cfg, output_dir=out_dir)

    def wrap(env):
        return SleepLatency(env, scale=args.sleep_latency, min_s=args.min_sleep, max_s=args.max_sleep)

    r.wrap_envs(wrap)
    try:
        r.grpo(params, None)  # a copy per run: the update donates its state's buffers
    finally:
        r.close()
    recs = [json.loads(x) for x in (out_dir / "metrics.jsonl").read_text().splitlines()]
    recs = [x for x in recs if x["phase"] == "grpo"]
    first = lag  # 0-based: the first k + 1 steps' rollouts all start at once, so steady state begins after them
    span = recs[-1]["time_s"] - recs[first]["time_s"]
    return {"max_staleness": lag, "steps": len(recs), "steady_steps": len(recs) - 1 - first, "steady_s": round(span, 1),
            "steps_per_hour": round(3600 * (len(recs) - 1 - first) / span, 1),
            "rollout_s_mean": round(float(np.mean([x["rollout_s"] for x in recs[1:]])), 2),
            "wait_s_mean": round(float(np.mean([x.get("rollout_wait_s", x["rollout_s"]) for x in recs[1:]])), 2),
            "step_s_mean": round(float(np.mean([x["step_s"] for x in recs[1:]])), 2),
            "staleness": [x.get("staleness", 0) for x in recs],
            "success_rate": round(float(np.mean([x["success_rate"] for x in recs])), 3),
            "is_weight_mean": (round(float(np.mean([x["is_weight"] for x in recs if "is_weight" in x])), 4)
                               if any("is_weight" in x for x in recs) else None)}


def run(args) -> dict:
    from bench_rollout_slots import main_job_step

    cfg, r, params, sft_s, _, _ = main_job_step(args.sft_steps, args.output_dir, 0)
    r.close()
    out = {"preset": "tiny-toolscale", "sft_steps": cfg.sft.steps, "steps": args.steps,
           "sleep_latency": args.sleep_latency, "min_sleep": args.min_sleep, "max_sleep": args.max_sleep,
           "tool_workers": args.tool_workers, "load_before": os.getloadavg()[0], "runs": []}
    import jax
    import jax.numpy as jnp

    for lag in args.staleness:
        out["runs"].append(train_steps(cfg, jax.tree.map(jnp.copy, params), lag, args,
                                       Path(args.output_dir) / f"staleness-{lag}"))
    out["load_after"] = os.getloadavg()[0]
    ref = next((x for x in out["runs"] if x["max_staleness"] == 0), None)
    for x in out["runs"]:
        x["speedup"] = round(x["steps_per_hour"] / ref["steps_per_hour"], 2) if ref else None
    return out


def table(out: dict) -> str:
    lines = [f"tiny-toolscale from its {out['sft_steps']}-step warm start, {out['steps']} GRPO steps per run; each env "
             f"step sleeps its simulated latency x {out['sleep_latency']}, clipped to [{out['min_sleep']}, "
             f"{out['max_sleep']}] s (`orchestra_gym.wrappers.SleepLatency`); {out['tool_workers']} env-step threads "
             "shared by the rollouts in flight.", "",
             "| grpo.max_staleness | steps/hour (steady) | x synchronous | step s | rollout s | trainer waited s | "
             "staleness per step | success (sampled) | mean IS weight |",
             "|---|---|---|---|---|---|---|---|---|"]
    for x in out["runs"]:
        lines.append(f"| {x['max_staleness']} | {x['steps_per_hour']} | {x['speedup']} | {x['step_s_mean']} | "
                     f"{x['rollout_s_mean']} | {x['wait_s_mean']} | {x['staleness']} | {x['success_rate']} | "
                     f"{x['is_weight_mean'] if x['is_weight_mean'] is not None else '-'} |")
    lines += ["", f"Steady state: the steps after step k + 1 of {out['steps']} (the compiles and the k + 1 rollouts "
              "launched together at the start excluded). Load average (1 min) "
              f"{out['load_before']:.2f} before, {out['load_after']:.2f} after."]
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sft-steps", type=int, default=None, help="warm-start steps (default: the preset's)")
    p.add_argument("--steps", type=int, default=10, help="GRPO steps per run (> 1 + the largest --staleness)")
    p.add_argument("--staleness", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--sleep-latency", type=float, default=0.1, help="seconds slept per simulated second")
    p.add_argument("--min-sleep", type=float, default=0.5)
    p.add_argument("--max-sleep", type=float, default=3.0)
    p.add_argument("--tool-workers", type=int, default=128, help="env-step threads (rollout.tool_workers)")
    p.add_argument("--output-dir", default="runs/bench-async-grpo")
    p.add_argument("--json", default="")
    p.add_argument("--record", action="store_true")
    args = p.parse_args(argv)
    if args.steps < 2 + max(args.staleness):
        p.error("--steps must be > 1 + the largest --staleness (steady state starts after step k + 1)")
    out = run(args)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    from _record import report
    report(table(out), record=args.record, title="Asynchronous GRPO, steps per hour (issue 36 item 3)",
           script="bench_async_grpo.py", argv=argv, note="The 2-core machine (AMD EPYC) is shared with another "
           "agent's work: seconds are loaded (load averages above); the runs ran one after the other in one process "
           "from the same warm start, on the same steps' tasks and seeds.")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
