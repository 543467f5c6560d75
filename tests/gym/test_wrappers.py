"""Tests of orchestra_gym.wrappers: ToolChoice, Budget, Preference (check_env, values, composition)."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import orchestra_gym  # noqa: F401  (registers the ids)
from orchestra_gym.domains.tau2.data import data_dir
from orchestra_gym.wrappers import Budget, Preference, SleepLatency, TaskFeatures, ToolChoice, candidate_actions, preference_reward

TOOLSCALE = "ToolOrchestra-ToolScale-v0"
TAU2 = data_dir()
PREF = {"outcome": 1.0, "cost": 0.05, "latency": 0.05}


def _check_env_warnings(env: gym.Env) -> list[str]:
    """Run check_env; return its warnings except the one every wrapped env gets."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    # ResourceWarnings come from the garbage collector (objects of earlier tests), not from check_env
    return [str(w.message) for w in caught
            if "is different from the unwrapped version" not in str(w.message) and w.category is not ResourceWarning]


def _play(env: gym.Env, action, seed: int):
    obs, info = env.reset(seed=seed)
    rewards, done = [], False
    while not done:
        obs, r, terminated, truncated, info = env.step(action)
        rewards.append(r)
        done = terminated or truncated
    return rewards, info, terminated, truncated


# ------------------------------------------------------------------------------- check_env
@pytest.mark.parametrize(
    "wrap",
    [
        lambda e: ToolChoice(e),
        lambda e: Budget(e, max_cost_usd=0.02, max_latency_s=120.0),
        lambda e: Preference(e, PREF),
        lambda e: Preference(e),
        lambda e: ToolChoice(Budget(Preference(e, PREF), max_cost_usd=0.05)),
    ],
    ids=["toolchoice", "budget", "preference-fixed", "preference-sampled", "stack"],
)
def test_each_wrapper_passes_check_env(wrap):
    env = wrap(gym.make(TOOLSCALE))
    assert _check_env_warnings(env) == []
    # the spec records the wrapper stack, so spec.make rebuilds it (check_env's render/close checks use it)
    rebuilt = env.spec.make()
    assert [w.name for w in rebuilt.spec.additional_wrappers] == [w.name for w in env.spec.additional_wrappers]
    rebuilt.close()


# ------------------------------------------------------------------------------- ToolChoice
def test_toolchoice_spaces_and_features_of_a_known_task():
    env = ToolChoice(gym.make(TOOLSCALE))
    assert env.action_space == gym.spaces.Discrete(3)
    assert env.action_names == ["call_expert(expert-1)", "call_expert(expert-2)", "call_expert(expert-3)"]
    obs, info = env.reset(seed=0)
    task = env.unwrapped.task
    assert (task.domain, task.category, task.difficulty) == ("synthetic/restaurant", "search_and_book", "medium")
    names = env.feature_fn.names
    assert obs.shape == (len(names),) == env.observation_space.shape and obs.dtype == np.float32
    hot = [names[i] for i in np.flatnonzero(obs)]
    assert hot == ["domain=restaurant", "category=search_and_book", "difficulty=medium"]  # turn 0, no cost yet
    obs, r, term, trunc, info = env.step(0)
    assert info["action"] == {"name": "call_expert", "arguments": {"expert": "expert-1"}}
    assert info["tool_calls"]["call_expert"] == 1.0 and info["tool_calls"]["expert-1"] == 1.0
    f = dict(zip(names, obs.tolist()))
    assert f["turn_fraction"] == pytest.approx(1 / 30)
    assert f["cost"] == pytest.approx(info["episode_cost_usd"] / 0.01, rel=1e-6) and f["cost"] > 0
    assert f["latency"] == pytest.approx(info["episode_latency_s"] / 60.0, rel=1e-6)


