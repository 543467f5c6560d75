"""Can a preference-adherence check be passed in this setting at all? The in-sample ceiling of every held-out set.

The main job's adherence check (ToolOrchestra Sec. 6.4 / Table 3 in miniature, `bench_orchestration.py`): under each
held-out preference P, the policy run under P must score higher under P than the same policy run under the other
preferences and than every fixed rule. Whether any policy can pass it depends on the setting, not on training: if
two preferences ask for the same routing, or a fixed rule already is the best routing under P, the margins the check
compares are 0 in expectation and it measures noise. This script bounds it without training anything:

* it plays every fixed rule (random, always expert-k, cascade) on ``--episodes`` held-out tasks in a setting (a
  preset or a run folder, with ``--set`` overrides as ``orchestra train`` takes them, and ``--expert`` overrides of
  the simulated experts' profile, e.g. ``expert-3.decode_tok_s=20`` for a slow self-hosted open model);
* for every vector of a grid of (cost, latency) weights (outcome 1) it fits the kind oracle (the best expert per
  request kind under the vector, chosen on these episodes: `orchestra_gym.evaluation.adherence.kind_oracle_routes`) and scores
  each vector's routing under every other vector (`orchestra_gym.evaluation.adherence.oracle_matrix`);
* a set of held-out vectors gets the ceiling ``min over P in the set of min(oracle(P) - best fixed rule under P,
  oracle(P) - routes of Q under P for Q in the set and the default)``: the largest margin by which any routing by
  request kind could pass the whole check (a policy routes by what it reads, so it cannot do better on average);
  the script ranks the sets of ``--size`` vectors of the grid by it and reports the configured set
  (``eval_preferences``) too, each with the comparison that sets its ceiling and that margin's standard error
  over the tasks (`binding`).

Scores are the group-form preference reward per task (`orchestra_gym.evaluation.group_preference_score`: the
paper's Sec. 3.2 reward of each episode in the group made of it and always expert-1, -2 and -3 on the same task).

Usage: python benchmarks/bench_preference_headroom.py [--preset tiny-toolscale | --checkpoint RUN] [--set K=V ...]
       [--expert NAME.FIELD=VALUE ...] [--episodes 500] [--size 3] [--top 5] [--json FILE] [--record]
Writes benchmarks/RESULTS.md only with --record.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym

import orchestra_gym  # noqa: F401  (registers the ids)
from orchestra_gym.agents import make_agent
from orchestra_gym.evaluation import EpisodeResult, group_preference_score, run_episodes, summarize
from orchestra_gym.tools.simulated import DEFAULT_EXPERTS, PROFILE_FIELDS, with_profiles

from orchestra_gym.evaluation.adherence import FIXED_AGENTS as FIXED
from orchestra_gym.evaluation.adherence import oracle_matrix
from orchestra_gym.evaluation.adherence import request_kind

COSTS = (0.0, 0.02, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
LATENCIES = (0.0, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
def expert_profiles(overrides: list[str], base: "dict[str, Any] | None" = None) -> dict[str, Any]:
    """``--expert`` items as the env's ``expert_profiles`` (`orchestra_gym.tools.simulated.with_profiles`), merged
    into `base` (a setting's own): ``NAME.FIELD=VALUE`` (FIELD a latency field of `PROFILE_FIELDS`) or
    ``NAME.accuracy.CATEGORY.DIFFICULTY=P``. Checked by building the pool.

    Raises: ValueError naming the item when it has neither form or `with_profiles` refuses it."""
    out = {n: {k: ({c: dict(t) for c, t in v.items()} if k == "accuracy" else v) for k, v in f.items()}
           for n, f in (base or {}).items()}
    for item in overrides:
        key, sep, value = item.partition("=")
        parts = key.strip().split(".")
        try:
            v = float(value)
        except ValueError:
            v = float("nan")
        prof = out.setdefault(parts[0], {})
        if sep and len(parts) == 4 and parts[1] == "accuracy":
            prof.setdefault("accuracy", {}).setdefault(parts[2], {})[parts[3]] = v
        elif sep and len(parts) == 2 and parts[1] != "accuracy":
            prof[parts[1]] = v
        else:
            raise ValueError(f"--expert {item!r}: expected NAME.FIELD=VALUE (FIELD one of "
                             f"{[f for f in PROFILE_FIELDS if f != 'accuracy']}, e.g. expert-3.decode_tok_s=20) or "
                             "NAME.accuracy.CATEGORY.DIFFICULTY=P (e.g. expert-3.accuracy.compute.hard=0.95)")
        try:
            with_profiles(DEFAULT_EXPERTS, {parts[0]: prof})
        except ValueError as e:
            raise ValueError(f"--expert {item!r}: {e}") from None
    return out


def play_fixed(cfg: Any, episodes: int) -> dict[str, list[EpisodeResult]]:
    """Every fixed rule of `orchestra_gym.evaluation.adherence.FIXED_AGENTS` on the run's held-out tasks in `cfg`'s setting (its env
    kwargs, ``expert_profiles`` included, and reset options)."""
    from orchestra_jax.evaluation import held_out_tasks

    kwargs = cfg.make_env_kwargs()
    options, tasks = cfg.reset_options(), held_out_tasks(episodes)
    return {name: run_episodes(lambda: gym.make(cfg.env.id, **kwargs), lambda s, name=name: make_agent(name, seed=s),
                               0, task_ids=tasks, options=options) for name in FIXED}


def vector_name(cost: float, latency: float) -> str:
    """``"cost 5, latency 0"``: a grid vector's name (outcome weight 1)."""
    return f"cost {cost:g}, latency {latency:g}"


def ceilings(played: dict[str, list[EpisodeResult]], preferences: dict[str, dict[str, float]], default: str,
             sets: "list[tuple[str, ...]]") -> tuple[dict[str, Any], list[tuple[float, tuple[str, ...]]]]:
    """Per-vector margins and the ceiling of each candidate set (see the module docstring).

    Args:
        played: `play_fixed`'s episodes (the experts' are the group references and the oracle's choices).
        preferences: name -> weights dict, the default's included.
        default: the default preference's name (a member of every set's comparison, not of the sets).
        sets: the candidate held-out sets (tuples of names of `preferences`, default excluded).

    Returns: ``(table, ranked)``: table[name] = {"oracle", "best_fixed", "over_best_fixed", "over_default",
    "routes"}; ranked = [(ceiling, set)] best first. Scores are per task."""
    experts = {e: played[e] for e in ("expert-1", "expert-2", "expert-3")}
    references = list(experts.values())
    n = len(played["expert-1"])
    routes, score = oracle_matrix(experts, references, preferences)
    table = {}
    for p, pref in preferences.items():
        fixed = {f: group_preference_score(played[f], references, pref) / n for f in FIXED}
        best = max(fixed, key=fixed.get)
        table[p] = {"oracle": score[p][p], "best_fixed": best, "over_best_fixed": score[p][p] - fixed[best],
                    "over_default": score[p][p] - score[p][default], "routes": routes[p]}
    ranked = []
    for s in sets:
        ranked.append((min(min(table[p]["over_best_fixed"], table[p]["over_default"],
                               *[score[p][p] - score[p][q] for q in s if q != p]) for p in s), tuple(s)))
    ranked.sort(key=lambda t: -t[0])
    return table, ranked


def binding(played: dict[str, list[EpisodeResult]], preferences: dict[str, dict[str, float]], default: str,
            table: dict[str, Any], members: "tuple[str, ...]") -> dict[str, Any]:
    """The comparison that sets a held-out set's ceiling, with the standard error of its margin over the tasks.

    Returns {"preference": P, "against": a member's or the default's name, or a fixed rule's, "margin": the
    per-task mean of the paired score differences under P (= the ceiling), "se": their standard error (sample
    standard deviation / sqrt(tasks))}: a margin within about two standard errors of 0 is one that even the
    in-sample kind oracle does not show above the noise of these tasks."""
    import math

    import numpy as np

    experts = {e: played[e] for e in ("expert-1", "expert-2", "expert-3")}
    references = list(experts.values())
    first = played["expert-1"]
    n = len(first)

    def per_task(picked: list[EpisodeResult], pref: dict[str, float]) -> "np.ndarray":
        return np.array([group_preference_score([picked[i]], [[ref[i]] for ref in references], pref) for i in range(n)])

    def routed(name: str) -> list[EpisodeResult]:
        routes = table[name]["routes"]
        return [experts[routes[request_kind(r)]][i] for i, r in enumerate(first)]

    worst = None
    for p in members:
        own = table[p]["oracle"]
        rivals = {table[p]["best_fixed"]: own - table[p]["over_best_fixed"], default: own - table[p]["over_default"]}
        for q in members:
            if q != p:
                rivals[q] = per_task(routed(q), preferences[p]).mean()
        against = max(rivals, key=rivals.get)
        if worst is None or own - rivals[against] < worst[2]:
            worst = (p, against, own - rivals[against])
    p, against, _ = worst
    mine = per_task(routed(p), preferences[p])
    theirs = per_task(played[against] if against in played else routed(against), preferences[p])
    d = mine - theirs
    return {"preference": p, "against": against, "margin": float(d.mean()), "se": float(d.std(ddof=1) / math.sqrt(n))}


def main(argv: list[str] | None = None) -> int:
    from orchestra_jax.cli import apply_sets
    from orchestra_jax.train_config import TrainConfig

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = p.add_mutually_exclusive_group()
    g.add_argument("--preset", default="tiny-toolscale", help="the setting of this preset (default tiny-toolscale)")
    g.add_argument("--checkpoint", type=Path, default=None, help="the setting of this `orchestra train` run folder")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="a config override, as `orchestra train --set` takes it")
    p.add_argument("--expert", action="append", default=[], metavar="NAME.FIELD=VALUE",
                   help="a simulated expert's profile override, added to the setting's expert_profiles (FIELD: "
                   f"{', '.join(f for f in PROFILE_FIELDS if f != 'accuracy')}; or NAME.accuracy.CATEGORY.DIFFICULTY=P)")
    p.add_argument("--episodes", type=int, default=500, help="held-out tasks (default 500)")
    p.add_argument("--size", type=int, default=3, help="held-out vectors per set (default 3)")
    p.add_argument("--top", type=int, default=5, help="sets to list (default 5)")
    p.add_argument("--json", type=Path, default=None, help="write the measurement here (JSON)")
    p.add_argument("--record", action="store_true", help="append the tables to benchmarks/RESULTS.md")
    p.add_argument("--pool", default=None, help="an expert pool (e.g. specialists): measure it instead of the preset "
                   "(orchestra_gym.evaluation.pools's setting; held-out set: accuracy / cost / latency first)")
    p.add_argument("--schedule", default=None, help="with --pool: comma-separated pricing schedules (paper, "
                   "deepinfra, random; default paper,random)")
    p.add_argument("--preferences", default=None, help="with --pool: JSON {name: {outcome, cost, latency}} with a "
                   "'default' key: the default and held-out preferences to measure (default: the preset's)")
    p.add_argument("--setting", default="default", help="with --pool: default, unseen-experts or unseen-pricing")
    args = p.parse_args(argv)
    if args.pool:
        return pool_main(args, argv)
    if args.checkpoint is not None:
        cfg = TrainConfig.from_dict(json.loads((args.checkpoint / "train_config.json").read_text()))
    else:
        cfg = TrainConfig.preset(args.preset)
    cfg = apply_sets(cfg, args.sets)
    if args.expert:
        profiles = expert_profiles(args.expert, cfg.env.kwargs.get("expert_profiles"))
        cfg = cfg.replace(**{"env.kwargs": {**cfg.env.kwargs, "expert_profiles": profiles}})
    played = play_fixed(cfg, args.episodes)
    default = dict(cfg.env.preference)
    grid = {vector_name(c, lat): {"outcome": 1.0, "cost": c, "latency": lat} for c in COSTS for lat in LATENCIES}
    configured = {k: dict(v) for k, v in cfg.env.eval_preferences.items()}
    preferences = {"default": default, **configured, **{k: v for k, v in grid.items() if v != default}}
    held = [k for k in grid if k in preferences]
    sets = list(itertools.combinations(held, args.size))
    if len(configured) >= 1:
        sets.append(tuple(configured))
    table, ranked = ceilings(played, preferences, "default", sets)

    lines = [f"Setting: {args.checkpoint or args.preset} {' '.join(args.sets)} {' '.join(args.expert)}".rstrip()
             + f"; {args.episodes} held-out tasks; default preference {default}", "",
             "| fixed rule | success | cost ¢/task | latency s/task |", "|---|---|---|---|"]
    for name, res in played.items():
        s = summarize(res)
        lines.append(f"| {name} | {s['success_rate']:.3f} | {100 * s['mean_cost_usd']:.3f} | {s['mean_latency_s']:.1f} |")
    lines += ["", "Per vector: the kind oracle's score, its margin over the best fixed rule and over the default's "
              "routing (both under the vector), and the routes that differ from the default's.", "",
              "| vector | kind oracle | best fixed rule | margin over it | margin over the default's routes | "
              "routes that differ |", "|---|---|---|---|---|---|"]
    base = table["default"]["routes"]
    for name in [*configured, *held]:
        t = table[name]
        diff = {k: r for k, r in t["routes"].items() if base.get(k) != r}
        lines.append(f"| {name} | {t['oracle']:.3f} | {t['best_fixed']} | {t['over_best_fixed']:+.3f} | "
                     f"{t['over_default']:+.3f} | {diff or '-'} |")
    lines += ["", f"Sets of {args.size} held-out vectors by ceiling (the most by which any routing by request kind "
              "can pass the adherence check under every vector of the set):", ""]
    def line(c: float, s: "tuple[str, ...]") -> str:
        b = binding(played, preferences, "default", table, s)
        return (f"{c:+.3f} (set by {b['preference']} against {b['against']}: {b['margin']:+.3f} +- {b['se']:.3f}, "
                f"one standard error over the tasks)")

    lines += [f"- {line(c, s)}: {' / '.join(s)}" for c, s in ranked[:args.top]]
    if configured:
        mine = next(c for c, s in ranked if s == tuple(configured))
        lines += ["", f"Configured set ({' / '.join(configured)}): ceiling {line(mine, tuple(configured))}"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.json:
        args.json.write_text(json.dumps({"table": table, "ranked": ranked[:max(args.top, 50)]}, indent=1, default=float))
    if args.record:
        from _record import append_section, command

        append_section("Preference headroom", command("bench_preference_headroom.py", argv), text)
    return 0


def pool_main(args: Any, argv: "list[str] | None") -> int:
    """``--pool``: the kind oracle against the stated-property rules and the adherence ceiling (orchestra_gym.evaluation.pools.headroom)."""
    from orchestra_gym.evaluation import pools as pb

    prefs = json.loads(args.preferences) if args.preferences else pb.preferences(args.pool)
    if "default" not in prefs:
        raise SystemExit(f"--preferences needs a 'default' key (the preference the episodes are played under); "
                         f"got {sorted(prefs)}")
    schedules = args.schedule.split(",") if args.schedule else None
    played = pb.play_setting(args.pool, args.setting, args.episodes, prefs["default"], schedules)
    h = pb.headroom(played, prefs)
    lines = [f"Pool {args.pool}, setting {args.setting}, schedules {schedules or pb.SETTINGS[args.setting]['pricing_schedules']}"
             f", offers of {pb.OFFER_SIZE[0]}-{pb.OFFER_SIZE[1]} experts; {args.episodes} held-out tasks", "",
             "| fixed rule | success | cost ¢/task | latency s/task |", "|---|---|---|---|"]
    lines += [f"| {r} | {v['success']:.3f} | {v['cost_c']:.3f} | {v['latency_s']:.1f} |" for r, v in h["rules"].items()]
    lines += ["", "| preference | kind oracle score | its success / cost ¢ / latency s | best fixed rule (score) | "
              "margins (mean +- s.e.) |", "|---|---|---|---|---|"]
    for p, v in h["per_preference"].items():
        r = v["kind_oracle_row"]
        ms = ", ".join(f"{q} {m['margin']:+.3f} +- {m['se']:.3f}" for q, m in v["margins"].items())
        lines.append(f"| {p} | {v['kind_oracle']:.3f} | {r['success']:.3f} / {r['cost_c']:.3f} / {r['latency_s']:.1f} | "
                     f"{v['best_fixed']} ({v['best_fixed_score']:.3f}) | {ms} |")
    b = h["binding"]
    lines += ["", f"Ceiling for the held-out set ({' / '.join(p for p in prefs if p != 'default')}): {h['ceiling']:+.3f} "
              f"(set by {b['preference']} against {b['against']}, s.e. {b['se']:.3f}; goal >= +0.050)"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.json:
        args.json.write_text(json.dumps(h, indent=1, default=float))
    if args.record:
        from _record import append_section, command

        append_section("Preference headroom over an expert pool", command("bench_preference_headroom.py", argv), text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
