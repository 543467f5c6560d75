"""Idle-slot fraction of today's lockstep multi-turn rollout on the main job's workload (issue 36, "before").

Builds the main job's run (`orchestra train --preset tiny-toolscale`: `orchestra_jax.train.Run`), its
supervised warm start (`Run.sft`, `--sft-steps` of them; the preset's 1200 by default), then collects the
rollouts of GRPO step `--step` exactly as `Run.grpo` does (same task preferences, env seeds, sampler PRNG;
`orchestra_jax.rollout.collect_rollouts`, the sampled rows only; the scripted guides do not decode) with
the sampler behind a recording proxy. The engine is not changed: the proxy forwards every call.

Per `generate` call (one assistant turn of the whole batch) with B rows, the batch runs
steps = max over rows of the tokens generated (the decode loop stops when every row is done), so it
spends B x steps row-decode-steps, of which
  busy    = tokens generated (a row decoding its own turn),
  waiting = steps - own tokens, for a row still in its episode that finished this turn early
            (it waits for the slowest row of the batch, then for the batch's tool calls),
  ended   = steps, for a row whose episode has ended (inactive) and still holds its slot.
idle fraction = (waiting + ended) / all row-decode-steps. Also reported: the wall time inside `generate`
against the time outside it (env resets and steps, prefill, extends) over the collection.

With `--continuous S1,S2,...` (issue 36 item 1, "after") the same rollouts are collected in one process
with the lockstep engine and with the continuous one (`collect_rollouts(engine="continuous", slots=S)`,
`orchestra_jax.slots.SlotSampler`; 0 = one slot per row), each once untimed (compiles) and then `--repeats`
times timed, alternating; per engine: the best rollout wall time, useful tokens/s (tokens the policy generated
/ that wall), the idle-slot fraction (lockstep: as above; continuous: slot-decode-steps in which a slot was
not decoding its own turn, `RolloutStats.slot_steps` / `busy_slot_steps`), and the ratio to lockstep.

Usage: PYTHONPATH=. python benchmarks/bench_rollout_slots.py [--sft-steps 1200] [--step 0]
       [--output-dir runs/rollout-slots] [--continuous 0,16] [--repeats 2] [--record]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from orchestra_jax.rollout_slots import RecordingSampler, slot_accounting


def main_job_step(sft_steps: int | None, output_dir: str, step: int):
    """The main job's run (preset tiny-toolscale) after its warm start (`sft_steps`, None = the preset's;
    resumed from `output_dir` when there) and GRPO step `step`'s rollout inputs, as `Run.grpo` makes them.
    Returns (cfg, run, params, warm-start seconds, per-group reset options, sampled rollouts per task)."""
    from orchestra_jax.train import Run
    from orchestra_jax.train_config import TrainConfig

    cfg = TrainConfig.preset("tiny-toolscale")
    if sft_steps is not None:
        cfg = cfg.replace(**{"sft.steps": sft_steps})
    r = Run(cfg, output_dir=output_dir)
    t = time.perf_counter()
    params = r.sft()
    sft_s = time.perf_counter() - t
    pref_rng = np.random.default_rng([cfg.seed, step, 17])  # as Run.grpo
    options = [cfg.reset_options(preference=cfg.sample_preference(pref_rng)) for _ in range(cfg.rollout.tasks_per_step)]
    return cfg, r, params, sft_s, options, cfg.rollout.rollouts_per_task - len(cfg.rollout.guide_experts)


def step_collector(cfg, r, options, per_task: int, step: int):
    """collect(sampler, **engine options) -> (trajectories, stats, seconds): GRPO step `step`'s sampled rollouts
    of the main job as `Run.grpo` collects them (`orchestra_jax.rollout.collect_rollouts`)."""
    from orchestra_jax.rollout import collect_rollouts
    from orchestra_jax.rollout_source import step_seed

    def collect(sampler, **kw):
        t = time.perf_counter()
        trajs, stats = collect_rollouts(
            sampler, r.tok, r.envs[:cfg.rollout.tasks_per_step * per_task], options, rollouts_per_task=per_task,
            seed=step_seed(cfg.seed, step), max_new_tokens=cfg.rollout.max_new_tokens,
            max_seq_len=cfg.rollout.max_seq_len, temperature=cfg.rollout.temperature, max_turns=cfg.env.max_turns,
            executor=r.pool, **kw)
        return trajs, stats, time.perf_counter() - t

    return collect


def run(args) -> dict:
    s = args.step
    cfg, r, params, sft_s, options, per_task = main_job_step(args.sft_steps, args.output_dir, s)
    rec = RecordingSampler(r.sampler(params))
    trajs, stats, wall = step_collector(cfg, r, options, per_task, s)(rec)
    acc = slot_accounting(rec.calls)
    turns = np.asarray([t.turns for t in trajs])
    return {"preset": "tiny-toolscale", "sft_steps": cfg.sft.steps, "sft_s": round(sft_s, 1), "grpo_step": s,
            "rows": len(trajs), "episode_turns": {"min": int(turns.min()), "mean": float(turns.mean()),
                                                 "max": int(turns.max())},
            "generated_tokens": stats.generated_tokens, "cut": stats.cut, "rollout_s": round(wall, 2),
            "generate_s": round(rec.generate_s, 2), "outside_generate_s": round(wall - rec.generate_s, 2),
            "useful_tokens_per_s": stats.generated_tokens / wall, **acc}


def table(out: dict) -> str:
    lines = [f"tiny-toolscale, GRPO step {out['grpo_step']}'s sampled rollouts after a {out['sft_steps']}-step warm start: "
             f"{out['rows']} rows (16 tasks x 5 sampled; the 3 guides per task do not decode), episode turns "
             f"{out['episode_turns']['min']}-{out['episode_turns']['max']} (mean {out['episode_turns']['mean']:.2f}), "
             f"{out['generated_tokens']} tokens generated, {out['cut']} cut.", "",
             "| row-decode-steps | count | fraction |", "|---|---|---|"]
    for k in ("busy", "waiting", "ended"):
        lines.append(f"| {k} | {out[k]} | {out[k] / max(1, out['total']):.3f} |")
    lines += [f"| total | {out['total']} | idle = {out['idle_fraction']:.3f} |", "",
              "| turn | active rows / rows | steps | idle fraction |", "|---|---|---|---|"]
    for i, t in enumerate(out["turns"]):
        lines.append(f"| {i + 1} | {t['active_rows']} / {t['rows']} | {t['steps']} | {t['idle_fraction']:.3f} |")
    lines += ["", f"Rollout wall {out['rollout_s']} s: {out['generate_s']} s in generate, {out['outside_generate_s']} s "
              f"outside it (env resets and steps, prefill, extends); useful tokens/s {out['useful_tokens_per_s']:.1f}."]
    return "\n".join(lines)


def compare(args) -> dict:
    """Lockstep against continuous batching with the slot counts of `args.continuous`, in one process (see the
    module docstring). Returns the per-engine rows and the run's facts."""
    s = args.step
    cfg, r, params, sft_s, options, per_task = main_job_step(args.sft_steps, args.output_dir, s)
    sampler = r.sampler(params)
    collect = step_collector(cfg, r, options, per_task, s)
    engines = [("lockstep", {})] + [(f"continuous, {k or 'one per row'} slots", {"engine": "continuous", "slots": k})
                                    for k in args.continuous]
    for _, kw in engines:  # untimed: compiles
        collect(sampler, **kw)
    load_before = os.getloadavg()[0]
    rows: dict[str, dict] = {}
    for _ in range(args.repeats):
        for name, kw in engines:
            rec = RecordingSampler(sampler)
            trajs, stats, wall = collect(rec if not kw else sampler, **kw)
            if not kw:
                idle = slot_accounting(rec.calls)["idle_fraction"]
            else:
                idle = 1 - stats.busy_slot_steps / max(1, stats.slot_steps)
            turns = np.asarray([t.turns for t in trajs])
            row = rows.setdefault(name, {"walls": []})
            row["walls"].append(round(wall, 2))
            row.update(generated_tokens=stats.generated_tokens, idle_fraction=round(idle, 3), cut=stats.cut,
                       turns_mean=float(turns.mean()), turns_max=int(turns.max()), reprefills=stats.reprefills,
                       rows=len(trajs))
    for row in rows.values():
        row["rollout_s"] = min(row["walls"])
        row["useful_tokens_per_s"] = round(row["generated_tokens"] / row["rollout_s"], 1)
    base = rows["lockstep"]["useful_tokens_per_s"]
    for row in rows.values():
        row["tokens_per_s_ratio"] = round(row["useful_tokens_per_s"] / base, 2)
    r.close()
    return {"preset": "tiny-toolscale", "sft_steps": cfg.sft.steps, "sft_s": round(sft_s, 1), "grpo_step": s,
            "repeats": args.repeats, "load_before": load_before, "load_after": os.getloadavg()[0], "engines": rows}