@pytest.mark.parametrize("action", [0, 1, 2])
def test_toolchoice_rewards_sum_to_the_documented_preference_reward(action):
    env = ToolChoice(Preference(gym.make(TOOLSCALE), PREF))
    rewards, info, _, _ = _play(env, action, seed=5)
    expected = (
        info["outcome"] - 0.05 * info["episode_cost_usd"] / 0.01 - 0.05 * info["episode_latency_s"] / 60.0
    )
    assert info["preference_reward"] == pytest.approx(expected, abs=1e-9)
    assert sum(rewards) == pytest.approx(expected, abs=1e-6)
    assert info["env_reward"] == info["outcome"]  # the wrapped env's own reward is kept in info
    assert info["tool_calls"][f"expert-{action + 1}"] == info["turn"]  # every turn went to that expert


def test_toolchoice_tool_weights_reward_each_call():
    env = ToolChoice(Preference(gym.make(TOOLSCALE), {"outcome": 1.0, "tools": {"expert-3": 0.1}}))
    rewards, info, _, _ = _play(env, 2, seed=1)
    assert sum(rewards) == pytest.approx(info["outcome"] + 0.1 * info["tool_calls"]["expert-3"], abs=1e-6)
    assert rewards[0] == pytest.approx(0.1)  # first step: one call of expert-3, no cost weight


def test_strong_expert_wins_outcome_cheap_expert_wins_cost():
    """The routing problem is real: over the same 40 tasks expert-1 solves more, expert-3 costs less."""
    env = ToolChoice(gym.make(TOOLSCALE))
    out = {}
    for a in (0, 2):
        infos = [_play(env, a, seed=s)[1] for s in range(40)]
        out[a] = (np.mean([i["outcome"] for i in infos]), np.mean([i["episode_cost_usd"] for i in infos]))
    assert out[0][0] > out[2][0] + 0.15
    # expert-3 is priced as Qwen3-32B (0.8/0.8 USD per 1M tokens; the paper's pool, pricing.EXPERT_POOL),
    # no longer Qwen3-8B (0.2/0.2): expert-1 costs about 2.3x as much, not > 5x
    assert out[0][1] > 2 * out[2][1]


def test_toolchoice_rejects_bad_actions_and_custom_feature_fn_needs_a_space():
    env = ToolChoice(gym.make(TOOLSCALE))
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action must be an int in \[0, 3\)"):
        env.step(3)
    with pytest.raises(ValueError, match="observation_space"):
        ToolChoice(gym.make(TOOLSCALE), feature_fn=lambda e, i: np.zeros(2, np.float32))
    box = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
    env = ToolChoice(gym.make(TOOLSCALE), feature_fn=lambda e, i: np.array([i["turn"] / 30], np.float32), observation_space=box)
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(1)
    assert obs.tolist() == [pytest.approx(1 / 30)]


def test_argument_policy_fills_the_action():
    seen = []

    def policy(candidate, info):
        seen.append((candidate["arguments"]["expert"], info.get("turn")))
        return {"name": "call_expert", "arguments": {"expert": "expert-3"}}  # always the cheapest

    env = ToolChoice(gym.make(TOOLSCALE), argument_policy=policy)
    env.reset(seed=2)
    _, _, _, _, info = env.step(0)
    assert seen == [("expert-1", 0.0)]
    assert info["tool_calls"].get("expert-3") == 1.0 and "expert-1" not in info["tool_calls"]


def test_candidate_actions_errors_name_the_fix():
    env = gym.make(TOOLSCALE, expert_tool=False)
    with pytest.raises(ValueError, match="reset the env before wrapping"):
        candidate_actions(env)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="offers no model calls"):
        candidate_actions(env)


