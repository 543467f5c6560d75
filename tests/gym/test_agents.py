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