def compare_table(out: dict) -> str:
    first = next(iter(out["engines"].values()))
    lines = [f"tiny-toolscale, GRPO step {out['grpo_step']}'s sampled rollouts ({first['rows']} rows) after a "
             f"{out['sft_steps']}-step warm start; each engine once untimed (compiles), then {out['repeats']} timed "
             "runs, alternating; the best wall is reported.", "",
             "| engine | rollout wall (s), runs | best | tokens generated | useful tokens/s | vs lockstep | idle-slot fraction | turns mean / max | cut | re-prefills |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, m in out["engines"].items():
        lines.append(f"| {name} | {', '.join(map(str, m['walls']))} | {m['rollout_s']} | {m['generated_tokens']} | "
                     f"{m['useful_tokens_per_s']} | {m['tokens_per_s_ratio']}x | {m['idle_fraction']:.3f} | "
                     f"{m['turns_mean']:.2f} / {m['turns_max']} | {m['cut']} | {m['reprefills']} |")
    lines += ["", f"Load average (1 min) {out['load_before']:.2f} before the timed runs, {out['load_after']:.2f} after."]
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sft-steps", type=int, default=None, help="warm-start steps (default: the preset's)")
    p.add_argument("--step", type=int, default=0, help="which GRPO step's rollouts (tasks, seeds)")
    p.add_argument("--output-dir", default="runs/rollout-slots")
    p.add_argument("--json", default="")
    p.add_argument("--record", action="store_true")
    p.add_argument("--continuous", type=lambda v: [int(x) for x in v.split(",")], default=None,
                   help="compare lockstep with continuous batching at these slot counts (0 = one per row)")
    p.add_argument("--repeats", type=int, default=2, help="with --continuous: timed runs per engine")
    args = p.parse_args(argv)
    if args.continuous is not None:
        out = compare(args)
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=1))
        from _record import report
        report(compare_table(out), record=args.record, title="Continuous batching (issue 36 item 1)",
               script="bench_rollout_slots.py", argv=argv, note="The 2-core machine (AMD EPYC) is shared with "
               "other agents: seconds are loaded (load averages above); all engines ran in the same process on the "
               "same rollouts' tasks and seeds; the slot counts do not depend on the load.")
        print(json.dumps(out))
        return
    out = run(args)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    from _record import report
    report(table(out), record=args.record, title="Rollout slots, lockstep (issue 36, before)",
           script="bench_rollout_slots.py", argv=argv, note="The 2-core machine (AMD EPYC) is shared with other "
           "agents: seconds are loaded; the row-decode-step counts do not depend on the load.")
    print(json.dumps({k: v for k, v in out.items() if k != "turns"}))

if __name__ == "__main__":
    main()