@pytest.mark.skipif(not TAU2.is_dir(), reason=f"tau2 data not found at {TAU2} (set ORCHESTRA_DATA_DIR or TAU2_DATA_DIR)")
def test_toolchoice_on_tau2_mock():
    env = ToolChoice(gym.make("ToolOrchestra-Tau2-Mock-v0", data_dir=str(TAU2)))
    assert env.action_space.n == 3
    assert env.feature_fn.domains == ["mock"] and env.feature_fn.categories == ["tau2/mock"]
    assert _check_env_warnings(env) == []
    rewards, info, _, _ = _play(env, 0, seed=0)
    assert info["preference_reward"] == pytest.approx(info["outcome"])  # default preference: outcome only
    assert sum(rewards) == pytest.approx(info["outcome"])


# ------------------------------------------------------------------------------- Budget
def test_budget_truncates_past_cost_and_reports_why():
    rewards, info, term, trunc = _play(Budget(gym.make(TOOLSCALE), max_cost_usd=0.02), '<tool_call>{"name": "call_expert", "arguments": {"expert": "expert-1"}}</tool_call>', seed=0)
    assert trunc and not term
    assert info["budget_exceeded"] == "cost" and info["end_reason"] == "cost_budget"
    assert info["episode_cost_usd"] > 0.02
    assert info["episode_cost_usd"] - info["cost_usd"] <= 0.02  # the step before was within budget
    assert info["outcome"] == 0.0 and info["solved"] is False and rewards[-1] == 0.0
    assert info["reward_vector_names"] == ["calls/expert-1", "calls/expert-2", "calls/expert-3", "outcome", "-cost_usd", "-latency_s"]
    np.testing.assert_allclose(
        info["reward_vector"], [info["turn"], 0, 0, 0, -info["episode_cost_usd"], -info["episode_latency_s"]]
    )


def test_budget_step_after_its_cut_needs_a_reset():
    env = Budget(gym.make(TOOLSCALE), max_cost_usd=0.02)
    expert = '<tool_call>{"name": "call_expert", "arguments": {"expert": "expert-1"}}</tool_call>'
    rewards, info, term, trunc = _play(env, expert, seed=0)
    assert trunc and info["end_reason"] == "cost_budget"
    np.testing.assert_array_equal(info["reward_vector"], env.unwrapped.reward_layout.vector_from_info(info))
    with pytest.raises(gym.error.ResetNeeded, match="cut by the budget; call reset"):
        env.step(expert)
    env.reset(seed=0)
    _, _, term, trunc, info = env.step(expert)
    assert not term and not trunc and "budget_exceeded" not in info


def test_budget_truncates_past_latency():
    env = ToolChoice(Budget(gym.make(TOOLSCALE), max_latency_s=30.0))
    rewards, info, term, trunc = _play(env, 0, seed=0)
    assert trunc and info["end_reason"] == "latency_budget" and info["budget_exceeded"] == "latency"
    assert info["episode_latency_s"] > 30.0 >= info["episode_latency_s"] - info["latency_s"]
    assert info["preference_reward"] == 0.0  # outcome 0, no cost weight in the default preference


def test_budget_leaves_cheap_episodes_alone():
    env = Budget(gym.make(TOOLSCALE), max_cost_usd=1e-6)
    obs, info = env.reset(seed=3)
    done = False
    while not done:  # the oracle plays free domain tools: never over budget
        obs, r, term, trunc, info = env.step(env.unwrapped.oracle_action())
        done = term or trunc
    assert term and not trunc and info["solved"] and "budget_exceeded" not in info
    assert info["budget"] == {"max_cost_usd": 1e-6, "max_latency_s": None}


def test_budget_arguments_are_checked():
    with pytest.raises(ValueError, match="max_cost_usd .USD. or max_latency_s"):
        Budget(gym.make(TOOLSCALE))
    with pytest.raises(ValueError, match="max_latency_s must be > 0"):
        Budget(gym.make(TOOLSCALE), max_latency_s=0)


