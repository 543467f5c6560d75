"""Expert pools, pricing schedules, preference text and the baselines that read stated properties (issue 34)."""

from __future__ import annotations

import hashlib
import json
import re

import gymnasium as gym
import numpy as np
import pytest

import orchestra_gym  # noqa: F401
from orchestra_gym import pricing
from orchestra_gym.agents import make_agent
from orchestra_gym.agents.rules import StatedRuleAgent, TextRouterAgent, expected_utility, fit_text_router, request_text
from orchestra_gym.preference_text import instruction, instruction_set
from orchestra_gym.tools.pools import KINDS, POOLS, get_pool

ENV = "ToolOrchestra-ToolScale-v0"
POOL_KW = {"system_prompt": "compact", "preference_in_prompt": True, "expert_scope": "turn", "max_errors": 1,
           "max_turns": 6, "expert_pool": "specialists", "offer_size": [3, 4], "pricing_schedules": ["paper", "random"]}
OPTS = {"tools": ["call_expert"]}


def _env(**kw):
    return gym.make(ENV, **{**POOL_KW, **kw})


def test_pool_has_specialists_and_held_out_experts():
    pool = get_pool("specialists")
    assert len(pool.train_names) == 6 and pool.held_out_names == ("coder-32b", "math-7b")
    by = pool.by_name()
    assert by["qwen2.5-math"].stated_accuracy("compute") == 0.99 and by["qwen2.5-math"].stated_accuracy("lookup") == 0.55
    # price and latency rank differently: the cheapest (qwen3-8b) is the slowest but gpt-5, the fastest is not the cheapest
    lat = {n: e.typical_latency_s() for n, e in by.items() if n in pool.train_names}
    price = {n: sum(vars(pricing.PAPER.price(by[n].model_id)).values()) for n in lat}
    assert min(price, key=price.get) == "qwen3-8b" and max(lat, key=lat.get) == "qwen3-8b"
    assert min(lat, key=lat.get) == "llama-3.3-70b" and price["llama-3.3-70b"] > price["qwen3-8b"]
    with pytest.raises(KeyError, match="known"):
        get_pool("nope")


def test_offer_sampling_is_deterministic_per_seed():
    env = _env()
    a = [env.reset(seed=s, options=OPTS)[1] for s in range(5)]
    b = [env.reset(seed=s, options=OPTS)[1] for s in range(5)]
    assert [i["offered_experts"] for i in a] == [i["offered_experts"] for i in b]
    assert [i["offered_prices"] for i in a] == [i["offered_prices"] for i in b]
    assert [i["pricing_schedule"] for i in a] == [i["pricing_schedule"] for i in b]
    assert len({tuple(i["offered_experts"]) for i in a}) > 1
    assert all(3 <= len(i["offered_experts"]) <= 4 for i in a)
    assert {i["pricing_schedule"] for i in a} <= {"paper", "random"}


def test_reset_options_fix_experts_and_pricing_and_prompt_lists_them():
    env = _env()
    obs, info = env.reset(seed=3, options={**OPTS, "experts": ["qwen2.5-math", "gpt-5"], "pricing": "deepinfra"})
    assert info["offered_experts"] == ["qwen2.5-math", "gpt-5"] and info["pricing_schedule"] == "deepinfra"
    assert info["offered_prices"]["qwen2.5-math"] == {"input_per_m": 0.12, "output_per_m": 0.39}
    assert "qwen2.5-math: A math specialist" in obs and "$0.12/1M input tokens" in obs and "compute 99%" in obs
    assert "gpt-5: A strong generalist" in obs and "llama-3.3-70b" not in obs
    enum = info["tools"][0]["function"]["parameters"]["properties"]["expert"]["enum"]
    assert enum == ["qwen2.5-math", "gpt-5"]
    # an expert not offered is an error observation, not an exception
    _, _, _, _, step = env.step('<tool_call>{"name": "call_expert", "arguments": {"expert": "qwen3-8b"}}</tool_call>')
    assert "needs 'expert' to be one of ['qwen2.5-math', 'gpt-5']" in step["new_messages"][-1]["content"]
    # the reward vector counts every expert of the pool (K fixed across offers)
    assert len(env.unwrapped.reward_layout.tools) == 8
    with pytest.raises(ValueError, match="distinct names of pool"):
        env.reset(seed=0, options={**OPTS, "experts": ["nobody"]})
    with pytest.raises(ValueError, match="needs an env built with expert_pool"):
        gym.make(ENV).reset(seed=0, options={"experts": ["expert-1"]})
    with pytest.raises(ValueError, match="need expert_pool"):
        gym.make(ENV, offer_size=3)


