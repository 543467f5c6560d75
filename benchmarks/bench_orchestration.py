"""Does a trained run orchestrate? Its policy against every fixed routing rule and the router, in its own setting.

The main job's claim (ToolOrchestra Table 1 / Fig. 6 in miniature): on held-out tasks the trained policy lies
above the accuracy-cost hull of the fixed strategies (random, always expert-k, cheapest-first cascade) at its own
cost, is not dominated by any of them, and follows the preference vector it is given (Table 3). This script
measures that for one ``orchestra train`` run folder, in the run's own setting (env kwargs, tools exposed, turns,
preference; `TrainConfig.make_env_kwargs` / `reset_options`), on the run's held-out tasks
(`orchestra_jax.evaluation.held_out_tasks`: ToolScale seeds 2^31, 2^31 + 1, ...):

* rows: random, expert-k, cascade, router (`orchestra_gym.evaluation.fit.fit_router`: a lookup from the task's
  category and difficulty to one expert, fitted on ``--router-tasks`` training tasks with seeds from 10^6; the
  classical router of RouterBench / RouteLLM; it reads the generator's labels, which the policy never sees) and
  the trained policy (`orchestra_jax.agents.evaluate_run`, the trainer's batched evaluation at the run's
  eval_temperature), each with success, cost (cents per task), latency (s per task);
* hull gap of each row: success minus the hull of the fixed rules at the row's cost (`evaluation.hull_gap`), and
  whether a fixed rule dominates it (higher success at lower cost);
* AIQ (RouterBench): the area under the non-decreasing hull of {fixed rules}, {fixed rules + router} and
  {fixed rules + the policy under every preference}, over costs [0, the dearest row];
* preference adherence: the policy under each held-out preference of the run (``eval_preferences``) and the
  default, with its valid tool-call format (`orchestra_jax.evaluation.episode_summary`); for each preference P,
  the mean preference reward under P in the group form (`evaluation.group_preference_score`: the paper's
  Sec. 3.2 reward of each episode in the group made of it and always expert-1, -2 and -3 on the same task,
  the utility training maximises) of the policy run under P, of the same policy run under the other
  preferences, and of every fixed rule; the single-baseline App. L form (`evaluation.preference_score`,
  normalised by always expert-1) is reported beside it; and whether success, cost and latency moved from the
  default's the way each preference asks (`evaluation.asked_moves`: a larger cost weight asks for a lower cost, a
  larger latency weight for a lower latency, smaller ones for a higher success); and each preference's headroom:
  the best routing by request kind under it (`kind_oracle_routes`, chosen on the fixed rules' own episodes)
  against the default's best routing, both scored under it, i.e. how much following it can earn in this setting,
  and that routing's margin over the best fixed rule under it (whether "beats every fixed rule" is reachable) and
  over the kind oracles of the other preferences scored under it (`oracle_matrix`; whether "beats the same policy
  under the other preferences" is), with the smallest of these margins as the check's ceiling under it.

Usage: python benchmarks/bench_orchestration.py --checkpoint RUN_DIR [--episodes 500] [--router-tasks 300]
       [--plot PNG] [--record]
       python benchmarks/bench_orchestration.py --pool specialists [--episodes 500] [--json OUT] [--plot DIR] (expert pools,
       issue 34: settings default / unseen-experts / unseen-pricing, fixed rules on stated properties, text and
       oracle routers, adherence; orchestra_gym.evaluation.pools, also `orchestra report --pool`)
Writes benchmarks/RESULTS.md only with --record.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym

import orchestra_gym  # noqa: F401  (registers the ids)
from orchestra_gym.agents import make_agent
from orchestra_gym.evaluation import (EpisodeResult, aiq, asked_moves, cost_accuracy_hull, group_preference_score,
                                      hull_gap, moves_as_asked, pools, preference_score, run_episodes, summarize)
from orchestra_gym.evaluation.adherence import FIXED_AGENTS, oracle_matrix
from orchestra_gym.evaluation.fit import fit_router

FIXED = FIXED_AGENTS
ROUTER_SEED = 1_000_000  # training tasks of the router (the evaluation's start at 2^31)


def _row(name: str, results: list[EpisodeResult]) -> dict[str, Any]:
    s = summarize(results)
    return {"agent": name, "episodes": s["episodes"], "success": s["success_rate"],
            "cost_cents": 100.0 * s["mean_cost_usd"], "latency_s": s["mean_latency_s"],
            "expert_calls": {k: round(v, 2) for k, v in s["tool_calls"].items() if k.startswith("expert-")}}


def measure(run_dir: Path, episodes: int, router_tasks: int) -> dict[str, Any]:
    """Every row, the hull gaps, AIQ and the preference table of one run (see the module docstring)."""
    from orchestra_jax.agents import evaluate_run
    from orchestra_jax.evaluation import episode_summary, held_out_tasks
    from orchestra_jax.train_config import TrainConfig

    cfg = TrainConfig.from_dict(json.loads((run_dir / "train_config.json").read_text()))
    kwargs, options = cfg.make_env_kwargs(), cfg.reset_options()
    tasks = held_out_tasks(episodes)

    def make_env() -> gym.Env:
        return gym.make(cfg.env.id, **kwargs)

    played: dict[str, list[EpisodeResult]] = {}
    for name in FIXED:
        played[name] = run_episodes(make_env, lambda s, name=name: make_agent(name, seed=s), 0, task_ids=tasks,
                                    options=options)
        print(f"  {name}: {_row(name, played[name])}", file=sys.stderr)
    router, fit = fit_router(make_env, ["expert-1", "expert-2", "expert-3"], router_tasks, seed=ROUTER_SEED,
                             options=options)
    played["router"] = run_episodes(make_env, lambda s: router, 0, task_ids=tasks, options=options)
    preferences = {"default": dict(cfg.env.preference), **{k: dict(v) for k, v in cfg.env.eval_preferences.items()}}
    policy: dict[str, list[EpisodeResult]] = {}
    valid_format: dict[str, float] = {}
    for pname, pref in preferences.items():
        env_task_ids = [r.task_id for r in played["expert-1"]]  # the same tasks, in order
        trajs = evaluate_run(run_dir, tasks, preference=pref)
        valid_format[pname] = episode_summary(trajs)["valid_format_rate"]
        policy[pname] = [t.episode(task) for task, t in zip(env_task_ids, trajs)]
        print(f"  policy ({pname}): {_row('policy', policy[pname])}", file=sys.stderr)
    played["trained policy"] = policy["default"]

    rows = [_row(name, res) for name, res in played.items()]
    fixed_points = [(r["cost_cents"], r["success"]) for r in rows if r["agent"] in FIXED]
    for r in rows:
        r["hull_gap"] = hull_gap(r["success"], r["cost_cents"], fixed_points)
        r["dominated_by"] = [f["agent"] for f in rows if f["agent"] in FIXED and f is not r
                             and f["success"] > r["success"] and f["cost_cents"] < r["cost_cents"]]
    policy_points = [(100.0 * summarize(res)["mean_cost_usd"], summarize(res)["success_rate"]) for res in policy.values()]
    top = max([c for c, _ in fixed_points + policy_points] + [rows[-1]["cost_cents"]])
    router_row = next(r for r in rows if r["agent"] == "router")
    aiqs = {
        "fixed rules": aiq(fixed_points, (0.0, top)),
        "fixed rules + router": aiq(fixed_points + [(router_row["cost_cents"], router_row["success"])], (0.0, top)),
        "fixed rules + trained policy (all preferences)": aiq(fixed_points + policy_points, (0.0, top)),
    }
    adherence = []
    baseline = played["expert-1"]
    references = [played[e] for e in ("expert-1", "expert-2", "expert-3")]
    held_out = [k for k in preferences if k != "default"]
    n = len(tasks)
    for pname, pref in preferences.items():
        def score(res: list[EpisodeResult], pref: dict[str, Any] = pref) -> float:
            return group_preference_score(res, references, pref) / n

        entry = {"preference": pname, "vector": pref,
                 "policy_under_it": score(policy[pname]),
                 "policy_under_others": {o: score(policy[o]) for o in preferences if o != pname},
                 "fixed": {f: score(played[f]) for f in FIXED},
                 "router": score(played["router"]),
                 "app_l_baseline": {"policy_under_it": preference_score(policy[pname], baseline, pref) / n,
                                    "policy_under_others": {o: preference_score(policy[o], baseline, pref) / n
                                                            for o in preferences if o != pname},
                                    "fixed": {f: preference_score(played[f], baseline, pref) / n for f in FIXED}},
                 "valid_format": valid_format[pname],
                 **{k: v for k, v in _row("policy", policy[pname]).items() if k in ("success", "cost_cents", "latency_s")}}
        entry["beats_other_preferences"] = all(entry["policy_under_it"] > v for o, v in entry["policy_under_others"].items()
                                               if o in held_out)
        entry["beats_default"] = pname == "default" or entry["policy_under_it"] > entry["policy_under_others"]["default"]
        entry["beats_fixed"] = all(entry["policy_under_it"] > v for v in entry["fixed"].values())
        adherence.append(entry)
    # how much following each preference can earn here at all: the kind oracle fitted to P against the
    # kind oracle fitted to each other preference (the default's too), all scored under P (0: the setting
    # does not reward telling P from that preference), and against the best fixed rule under P
    experts = {e: played[e] for e in ("expert-1", "expert-2", "expert-3")}
    routes, oracle = oracle_matrix(experts, references, preferences)
    for e in adherence:
        p = e["preference"]
        e["kind_oracle"] = {"routes": routes[p], "score": oracle[p][p], "default_routes_score": oracle[p]["default"],
                            "over_other_preferences": {q: oracle[p][p] - oracle[p][q] for q in preferences if q != p}}
        e["kind_oracle"]["headroom"] = e["kind_oracle"]["score"] - e["kind_oracle"]["default_routes_score"]
        best_fixed = max(e["fixed"], key=e["fixed"].get)  # can any policy beat every fixed rule under P?
        e["kind_oracle"]["best_fixed"] = best_fixed
        e["kind_oracle"]["over_best_fixed"] = e["kind_oracle"]["score"] - e["fixed"][best_fixed]
        # the in-sample ceiling of the whole check under P: the smallest of the margins a kind router
        # could show over the best fixed rule and over its own routing under any other preference
        e["kind_oracle"]["ceiling"] = min([e["kind_oracle"]["over_best_fixed"],
                                           *e["kind_oracle"]["over_other_preferences"].values()])
    default_entry = next(e for e in adherence if e["preference"] == "default")
    for e in adherence:  # the metrics move from the default's the way each preference asks (Sec. 6.4)
        e["asked"] = {} if e is default_entry else asked_moves(e["vector"], default_entry["vector"])
        e["moves_as_asked"] = moves_as_asked(e, default_entry, e["asked"])
    return {"run": str(run_dir), "episodes": episodes, "rows": rows, "hull": cost_accuracy_hull(fixed_points),
            "aiq_cost_range_cents": [0.0, top], "aiq": aiqs, "router_fit": fit, "adherence": adherence}


def markdown(m: dict[str, Any]) -> str:
    """The result as Markdown tables (rows with hull gap; AIQ; preference adherence)."""
    out = [f"Run `{m['run']}`, {m['episodes']} held-out tasks; hull of the fixed rules (cents, success): "
           + ", ".join(f"({c:.3f}, {a:.3f})" for c, a in m["hull"]), "",
           "| agent | success | cost ¢/task | latency s/task | hull gap (points) | dominated by | expert calls per task |",
           "|---|---|---|---|---|---|---|"]
    for r in m["rows"]:
        out.append(f"| {r['agent']} | {r['success']:.3f} | {r['cost_cents']:.3f} | {r['latency_s']:.1f} | "
                   f"{100 * r['hull_gap']:+.1f} | {', '.join(r['dominated_by']) or '-'} | {r['expert_calls']} |")
    lo, hi = m["aiq_cost_range_cents"]
    out += ["", f"AIQ over [{lo:g}, {hi:.3f}] cents: " + "; ".join(f"{k} {v:.3f}" for k, v in m["aiq"].items()),
            f"Router: cost weight {m['router_fit']['cost_weight']:g} per USD, table {m['router_fit']['table']}", "",
            "Preference adherence. Score: the mean preference reward of the paper (Sec. 3.2) in the group made of "
            "the episode and the fixed experts' episodes on the same task (`evaluation.group_preference_score`); "
            "\"others\" are the other held-out preferences; the single-baseline App. L form (normalised by always "
            "expert-1) follows in brackets.", "",
            "| preference | vector | policy success | cost ¢ | latency s | valid format | score (policy under it) "
            "| under the others | best fixed rule | router | beats others / default / fixed | asked of the default's "
            "metrics: met |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for e in m["adherence"]:
        best = e["kind_oracle"]["best_fixed"]  # the best fixed rule under P (measure)
        others = ", ".join(f"{k} {v:.3f}" for k, v in e["policy_under_others"].items())
        b = e["app_l_baseline"]
        bbest = max(b["fixed"], key=b["fixed"].get)
        out.append(f"| {e['preference']} | {e['vector']} | {e['success']:.3f} | {e['cost_cents']:.3f} | "
                   f"{e['latency_s']:.1f} | {e['valid_format']:.1%} | {e['policy_under_it']:.3f} "
                   f"({b['policy_under_it']:.3f}) | {others} | {best} {e['fixed'][best]:.3f} ({bbest} {b['fixed'][bbest]:.3f}) | "
                   f"{e['router']:.3f} | {e['beats_other_preferences']} / {e['beats_default']} / {e['beats_fixed']} | "
                   f"{', '.join(f'{k} {v}' for k, v in e['asked'].items()) or '-'}: {e['moves_as_asked']} |")
    out += ["", "Headroom of each preference in this setting: the best expert per request kind under P (chosen on these "
            "episodes, `kind_oracle_routes`) scored under P, against the default's best routing scored under P; "
            "a headroom near 0 means no routing by kind earns more by following P. The margin over the best fixed "
            "rule under P says whether beating every fixed rule under P is within reach of routing by kind at all "
            "(near 0 or below: only a policy that routes like the oracle, or better than by kind, can). The margin over "
            "its routes under the others is the kind oracle fitted to P against the one fitted to each other "
            "preference, both scored under P (`oracle_matrix`); the ceiling is the smallest of these margins: the "
            "most by which any routing by kind can pass the whole adherence check under P (near 0: P asks for what "
            "another preference or a fixed rule already does, and the check measures noise).", "",
            "| preference | kind oracle under P | default's kind oracle under P | headroom | best fixed rule under P "
            "| oracle's margin over it | margin over its routes under the others | ceiling | routes that differ from "
            "the default's |", "|---|---|---|---|---|---|---|---|---|"]
    base = next(e for e in m["adherence"] if e["preference"] == "default")["kind_oracle"]["routes"]
    for e in m["adherence"]:
        k = e["kind_oracle"]
        diff = {kind: r for kind, r in k["routes"].items() if base.get(kind) != r}
        out.append(f"| {e['preference']} | {k['score']:.3f} | {k['default_routes_score']:.3f} | {k['headroom']:+.3f} | "
                   f"{k['best_fixed']} {e['fixed'][k['best_fixed']]:.3f} | {k['over_best_fixed']:+.3f} | "
                   f"{', '.join(f'{q} {v:+.3f}' for q, v in k['over_other_preferences'].items()) or '-'} | "
                   f"{k['ceiling']:+.3f} | {diff or '-'} |")
    return "\n".join(out) + "\n"


def plot(m: dict[str, Any], path: Path) -> None:
    """The accuracy-cost plane: every row, the fixed rules' hull, the policy's points."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 4.5))
    ax = fig.add_subplot()
    hull = m["hull"]
    ax.plot([c for c, _ in hull], [a for _, a in hull], "k--", lw=1, label="hull of the fixed rules")
    for r in m["rows"]:
        style = "r*" if r["agent"] == "trained policy" else ("bs" if r["agent"] == "router" else "ko")
        ax.plot(r["cost_cents"], r["success"], style, ms=10 if style == "r*" else 6)
        ax.annotate(r["agent"], (r["cost_cents"], r["success"]), textcoords="offset points", xytext=(4, 4), fontsize=8)
    for e in m["adherence"]:
        if e["preference"] != "default":
            ax.plot(e["cost_cents"], e["success"], "r.", ms=8)
            ax.annotate(f"policy: {e['preference']}", (e["cost_cents"], e["success"]), textcoords="offset points",
                        xytext=(4, -10), fontsize=7, color="r")
    ax.set_xscale("symlog", linthresh=0.1)
    ax.set_xlabel("cost per task (US cents)")
    ax.set_ylabel("success rate")
    ax.set_title("held-out tasks, the run's own setting")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def load_policy(pool: str, checkpoint: Any) -> tuple[Any, "str | None"]:
    """(the run's `orchestra_jax.agents.PolicyAgent`, None), or (None, why not) when the run was not trained over
    `pool`."""
    from orchestra_jax.agents import load_policy_agent

    note = pools.policy_note(pool, checkpoint)
    return (None, note) if note is not None else (load_policy_agent(checkpoint), None)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", type=Path, default=None, help="an `orchestra train` output folder")
    p.add_argument("--pool", default=None, help="an expert pool (orchestra_gym.tools.pools, e.g. specialists): the "
                   "three settings default / unseen-experts / unseen-pricing of orchestra_gym.evaluation.pools")
    p.add_argument("--episodes", type=int, default=500, help="held-out tasks (default 500)")
    p.add_argument("--router-tasks", type=int, default=300, help="training tasks the router is fitted on")
    p.add_argument("--plot", type=Path, default=None, help="write the accuracy-cost plane here (PNG); with --pool a "
                   "folder: the plane of each setting and the tool mix per preference")
    p.add_argument("--json", type=Path, default=None, help="write the measurement here (JSON)")
    p.add_argument("--record", action="store_true", help="append the tables to benchmarks/RESULTS.md")
    args = p.parse_args(argv)
    if args.pool:
        agent, note = load_policy(args.pool, args.checkpoint) if args.checkpoint is not None else (None, None)
        m = pools.orchestration(args.pool, args.episodes, args.router_tasks, agent, note, args.checkpoint)
        text = pools.markdown(m)
        print(text)
        if args.json:
            args.json.write_text(json.dumps(m, indent=1, default=float))
        if args.plot:  # with --pool, a folder: plane_<setting>.png and tool_mix.png
            print("\n".join(pools.plot(m, args.plot)))
        if args.record:
            from _record import append_section, command

            append_section(f"Orchestration over pool {args.pool}", command("bench_orchestration.py", argv), text)
        return 0
    if args.checkpoint is None:
        p.error("--checkpoint is required without --pool")
    m = measure(args.checkpoint, args.episodes, args.router_tasks)
    text = markdown(m)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(m, indent=1, default=float))
    if args.plot:
        plot(m, args.plot)
    if args.record:
        from _record import append_section, command

        append_section(f"Orchestration: {args.checkpoint.name}", command("bench_orchestration.py", argv), text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