# ------------------------------------------------------------------------------- Preference
def test_fixed_preference_reaches_the_env():
    env = Preference(gym.make(TOOLSCALE), PREF)
    _, info = env.reset(seed=0)
    assert info["preference"] == {"tools": {}, "outcome": 1.0, "cost": 0.05, "latency": 0.05}
    _, info = env.reset(seed=0, options={"preference": {"outcome": 1.0, "cost": 0.9}})  # explicit option wins
    assert info["preference"]["cost"] == 0.9


def test_sampled_preference_is_seeded_and_leaves_the_task_draw_alone():
    env = Preference(gym.make(TOOLSCALE))
    prefs = [env.reset(seed=s)[1]["preference"] for s in (7, 7, 8)]
    assert prefs[0] == prefs[1] and prefs[0] != prefs[2]
    for p in prefs:
        assert p["outcome"] == 1.0 and 0.0 <= p["cost"] < 1.0 and 0.0 <= p["latency"] < 1.0
    expected = np.random.default_rng([7, 0x50524546])
    assert prefs[0]["cost"] == expected.uniform() and prefs[0]["latency"] == expected.uniform()
    plain = gym.make(TOOLSCALE)
    plain.reset(seed=7)
    env.reset(seed=7)
    assert env.unwrapped.task.id == plain.unwrapped.task.id
    # without seeds, successive episodes draw new vectors
    unseeded = [env.reset()[1]["preference"]["cost"] for _ in range(3)]
    assert len(set(unseeded)) == 3


def test_custom_sampler_and_argument_errors():
    env = Preference(gym.make(TOOLSCALE), sampler=lambda rng: {"outcome": 1.0, "cost": float(rng.integers(1, 4))})
    costs = {env.reset(seed=s)[1]["preference"]["cost"] for s in range(20)}
    assert costs == {1.0, 2.0, 3.0}
    with pytest.raises(ValueError, match="not both"):
        Preference(gym.make(TOOLSCALE), PREF, sampler=lambda rng: PREF)
    with pytest.raises(ValueError, match="unknown preference key"):
        Preference(gym.make(TOOLSCALE), {"speed": 1.0})


# ------------------------------------------------------------------------------- helpers
def test_preference_reward_formula():
    p = {"outcome": 2.0, "cost": 0.5, "latency": 0.25, "tools": {"expert-1": -0.1}}
    r = preference_reward(p, 1.0, 0.03, 120.0, {"expert-1": 3.0}, cost_scale_usd=0.01, latency_scale_s=60.0)
    assert r == pytest.approx(2.0 - 0.5 * 3 - 0.25 * 2 - 0.3)
    with pytest.raises(ValueError, match="must be > 0"):
        preference_reward(p, 1.0, 0.0, 0.0, cost_scale_usd=0.0)


def test_task_features_unknown_values_go_to_other():
    feats = TaskFeatures(["a"], ["x"])
    assert feats.names[:4] == ["domain=a", "domain=other", "category=x", "category=other"]
    assert feats._one_hot("synthetic/a", ["a"]) == [1.0, 0.0]
    assert feats._one_hot("b", ["a"]) == [0.0, 1.0]


def test_sleep_latency_sleeps_the_steps_latency_scaled_and_clipped():
    slept = []
    env = SleepLatency(gym.make("ToolOrchestra-ToolScale-v0"), scale=0.05, min_s=0.5, max_s=3.0, sleep=slept.append)
    plain = gym.make("ToolOrchestra-ToolScale-v0")
    env.reset(seed=3)
    plain.reset(seed=3)
    action = '<tool_call>\n{"name": "call_expert", "arguments": {"expert": "expert-3"}}\n</tool_call>'
    out, ref = env.step(action), plain.step(action)
    assert out[1] == ref[1] and out[4]["latency_s"] == ref[4]["latency_s"]  # the env's results are unchanged
    assert slept == [min(3.0, max(0.5, ref[4]["latency_s"] * 0.05))]
    with pytest.raises(ValueError):
        SleepLatency(plain, min_s=2.0, max_s=1.0)
