"""Expert-pool measurements: the accuracy-cost rows per pool setting, the pool settings, the adherence check and
its kind-oracle headroom (``orchestra report --pool``; `benchmarks/bench_orchestration.py --pool` and
`benchmarks/bench_preference_headroom.py --pool` are thin scripts over it).

The setting: ToolScale in the tiny-toolscale preset's form (compact prompt, preference stated in it, one expert per
turn, ``call_expert`` only, 6 turns, 1 error) with ``expert_pool=POOL`` (`orchestra_gym.tools.pools`), offering 3-4
experts per task. Evaluation fixes each held-out task's offer and schedule (drawn from the setting's distribution
with a generator seeded by (``OFFER_SEED``, task index), passed as ``reset(options={"experts", "pricing"})``), so
every agent plays the same offer at the same prices. Three settings (`SETTINGS`): ``default`` (training experts,
paper or random-multiplier prices: the training distribution), ``unseen-experts`` (every offer holds at least one
held-out expert) and ``unseen-pricing`` (training experts at the DeepInfra-style schedule, held out from training).

Playing: per task, always-e for each offered expert e (``expert:<e>``) and the cheapest-first cascade. Every rule
that picks one expert at reset from stated properties (most-accurate, cheapest, fastest, random-offered, the text
router, the label-reading oracle router, the kind oracle) plays exactly that always-e episode (same reset seed, so
the same simulated draws), so it is read off those episodes instead of replayed.

Scores: the group form of the paper's Sec. 3.2 reward (`orchestra_gym.rewards.reference_group_scores`), the group
being the episode and the most-accurate, cheapest and fastest rules' episodes on the same task: normalisation per
offered set, so the dearest expert of the pool does not set the cost range of tasks that do not offer it (the
earlier failure: one dear expert in every group squeezed every other cost to ~1 and capped the ceiling).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import gymnasium as gym
import numpy as np

from orchestra_gym.agents import CascadeAgent, ExpertAgent
from orchestra_gym.agents.rules import StatedRuleAgent, TextRouterAgent, fit_text_router, request_text
from orchestra_gym.evaluation.episode import play_episode
from orchestra_gym.evaluation.metrics import cost_accuracy_hull, hull_gap, mean_tool_calls, summarize
from orchestra_gym.evaluation.records import EpisodeResult
from orchestra_gym.rewards import episode_preference_weights, reference_group_scores
from orchestra_gym.tools.pools import get_pool

__all__ = ["POOL_SETTINGS", "SETTINGS", "pool_setting", "preferences", "env_kwargs", "offers", "play", "play_setting",
           "rule_picks", "headroom", "policy_episodes", "policy_note", "orchestration", "markdown", "plot", "expert_mix"]

ENV_ID = "ToolOrchestra-ToolScale-v0"
BASE_KWARGS = {"system_prompt": "compact", "preference_in_prompt": True, "expert_scope": "turn", "max_errors": 1}
TOOLS = ["call_expert"]
OFFER_SIZE = (4, 5)
OFFER_SEED = 34
EVAL_TASK_BASE = 2**31  # orchestra_jax.evaluation.held_out_tasks
ROUTER_SEED = 1_000_000  # training requests of the text router
SETTINGS = {
    "default": {"held_out_experts": "exclude", "pricing_schedules": ["paper", "random"]},
    "unseen-experts": {"held_out_experts": "only", "pricing_schedules": ["paper", "random"]},
    "unseen-pricing": {"held_out_experts": "exclude", "pricing_schedules": ["deepinfra"]},
}
DEFAULT_PREFERENCE = {"outcome": 1.0, "cost": 0.5, "latency": 0.0}  # the tiny-toolscale preset's
HELD_OUT_PREFERENCES = {  # the tiny-toolscale preset's eval_preferences
    "accuracy first": {"outcome": 1.0, "cost": 0.02, "latency": 0.0},
    "cost first": {"outcome": 1.0, "cost": 1.0, "latency": 0.0},
    "latency first": {"outcome": 1.0, "cost": 0.0, "latency": 0.5},
}
#: Per pool: the setting's max_turns and its preferences (the one episodes are played under, and the held-out
#: set of the adherence check). ``specialists``: the tiny-toolscale preset's form (6 turns, its preferences);
#: ``tradeoffs``: the tiny-toolscale-pool preset's (12 turns, so every kind's gold actions fit: at 6 the writes
#: of 6 actions and most computations could not be solved by any expert; a balanced default; latency first with
#: weight 1; chosen with the pool, RESULTS.md "The tradeoffs pool"; tests/jax/test_pool_preset.py checks that the
#: preset and this table agree). Other pools get ``tradeoffs``'s.
POOL_SETTINGS: dict[str, dict[str, Any]] = {
    "specialists": {"max_turns": 6, "default": DEFAULT_PREFERENCE, "held_out": HELD_OUT_PREFERENCES},
    "tradeoffs": {"max_turns": 12, "default": {"outcome": 1.0, "cost": 0.25, "latency": 0.25},
                  "held_out": {"accuracy first": {"outcome": 1.0, "cost": 0.02, "latency": 0.0},
                               "cost first": {"outcome": 1.0, "cost": 1.0, "latency": 0.0},
                               "latency first": {"outcome": 1.0, "cost": 0.0, "latency": 1.0}}},
}


def pool_setting(pool: str) -> dict[str, Any]:
    """`POOL_SETTINGS` of a pool (``tradeoffs``'s for a pool not listed)."""
    return POOL_SETTINGS.get(pool, POOL_SETTINGS["tradeoffs"])


def preferences(pool: str) -> dict[str, dict[str, float]]:
    """{"default": the pool setting's default, **its held-out preferences}."""
    s = pool_setting(pool)
    return {"default": dict(s["default"]), **{k: dict(v) for k, v in s["held_out"].items()}}


FIXED_RULES = ("most-accurate", "cheapest", "fastest", "cascade", "random-offered")
REFERENCE_RULES = ("most-accurate", "cheapest", "fastest")


def env_kwargs(pool: str, setting: str, schedules: "Sequence[str] | None" = None) -> dict[str, Any]:
    """``gym.make`` kwargs of a pool setting (`SETTINGS`; `schedules` overrides its pricing schedules)."""
    s = dict(SETTINGS[setting])
    if schedules:
        s["pricing_schedules"] = list(schedules)
    return {**BASE_KWARGS, "max_turns": pool_setting(pool)["max_turns"], "expert_pool": pool,
            "offer_size": list(OFFER_SIZE), **s}


def offers(pool: str, kwargs: dict[str, Any], n: int) -> list[tuple[list[str], str]]:
    """The held-out tasks' fixed (offered experts, schedule) pairs: drawn from the setting's distribution with
    ``default_rng((OFFER_SEED, i))``; a ``random`` schedule becomes ``random:<seed>``."""
    p = get_pool(pool)
    names = list(kwargs["pricing_schedules"])
    out = []
    for i in range(n):
        rng = np.random.default_rng((OFFER_SEED, i))
        experts = p.sample_offer(rng, kwargs["offer_size"], kwargs["held_out_experts"])
        sched = names[int(rng.integers(len(names)))]
        out.append((experts, f"random:{int(rng.integers(0, 2**31 - 1))}" if sched == "random" else sched))
    return out


def play(env: gym.Env, agent: Any, task_id: Any, seed: int, options: dict[str, Any]) -> tuple[EpisodeResult, str]:
    """One episode (`play_episode` on `task_id`); returns it and the user's opening request text (the first
    user message of the transcript)."""
    result = play_episode(env, agent, seed, {**options, "task_id": task_id})
    text = next((m.content for m in env.unwrapped.messages if m.role == "user"), "")
    return result, text


def play_setting(pool: str, setting: str, episodes: int, preference: dict[str, Any],
                 schedules: "Sequence[str] | None" = None) -> dict[str, Any]:
    """Play always-e for every offered expert and the cascade on `episodes` held-out tasks of a setting.

    Returns {"tasks": [task ids], "offers": [(experts, schedule)], "always": [{expert: EpisodeResult}],
    "cascade": [EpisodeResult], "texts": [opening request], "kinds": [label, for the oracles only],
    "env": the env (offered experts' stated properties)}."""
    kwargs = env_kwargs(pool, setting, schedules)
    env = gym.make(ENV_ID, **kwargs, preference=preference)
    tasks = [EVAL_TASK_BASE + i for i in range(episodes)]
    out: dict[str, Any] = {"tasks": tasks, "offers": offers(pool, kwargs, episodes), "always": [], "cascade": [],
                           "texts": [], "kinds": [], "kwargs": kwargs, "env": env}
    for i, (t, (experts, sched)) in enumerate(zip(tasks, out["offers"])):
        opts = {"tools": TOOLS, "experts": experts, "pricing": sched, "preference": preference}
        row = {}
        for e in experts:
            row[e], text = play(env, ExpertAgent(e), t, i, opts)
        out["always"].append(row)
        out["texts"].append(text)
        out["kinds"].append(str(row[experts[0]].info["task_category"]))
        out["cascade"].append(play(env, CascadeAgent(), t, i, opts)[0])
    return out


def _reset_for(played: dict[str, Any], i: int) -> tuple[Any, dict[str, Any]]:
    """The env reset on task i's offer (for rules reading the offered experts' stated properties)."""
    env = played["env"]
    experts, sched = played["offers"][i]
    obs, info = env.reset(seed=i, options={"tools": TOOLS, "experts": experts, "pricing": sched,
                                           "task_id": played["tasks"][i]})
    return env, info


def choices(played: dict[str, Any], agent_factory: Any) -> list[str]:
    """The expert a reset-time rule picks on each task (`agent_factory(i)` -> agent with ``.expert`` after reset)."""
    picks = []
    for i in range(len(played["tasks"])):
        env, info = _reset_for(played, i)
        a = agent_factory(i)
        a.reset(env, "", info)
        picks.append(a.expert)
    return picks


def rule_picks(played: dict[str, Any]) -> dict[str, list[str]]:
    """Picks of the stated-property rules (random-offered seeded per task index)."""
    return {r: choices(played, lambda i, r=r: StatedRuleAgent(r, seed=i)) for r in FIXED_RULES if r != "cascade"}


def fit_router(pool: str, setting: str, n: int = 300) -> Any:
    """The text router's classifier fitted on `n` training requests (env-drawn tasks, seeds from ROUTER_SEED)."""
    env = gym.make(ENV_ID, **env_kwargs(pool, setting))
    texts, kinds = [], []
    for s in range(n):
        _, info = env.reset(seed=ROUTER_SEED + s, options={"tools": TOOLS})
        texts.append(request_text(info))
        kinds.append(str(env.unwrapped.task.category))
    return fit_text_router(texts, kinds, seed=0)


def episodes_of(played: dict[str, Any], picks: Sequence[str]) -> list[EpisodeResult]:
    return [played["always"][i][e] for i, e in enumerate(picks)]


def references(played: dict[str, Any], picks: dict[str, list[str]]) -> list[list[EpisodeResult]]:
    return [episodes_of(played, picks[r]) for r in REFERENCE_RULES]


def per_task_scores(results: Sequence[EpisodeResult], refs: Sequence[Sequence[EpisodeResult]],
                    preference: dict[str, Any]) -> np.ndarray:
    """Group-form preference reward per task (float64 [N]) in the group of the reference rules' episodes."""
    v = np.stack([np.asarray(r.info["reward_vector"], np.float64) for r in results])
    s = np.array([bool(r.solved) for r in results])
    rv = np.stack([[np.asarray(r.info["reward_vector"], np.float64) for r in ref] for ref in refs])
    rs = np.array([[bool(r.solved) for r in ref] for ref in refs])
    return reference_group_scores(v, s, rv, rs, episode_preference_weights(results[0].info, preference))


def kind_oracle_picks(played: dict[str, Any], refs: Sequence[Sequence[EpisodeResult]], preference: dict[str, Any]
                      ) -> list[str]:
    """In-sample kind oracle: per request kind (label) and expert, the mean score of always-e on the tasks of
    that kind where e was offered; each task gets its offered expert of the best such mean."""
    n = len(played["tasks"])
    per_expert: dict[str, np.ndarray] = {}
    for e in get_pool(played["kwargs"]["expert_pool"]).names:
        idx = [i for i in range(n) if e in played["always"][i]]
        if idx:
            sc = per_task_scores([played["always"][i][e] for i in idx], [[ref[i] for i in idx] for ref in refs],
                                 preference)
            per_expert[e] = np.full(n, np.nan)
            per_expert[e][idx] = sc
    table: dict[tuple[str, str], float] = {}
    for e, sc in per_expert.items():
        for k in set(played["kinds"]):
            vals = [sc[i] for i in range(n) if played["kinds"][i] == k and not math.isnan(sc[i])]
            if vals:
                table[(k, e)] = float(np.mean(vals))
    return [max(sorted(played["always"][i]), key=lambda e: table.get((played["kinds"][i], e), -1.0))
            for i in range(n)]


def router_picks(played: dict[str, Any], classifier: Any, preference: dict[str, Any]) -> list[str]:
    return choices(played, lambda i: TextRouterAgent(classifier, preference))


class _KindLabel:
    """A stand-in classifier that returns the task's true kind (the label-reading oracle router)."""

    def __init__(self, kinds: Sequence[str]):
        self.kinds, self.i = list(kinds), -1

    def predict(self, texts: Sequence[str]) -> list[str]:
        self.i += 1
        return [self.kinds[self.i]]


def oracle_router_picks(played: dict[str, Any], preference: dict[str, Any]) -> list[str]:
    """The label-reading router: the text router's choice rule given the task's true kind (its upper bound)."""
    label = _KindLabel(played["kinds"])
    return choices(played, lambda i: TextRouterAgent(label, preference))


def row(results: Sequence[EpisodeResult]) -> dict[str, float]:
    s = summarize(list(results))
    return {"success": float(s["success_rate"]), "cost_c": 100.0 * float(s["mean_cost_usd"]),
            "latency_s": float(s["mean_latency_s"])}


def with_hull(r: dict[str, float], fixed: dict[str, dict[str, float]]) -> dict[str, Any]:
    pts = [(f["cost_c"], f["success"]) for f in fixed.values()]
    return {**r, "hull_gap": hull_gap(r["success"], r["cost_c"], pts),
            "dominated_by": [n for n, f in fixed.items() if f["success"] > r["success"] and f["cost_c"] < r["cost_c"]]}


def paired(mine: np.ndarray, theirs: np.ndarray) -> tuple[float, float]:
    """Mean and standard error (sample sd / sqrt n) of the paired differences."""
    d = np.asarray(mine) - np.asarray(theirs)
    return float(d.mean()), float(d.std(ddof=1) / math.sqrt(len(d)))


def headroom(played: dict[str, Any], preferences: dict[str, dict[str, Any]], default: str = "default"
             ) -> dict[str, Any]:
    """The ceiling of the adherence check for the held-out preferences (every key but `default`) in a setting.

    Per preference P: the kind oracle fitted to P (`kind_oracle_picks`) scored under P, its margin over the best
    fixed rule under P and over the kind oracles fitted to every other preference (the default's included),
    each with its paired standard error over the tasks. The ceiling is the smallest margin over all held-out P:
    the most by which any routing by request kind could pass the whole check in this setting.

    Returns {"rules": {rule: row}, "per_preference": {P: {...}}, "ceiling": float, "binding": {...}}."""
    picks = rule_picks(played)
    refs = references(played, picks)
    fixed_eps = {r: episodes_of(played, picks[r]) for r in picks}
    fixed_eps["cascade"] = played["cascade"]
    oracle = {p: kind_oracle_picks(played, refs, pref) for p, pref in preferences.items()}
    out: dict[str, Any] = {"rules": {r: row(e) for r, e in fixed_eps.items()}, "per_preference": {}}
    worst = None
    for p, pref in preferences.items():
        own = per_task_scores(episodes_of(played, oracle[p]), refs, pref)
        fixed = {r: per_task_scores(e, refs, pref) for r, e in fixed_eps.items()}
        best = max(fixed, key=lambda r: fixed[r].mean())
        rivals = {best: fixed[best], **{q: per_task_scores(episodes_of(played, oracle[q]), refs, pref)
                                        for q in preferences if q != p}}
        margins = {q: paired(own, v) for q, v in rivals.items()}
        out["per_preference"][p] = {"kind_oracle": float(own.mean()), "kind_oracle_row": row(episodes_of(played, oracle[p])),
                                    "best_fixed": best, "best_fixed_score": float(fixed[best].mean()),
                                    "fixed_scores": {r: float(v.mean()) for r, v in fixed.items()},
                                    "margins": {q: {"margin": m, "se": se} for q, (m, se) in margins.items()}}
        if p != default:
            q = min(margins, key=lambda q: margins[q][0])
            if worst is None or margins[q][0] < worst[2]:
                worst = (p, q, margins[q][0], margins[q][1])
    if worst is not None:
        out["ceiling"] = worst[2]
        out["binding"] = {"preference": worst[0], "against": worst[1], "margin": worst[2], "se": worst[3]}
    return out


def policy_episodes(played: dict[str, Any], agent: Any, preference: dict[str, Any]) -> list[EpisodeResult]:
    """A trained policy's agent (``policy:<run dir>``) on every task of a played setting, on the task's
    fixed offer and schedule and with the always-e episodes' reset seed (so its simulated draws are theirs:
    paired comparisons), under `preference`."""
    env = played["env"]
    out = []
    for i, (t, (experts, sched)) in enumerate(zip(played["tasks"], played["offers"])):
        opts = {"tools": TOOLS, "experts": experts, "pricing": sched, "preference": preference}
        out.append(play(env, agent, t, i, opts)[0])
    return out


def valid_format(results: Sequence[EpisodeResult]) -> float:
    """The share of the policy's turns (agent steps) without an error: 1 - malformed turns / turns, in [0, 1].

    An episode's malformed turns are its ``parse_errors`` capped at its steps: one turn can hold several errors
    (a partly valid output plus an unknown tool, say), each counted in ``parse_errors``, so the cap makes this a
    lower bound of the valid share, exact when no turn holds two errors."""
    bad = sum(min(int(r.info.get("parse_errors", 0)), r.steps) for r in results)
    return 1.0 - bad / max(sum(r.steps for r in results), 1)


def policy_note(pool: str, run_dir: Any) -> "str | None":
    """Why a trained run (an ``orchestra train`` output folder) gets no policy row over `pool`: it was trained over
    another expert pool (its ``train_config.json``'s ``env.kwargs.expert_pool``), or None when it was trained over
    `pool`."""
    import json
    from pathlib import Path

    cfg = json.loads((Path(run_dir) / "train_config.json").read_text())
    trained_on = cfg.get("env", {}).get("kwargs", {}).get("expert_pool")
    if trained_on != pool:
        return f"the run at {run_dir} was trained over expert_pool={trained_on!r}, not {pool!r}: no policy row"
    return None


def orchestration(pool: str, episodes: int, router_tasks: int = 300, agent: Any = None, policy_note: "str | None" = None,
                  checkpoint: Any = None) -> dict[str, Any]:
    """The pool measurement (``orchestra report --pool``, `bench_orchestration.py --pool`): per setting the policy's
    row (with `agent`: a trained run's agent, e.g. ``agent_factory("policy:<run dir>")(0)`` of an ``orchestra
    train`` run over this pool, ``--preset tiny-toolscale-pool``; else None), the text router's and the
    label-reading oracle router's rows (hull gap against the setting's fixed rules, and the fixed rules that
    dominate them), the fixed rules' rows, and the adherence block per held-out preference for the policy (the
    text router's without an agent), with the kind-oracle ceiling of each setting. `policy_note` (why there is
    no policy row) and `checkpoint` (the run folder) are recorded as given."""
    prefs = preferences(pool)
    clf = fit_router(pool, "default", router_tasks)
    note = policy_note
    out: dict[str, Any] = {"pool": pool, "episodes": episodes, "settings": {}, "adherence": {}, "headroom": {},
                           "policy_note": note, "checkpoint": None if checkpoint is None else str(checkpoint)}
    for name in SETTINGS:
        played = play_setting(pool, name, episodes, prefs["default"])
        picks = rule_picks(played)
        refs = references(played, picks)
        fixed = {r: row(episodes_of(played, picks[r])) for r in picks}
        fixed["cascade"] = row(played["cascade"])
        text = episodes_of(played, router_picks(played, clf, prefs["default"]))
        orc = episodes_of(played, oracle_router_picks(played, prefs["default"]))
        pol = None
        if agent is not None:
            pol_eps = policy_episodes(played, agent, prefs["default"])
            pol = {**with_hull(row(pol_eps), fixed), "valid_format": valid_format(pol_eps)}
        s = {"policy": pol, "text_router": with_hull(row(text), fixed), "oracle_router": with_hull(row(orc), fixed),
             **{r: {"success": v["success"], "cost_c": v["cost_c"], "latency_s": v["latency_s"]} for r, v in fixed.items()}}
        kinds_pred = clf.predict(played["texts"])
        s["text_router"]["kind_accuracy"] = float(np.mean([a == b for a, b in zip(kinds_pred, played["kinds"])]))
        out["settings"][name] = s
        h = headroom(played, prefs)
        out["headroom"][name] = {"ceiling": h.get("ceiling"), "binding": h.get("binding"),
                                 "kind_oracle": {p: v["kind_oracle_row"] for p, v in h["per_preference"].items()}}
        if name == "default":  # adherence of the policy (else the text router) run under each preference
            subject = "policy" if agent is not None else "text_router"
            runs = ({p: (pol_eps if p == "default" else policy_episodes(played, agent, pref)) for p, pref in prefs.items()}
                    if agent is not None else
                    {p: episodes_of(played, router_picks(played, clf, pref)) for p, pref in prefs.items()})
            fixed_eps = {r: episodes_of(played, picks[r]) for r in picks}
            fixed_eps["cascade"] = played["cascade"]
            out["default_tool_mix"] = expert_mix(pool, runs["default"])
            for p, pref in prefs.items():
                if p == "default":
                    continue
                own = per_task_scores(runs[p], refs, pref)
                rivals = {**{q: per_task_scores(runs[q], refs, pref) for q in prefs if q != p},
                          **{r: per_task_scores(e, refs, pref) for r, e in fixed_eps.items()}}
                m = {q: paired(own, v) for q, v in rivals.items()}
                q = min(m, key=lambda q: m[q][0] - 2 * m[q][1])
                out["adherence"][p] = {"subject": subject, "passed": bool(m[q][0] > 2 * m[q][1]),
                                       "margin": m[q][0], "stderr": m[q][1], "against": q,
                                       **{k: v for k, v in row(runs[p]).items()},
                                       "tool_mix": expert_mix(pool, runs[p]),
                                       "vs_default": {k: row(runs[p])[k] - row(runs["default"])[k]
                                                      for k in ("success", "cost_c", "latency_s")}}
                if agent is not None:
                    out["adherence"][p]["valid_format"] = valid_format(runs[p])
    return out


def markdown(m: dict[str, Any]) -> str:
    """The contract as Markdown tables."""
    lines = [f"Pool `{m['pool']}`, {m['episodes']} held-out tasks per setting.", "",
             "| setting | agent | success | cost ¢/task | latency s/task | hull gap (points) | dominated by |",
             "|---|---|---|---|---|---|---|"]
    for name, s in m["settings"].items():
        for agent, r in s.items():
            if r is None:
                lines.append(f"| {name} | {agent} | - | - | - | - | (no checkpoint) |")
                continue
            gap = f"{100 * r['hull_gap']:+.1f}" if "hull_gap" in r else ""
            if "valid_format" in r:
                agent = f"{agent} (valid format {r['valid_format']:.3f})"
            dom = ", ".join(r.get("dominated_by", [])) or ("-" if "hull_gap" in r else "")
            lines.append(f"| {name} | {agent} | {r['success']:.3f} | {r['cost_c']:.3f} | {r['latency_s']:.1f} | "
                         f"{gap} | {dom} |")
    lines += ["", "Kind-oracle ceiling of the adherence check per setting (held-out preferences accuracy / cost / "
              "latency first): " + "; ".join(
                  f"{n} {h['ceiling']:+.3f} (set by {h['binding']['preference']} against {h['binding']['against']}, "
                  f"s.e. {h['binding']['se']:.3f})" for n, h in m["headroom"].items()), "",
              f"| preference ({next(iter(m['adherence'].values()), {}).get('subject', 'text_router')} run under it) "
              "| success | cost ¢ | latency s | binding rival | margin | s.e. "
              "| passed (margin > 2 s.e.) |", "|---|---|---|---|---|---|---|---|"]
    for p, a in m["adherence"].items():
        lines.append(f"| {p} | {a['success']:.3f} | {a['cost_c']:.3f} | {a['latency_s']:.1f} | {a['against']} | "
                     f"{a['margin']:+.3f} | {a['stderr']:.3f} | {a['passed']} |")
    return "\n".join(lines) + "\n"


def expert_mix(pool: str, results: Sequence[EpisodeResult]) -> dict[str, float]:
    """Calls per episode of each of `pool`'s experts (`mean_tool_calls`, restricted to the pool's names)."""
    names = set(get_pool(pool).names)
    return {k: v for k, v in mean_tool_calls(results).items() if k in names}


def plot(m: dict[str, Any], out_dir: Any) -> list[str]:
    """The figures of `orchestration`'s result `m` (matplotlib `Figure`, no pyplot), written to `out_dir`:
    ``plane_<setting>.png`` per setting (the fixed rules, their accuracy-cost hull, the text router, the oracle
    router and the policy when there is one; cost in US cents per task, log-scaled) and ``tool_mix.png`` (the
    adherence subject's calls per episode of each expert under the default and each held-out preference).
    Returns the paths written."""
    from pathlib import Path

    from matplotlib.figure import Figure

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    marks = {"policy": ("r*", 12), "text_router": ("bs", 7), "oracle_router": ("gD", 6)}
    for name, st in m["settings"].items():
        fig = Figure(figsize=(6.5, 4.5))
        ax = fig.add_subplot()
        fixed = {a: r for a, r in st.items() if a not in marks}
        hull = cost_accuracy_hull([(r["cost_c"], r["success"]) for r in fixed.values()])
        ax.plot([c for c, _ in hull], [a for _, a in hull], "k--", lw=1, label="hull of the fixed rules")
        for a, r in fixed.items():
            ax.plot(r["cost_c"], r["success"], "ko", ms=5)
            ax.annotate(a, (r["cost_c"], r["success"]), textcoords="offset points", xytext=(4, 4), fontsize=8)
        for a, (style, ms) in marks.items():
            r = st.get(a)
            if r is not None:
                ax.plot(r["cost_c"], r["success"], style, ms=ms,
                        label=f"{a.replace('_', ' ')} ({100 * r['hull_gap']:+.1f} pts)")
        ax.set_xscale("log")
        ax.set_xlabel("cost per task (US cents)")
        ax.set_ylabel("success rate")
        ax.set_title(f"pool {m['pool']}, setting {name}, {m['episodes']} held-out tasks")
        ax.legend(loc="lower right", fontsize=8)
        fig.tight_layout()
        path = out / f"plane_{name}.png"
        fig.savefig(path, dpi=120)
        written.append(str(path))
    if m["adherence"]:
        mixes = {"default": m.get("default_tool_mix", {}), **{p: a["tool_mix"] for p, a in m["adherence"].items()}}
        experts = sorted({k for mix in mixes.values() for k in mix})
        fig = Figure(figsize=(max(6.5, 0.7 * len(experts) + 2), 4.0))
        ax = fig.add_subplot()
        width = 0.8 / len(mixes)
        for j, (p, mix) in enumerate(mixes.items()):
            ax.bar(np.arange(len(experts)) + j * width, [mix.get(e, 0.0) for e in experts], width, label=p)
        ax.set_xticks(np.arange(len(experts)) + 0.4 - width / 2, experts, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("calls per episode")
        subject = next(iter(m["adherence"].values()))["subject"].replace("_", " ")
        ax.set_title(f"tool mix of the {subject} per preference (setting default)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = out / "tool_mix.png"
        fig.savefig(path, dpi=120)
        written.append(str(path))
    return written