def test_held_out_experts_never_offered_in_train_mode_and_always_in_only_mode():
    train, only = _env(), _env(held_out_experts="only")
    held = set(get_pool("specialists").held_out_names)
    for s in range(150):
        assert not held & set(train.reset(seed=s, options=OPTS)[1]["offered_experts"])
        assert held & set(only.reset(seed=s, options=OPTS)[1]["offered_experts"])


def test_simulated_accuracy_follows_profile():
    math = get_pool("specialists").by_name()["qwen2.5-math"]
    hits = {k: sum(math.respond(f"req {i}", 1, lambda r: 0, category=k, difficulty="hard", seed=7).correct
                   for i in range(2000)) for k in ("compute", "lookup")}
    assert hits == {"compute": 1980, "lookup": 1042}  # seeded: p 0.99 and 0.55 over 2000 draws
    assert abs(hits["compute"] / 2000 - 0.99) < 3 * np.sqrt(0.99 * 0.01 / 2000)
    assert abs(hits["lookup"] / 2000 - 0.55) < 3 * np.sqrt(0.55 * 0.45 / 2000)


def test_stated_rules_pick_by_stated_properties():
    env = _env()
    obs, info = env.reset(seed=1, options={**OPTS, "experts": ["gpt-5", "qwen3-8b", "llama-3.3-70b"], "pricing": "paper"})
    picks = {}
    for rule in ("most-accurate", "cheapest", "fastest"):
        a = make_agent(rule)
        a.reset(env, obs, info)
        picks[rule] = a.expert
    assert picks == {"most-accurate": "gpt-5", "cheapest": "qwen3-8b", "fastest": "llama-3.3-70b"}
    r = StatedRuleAgent("random-offered", seed=0)
    r.reset(env, obs, info)
    assert r.expert in info["offered_experts"]
    u = expected_utility([0.97, 0.81], [11.25, 0.4], [18.0, 21.0], {"outcome": 1.0, "cost": 1.0}, steps=3)
    np.testing.assert_allclose(u, [0.97 ** 3, 0.81 ** 3 * 2.0])


def test_text_router_beats_random_on_kind_and_routes_by_it():
    env = _env()
    texts, kinds = [], []
    for s in range(120):
        _, info = env.reset(seed=10_000 + s, options=OPTS)
        texts.append(request_text(info))
        kinds.append(env.unwrapped.task.category)
    clf = fit_text_router(texts[:60], kinds[:60])
    acc = float(np.mean(clf.predict(texts[60:]) == np.array(kinds[60:])))
    assert acc > 0.9 > 1 / len(KINDS)
    obs, info = env.reset(seed=5, options={**OPTS, "task_id": "railway-3", "experts": ["qwen2.5-math", "gpt-5-mini"]})
    router = TextRouterAgent(clf, {"outcome": 1.0, "cost": 0.0})
    router.reset(env, obs, info)
    assert router.kind == env.unwrapped.task.category
    best = "qwen2.5-math" if router.kind == "compute" else "gpt-5-mini"
    assert router.expert == best
    with pytest.raises(ValueError, match=">= 2 kinds"):
        fit_text_router(["a"], ["x"])


def test_preference_text_is_seeded_split_and_numberless():
    pref = {"outcome": 1.0, "cost": 1.0, "latency": 0.0}
    a = instruction(pref, np.random.default_rng(0))
    assert a == instruction(pref, np.random.default_rng(0)) and not re.search(r"\d", a)
    train, held = set(instruction_set(pref, "train")), set(instruction_set(pref, "eval"))
    assert train and held and not train & held and a in train
    assert instruction(pref, np.random.default_rng(1), "eval") in held
    env = _env(preference_form="text", preference_split="eval", preference=pref)
    obs, _ = env.reset(seed=0, options=OPTS)
    line = obs.split("### user")[0].strip().splitlines()[-1]
    assert line in held
    with pytest.raises(ValueError, match="preference_form"):
        gym.make(ENV, preference_form="words")


def test_deepinfra_and_random_schedules():
    assert pricing.get_schedule("deepinfra").price("Qwen/Qwen3-32B") == pricing.ModelPrice(0.10, 0.30)
    assert pricing.get_schedule("deepinfra").price("gpt-5") == pricing.PAPER.price("gpt-5")
    p = POOLS["specialists"]
    r1 = p.resolve_schedule("random:5", np.random.default_rng(0))
    assert r1 == pricing.random_schedule(5) and r1 != pricing.PAPER


