"""Baseline agents: the router (a lookup from task features to an expert, fitted on training records)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import orchestra_gym  # noqa: F401
from orchestra_gym.agents import RouterAgent


def _rec(expert, cell, solved, cost):
    return {"expert": expert, "features": cell, "solved": solved, "cost_usd": cost}


def test_router_fit_picks_the_best_utility_per_cell_and_a_default():
    easy, medium = ("lookup", "easy"), ("change_item", "medium")
    records = [
        _rec("expert-1", easy, 1, 0.030), _rec("expert-1", easy, 1, 0.028),
        _rec("expert-2", easy, 1, 0.002), _rec("expert-2", easy, 0, 0.002),
        _rec("expert-1", medium, 1, 0.050), _rec("expert-1", medium, 1, 0.052),
        _rec("expert-2", medium, 0, 0.004), _rec("expert-2", medium, 1, 0.004),
    ]
    # utilities at 5 success units per USD: easy e1 1 - 0.145 = 0.855, e2 0.5 - 0.01 = 0.49;
    # medium e1 1 - 0.255 = 0.745, e2 0.5 - 0.02 = 0.48; overall e1 0.8 > e2 0.485
    r = RouterAgent.fit(records, cost_weight=5.0)
    assert r.table == {easy: "expert-1", medium: "expert-1"} and r.default == "expert-1"
    # at 20 per USD: easy e1 1 - 0.58 = 0.42 < e2 0.46; medium e1 1 - 1.02 < 0 < e2 0.42
    r = RouterAgent.fit(records, cost_weight=20.0)
    assert r.table == {easy: "expert-2", medium: "expert-2"} and r.cost_weight == 20.0
    with pytest.raises(ValueError, match="records is empty"):
        RouterAgent.fit([], 1.0)


def test_router_plays_its_cell_expert_every_turn():
    env = gym.make("ToolOrchestra-ToolScale-v0", system_prompt="compact", max_turns=6)
    obs, info = env.reset(seed=5, options={"tools": ["call_expert"]})
    cell = RouterAgent.features(env.unwrapped.task)
    r = RouterAgent({cell: "expert-3"}, default="expert-1")
    r.reset(env, obs, info)
    done = False
    while not done:
        obs, _, term, trunc, info = env.step(r.act(obs, info))
        done = term or trunc
    calls = info["tool_calls"]
    assert calls.get("expert-3", 0) >= 1 and "expert-1" not in calls and "expert-2" not in calls
    other = RouterAgent({}, default="expert-2")
    other.reset(env, *env.reset(seed=5, options={"tools": ["call_expert"]}))
    assert other.expert == "expert-2"


def test_delegating_agent_per_turn_per_episode_and_the_stated_kind():
    from orchestra_gym.agents import DelegatingAgent

    env = gym.make("ToolOrchestra-ToolScale-v0", system_prompt="compact", max_turns=6)

    def play(agent, seed):
        obs, info = env.reset(seed=seed, options={"tools": ["call_expert"]})
        agent.reset(env, obs, info)
        return [agent.act(obs, info) for _ in range(5)], env.unwrapped.task.category

    texts, _ = play(DelegatingAgent(3), 11)
    assert len({t for t in texts}) > 1 and not any("<think>" in t for t in texts)  # a fresh draw each turn
    texts, category = play(DelegatingAgent(3, per_episode=True, state_kind=True), 11)
    assert texts[0].startswith(f"<think>Request kind: {category.replace('_', ' ')}.</think>\n<tool_call>")
    assert len({t.split("</think>\n")[-1] for t in texts}) == 1 and all("<think>" not in t for t in texts[1:])


def test_fit_router_on_training_tasks_beats_the_fixed_experts_hull_there():
    from orchestra_gym.evaluation.fit import fit_router
    from orchestra_gym.evaluation import hull_gap

    def make():
        return gym.make("ToolOrchestra-ToolScale-v0", system_prompt="compact", max_turns=6)

    router, fit = fit_router(make, ["expert-1", "expert-2", "expert-3"], 120, seed=1_000_000,
                             options={"tools": ["call_expert"]})
    assert fit["tasks"] == 120 and set(fit["experts"]) == {"expert-1", "expert-2", "expert-3"}
    points = [(v["mean_cost_usd"], v["success"]) for v in fit["experts"].values()]
    assert fit["train_hull_gap"] == pytest.approx(hull_gap(fit["train_success"], fit["train_cost_usd"], points))
    assert fit["train_hull_gap"] > 0.02  # routing by task kind pays in this setting
    assert router.cost_weight == fit["cost_weight"] and len(router.table) >= 5
    # the medium tasks (5 actions in 6 turns) go to the strongest expert, easy ones to a cheaper one
    assert fit["table"].get("change_item/medium") == "expert-1"
    assert fit["table"].get("lookup/easy") in ("expert-2", "expert-3")


def test_delegating_agent_expert_weights_skew_the_draw_and_bad_weights_raise():
    from orchestra_gym.agents import DelegatingAgent

    env = gym.make("ToolOrchestra-ToolScale-v0", system_prompt="compact", max_turns=6)
    obs, info = env.reset(seed=4, options={"tools": ["call_expert"]})
    only = DelegatingAgent(0, expert_weights={"expert-2": 1.0})
    only.reset(env, obs, info)
    assert {only.act(obs, info) for _ in range(20)} == {
        '<tool_call>\n{"name": "call_expert", "arguments": {"expert": "expert-2"}, "id": ""}\n</tool_call>'}
    skewed = DelegatingAgent(0, expert_weights={"expert-1": 0.6, "expert-2": 0.2, "expert-3": 0.2})
    skewed.reset(env, obs, info)
    draws = [skewed._draw() for _ in range(2000)]
    assert abs(draws.count("expert-1") / 2000 - 0.6) < 0.04 and abs(draws.count("expert-3") / 2000 - 0.2) < 0.03
    with pytest.raises(ValueError, match=r"names \['expert-9'\], not experts of this environment"):
        DelegatingAgent(0, expert_weights={"expert-9": 1.0}).reset(env, obs, info)
    with pytest.raises(ValueError, match="positive sum"):
        DelegatingAgent(0, expert_weights={"expert-1": 0.0}).reset(env, obs, info)