def _digest() -> str:
    """Seeded default-env rollouts (the bare default and the tiny-toolscale preset's setting)."""
    h = hashlib.sha256()
    for kw, opts in [({}, {}), ({"system_prompt": "compact", "preference_in_prompt": True, "expert_scope": "turn",
                                 "max_errors": 1, "max_turns": 6}, {"tools": ["call_expert"]}), ({"pricing": 3}, {})]:
        env = gym.make(ENV, **kw)
        for name in ["expert-1", "expert-3", "cascade", "delegating", "random"]:
            for s in range(6):
                agent = make_agent(name, seed=s)
                obs, info = env.reset(seed=s, options=opts)
                agent.reset(env, obs, info)
                h.update(obs.encode())
                done = False
                while not done:
                    obs, _, term, trunc, info = env.step(agent.act(obs, info))
                    done = term or trunc
                    h.update(obs.encode())
                    # keys added after e505942: preference_weights (P aligned with M, derived from info["preference"])
                    # and tool_errors (failed tool calls, counted apart from the observation)
                    h.update(json.dumps({k: v for k, v in info.items()
                                         if k not in ("reward_vector", "preference_weights", "tool_errors")},
                                        sort_keys=True,
                                        default=str).encode())
                    h.update(repr(info.get("reward_vector")).encode())
    return h.hexdigest()


def test_default_env_unchanged():
    # the digest of these rollouts on main before expert pools (commit e505942)
    assert _digest() == "20063b05e0e84be55386c0759f2ff18935bbe447b7b375f0bdf79dba6ba704db"


def test_a_reset_time_rule_plays_the_always_expert_episode():
    """The pool benches read rules off always-e episodes: playing the rule gives the same episode."""
    from orchestra_gym.evaluation import pools as pb

    env = gym.make(pb.ENV_ID, **pb.env_kwargs("specialists", "default"))
    opts = {"tools": pb.TOOLS, "experts": ["qwen3-8b", "gpt-5", "llama-3.3-70b"], "pricing": "random:9"}
    rule, _ = pb.play(env, make_agent("cheapest"), 2**31 + 4, 4, opts)
    always, _ = pb.play(env, make_agent("expert:qwen3-8b"), 2**31 + 4, 4, opts)
    assert rule.info["reward_vector"].tolist() == always.info["reward_vector"].tolist()
    assert rule.info["tool_calls"] == always.info["tool_calls"] and rule.info["tool_calls"]["qwen3-8b"] >= 1


def test_tradeoffs_pool_gives_each_group_of_kinds_three_corners():
    """Per group of kinds the most accurate, the cheapest and the fastest training expert are three different
    experts, each weak on the other group, so no training expert is best everywhere (the pool's design)."""
    pool = get_pool("tradeoffs")
    assert len(pool.train_names) == 6 and pool.held_out_names == ("coder-32b", "qwen2.5-math-72b")
    by = {n: pool.by_name()[n] for n in pool.train_names}
    lat = {n: e.typical_latency_s() for n, e in by.items()}
    for kinds in (("lookup", "transfer", "search_and_book"), ("conditional_write", "change_item", "compute")):
        acc = {n: np.mean([e.stated_accuracy(k) for k in kinds]) for n, e in by.items()}
        good = sorted((n for n in by if acc[n] >= 0.75), key=lambda n: -acc[n])  # the group's three
        assert len(good) == 3
        best, rest = good[0], good[1:]
        cost = {n: pricing.PAPER.price(by[n].model_id).cost(300, sum(by[n].completion_tokens) / 2) for n in good}
        cheap, fast = min(cost, key=cost.get), min(good, key=lambda n: lat[n])
        assert max(cost, key=cost.get) == best and lat[best] > 10 * lat[fast]
        assert len({best, cheap, fast}) == 3 and acc[best] > acc[cheap] and acc[best] > acc[fast]
        other = [k for k in KINDS if k not in kinds and k != "several_writes"]
        assert all(by[n].stated_accuracy(k) <= 0.6 for n in good for k in other)
    assert max(by, key=lambda n: by[n].mean_accuracy()) == "gpt-5-mini"  # what "most-accurate" always picks


def test_tradeoffs_setting_lets_every_kind_be_solved_and_routes_differ_by_preference():
    """At the pool's 12 turns an accurate expert solves every kind, and the in-sample kind oracle routes
    accuracy first, cost first and latency first to different experts (the headroom the check needs)."""
    from orchestra_gym.evaluation import pools as pb

    assert pb.env_kwargs("tradeoffs", "default")["max_turns"] == 12
    assert pb.env_kwargs("specialists", "default")["max_turns"] == 6
    played = pb.play_setting("tradeoffs", "default", 120, pb.preferences("tradeoffs")["default"])
    solved = {k: max(float(np.mean([r.solved for i, row in enumerate(played["always"]) if played["kinds"][i] == k
                                    for e, r in row.items() if e == name] or [0.0]))
                     for name in ("gpt-5", "gpt-5-mini")) for k in set(played["kinds"])}
    assert min(solved.values()) >= 0.6, solved
    h = pb.headroom(played, pb.preferences("tradeoffs"))
    per = h["per_preference"]
    for p in ("accuracy first", "cost first", "latency first"):
        assert per[p]["margins"][per[p]["best_fixed"]]["margin"] > 0.1  # the kind oracle over the best fixed rule
    rows = {p: per[p]["kind_oracle_row"] for p in per}
    assert rows["accuracy first"]["success"] > rows["cost first"]["success"] + 0.05
    assert rows["cost first"]["cost_c"] < 0.5 * rows["accuracy first"]["cost_c"]
    assert rows["latency first"]["latency_s"] < 0.7 * rows["accuracy first"]["latency_s"]


def test_pool_orchestration_plots_each_setting_and_the_tool_mix_per_preference(tmp_path):
    """`bench_orchestration --pool P --plot DIR`: one accuracy-cost plane per setting and the tool mix of the
    adherence subject (here the text router) per preference, counted over the pool's experts only."""
    from orchestra_gym.evaluation import pools as pb

    m = pb.orchestration("tradeoffs", 60, router_tasks=100)
    names = set(get_pool("tradeoffs").names)
    mixes = {"default": m["default_tool_mix"], **{p: a["tool_mix"] for p, a in m["adherence"].items()}}
    assert set(mixes) == {"default", "accuracy first", "cost first", "latency first"}
    assert all(set(mix) <= names for mix in mixes.values())
    # the text router picks one expert per task at reset, so its mix sums to about one call per episode
    assert all(0.8 <= sum(mix.values()) <= 2.0 for mix in mixes.values())
    assert mixes["cost first"].get("gpt-5", 0) < mixes["default"]["gpt-5"] - 0.2  # cost first leaves the dear expert
    from pathlib import Path

    written = pb.plot(m, tmp_path / "plots")
    assert [Path(p).name for p in written] == ["plane_default.png", "plane_unseen-experts.png",
                                               "plane_unseen-pricing.png", "tool_mix.png"]
    assert all(Path(p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in written)


def test_orchestra_report_pool_writes_the_pool_measurement(tmp_path, capsys):
    """``orchestra report --pool NAME``: the package's pool measurement (`orchestra_gym.evaluation.pools`) from the
    command line, as `benchmarks/bench_orchestration.py --pool` prints it."""
    from orchestra_gym.cli import main
    from orchestra_gym.evaluation import pools

    out = tmp_path / "pool"
    assert main(["report", "--pool", "tradeoffs", "--episodes", "3", "--router-tasks", "20", "--out", str(out)]) == 0
    m = json.loads((out / "pool.json").read_text())
    assert m["pool"] == "tradeoffs" and m["episodes"] == 3 and m["policy_note"] is None
    assert set(m["settings"]) == set(pools.SETTINGS) and m["settings"]["default"]["policy"] is None
    assert set(m["adherence"]) == {"accuracy first", "cost first", "latency first"}
    assert all(a["subject"] == "text_router" for a in m["adherence"].values())
    printed = capsys.readouterr().out
    assert printed == (out / "report.md").read_text() and printed.startswith("Pool `tradeoffs`, 3 held-out tasks")
    assert sorted(p.name for p in out.glob("*.png")) == ["plane_default.png", "plane_unseen-experts.png",
                                                        "plane_unseen-pricing.png", "tool_mix.png"]


def test_table_offer_states_the_same_facts_in_fewer_characters():
    """offer_format="table" (issue 51 item 3): each offered expert's prices, latency and stated accuracy per kind as
    one row; the default text offer is unchanged."""
    from orchestra_gym.tools.pools import TABLE_HEADER

    opts = {**OPTS, "experts": ["qwen2.5-math", "gpt-5"], "pricing": "deepinfra"}
    text_obs, _ = _env().reset(seed=3, options=opts)
    obs, info = _env(offer_format="table").reset(seed=3, options=opts)
    assert TABLE_HEADER in obs and TABLE_HEADER not in text_obs
    pool = get_pool("specialists")
    for name in ("qwen2.5-math", "gpt-5"):
        e = next(x for x in pool.experts if x.name == name)
        p = pricing.get_schedule("deepinfra").price(e.model_id)
        accs = "/".join(str(round(100 * e.stated_table()[k])) for k in KINDS)
        row = f"{name} | {p.input_per_m:.3g}/{p.output_per_m:.3g} | {e.typical_latency_s():.0f} | {accs}"
        assert row in obs.splitlines()
        assert e.describe("deepinfra") in text_obs  # the text offer: today's sentence
    assert "qwen2.5-math | 0.12/0.39 |" in obs and "llama-3.3-70b" not in obs
    assert len(obs) < 0.8 * len(text_obs)  # two experts offered; 50 tradeoffs episodes: 48% fewer characters
    assert info["offered_experts"] == ["qwen2.5-math", "gpt-5"]
    with pytest.raises(ValueError, match="offer_format"):
        _env(offer_format="csv")
    with pytest.raises(ValueError, match="needs expert_pool"):
        gym.make(ENV, offer_format="table")
