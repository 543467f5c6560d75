"""`OrchestraEnv.describe()` (`orchestra_gym.description.EnvDescription`), ``info["preference_weights"]`` and
`OrchestraEnv.reward_vector_so_far`: the env's public view of its episode, read instead of its privates."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import orchestra_gym  # noqa: F401
from orchestra_gym.agents import ExpertAgent, make_agent
from orchestra_gym.domains.synthetic import CATEGORIES, DOMAIN_NAMES
from orchestra_gym.evaluation import play_episode
from orchestra_gym.rewards import RewardLayout
from orchestra_gym.wrappers import TaskFeatures, candidate_actions

TOOLSCALE = "ToolOrchestra-ToolScale-v0"
EXPERTS = ["expert-1", "expert-2", "expert-3"]
NAMES = ["calls/expert-1", "calls/expert-2", "calls/expert-3", "outcome", "-cost_usd", "-latency_s"]


def test_toolscale_describes_itself_before_and_after_reset():
    env = gym.make(TOOLSCALE, domains=["railway", "travel"])
    before = env.unwrapped.describe()
    assert (before.tools, before.task_id, list(before.experts)) == ((), None, EXPERTS)
    assert before.domains == ("railway", "travel") and before.categories == tuple(CATEGORIES)
    assert before.env_class == "ToolScaleEnv" and before.expert_tool and before.expert_pool is None
    assert before.oracle and before.max_turns == 30 and before.task_ids == ()
    pref = {"outcome": 1.0, "cost": 0.5, "tools": {"expert-2": 0.25}}
    _, info = env.reset(seed=3, options={"tools": ["call_expert"], "preference": pref, "pricing": "deepinfra"})
    d = env.unwrapped.describe()
    assert [t.name for t in d.tools] == ["call_expert"] and d.tools[0].kind == "model"
    assert d.task_id == info["task_id"] and d.reward_vector_names == NAMES
    assert d.preference_weights == (0.0, 0.25, 0.0, 1.0, 0.5, 0.0)
    assert d.pricing_schedule == "deepinfra" and d.pricing.name == "deepinfra"
    assert d.tool_models() == {}  # no tool takes a ``model`` argument (QA envs: search / enhance_reasoning / answer)
    assert d.tools[0].model_choices() == ("expert", EXPERTS)
    with pytest.raises(Exception):  # frozen
        d.task_id = "x"  # type: ignore[misc]


def test_the_env_reports_the_weights_of_its_reward_vector_and_the_cut_vector():
    env = gym.make(TOOLSCALE)
    pref = {"outcome": 1.0, "cost": 2.0, "latency": 0.1, "tools": {"expert-3": 0.5}}
    obs, info = env.reset(seed=5, options={"preference": pref})
    agent = ExpertAgent("expert-1")
    agent.reset(env, obs, info)
    obs, _, term, trunc, info = env.step(agent.act(obs, info))
    so_far = env.unwrapped.reward_vector_so_far()
    assert not (term or trunc) and "reward_vector" not in info
    np.testing.assert_array_equal(so_far, RewardLayout.from_names(NAMES).vector_from_info(info, outcome=0.0))
    assert so_far[0] == 1.0 and so_far[4] == -info["episode_cost_usd"] < 0 and so_far[5] == -info["episode_latency_s"]
    result = play_episode(env, make_agent("oracle"), 5, {"preference": pref})
    weights = result.info["preference_weights"]
    assert weights == [0.0, 0.0, 0.5, 1.0, 2.0, 0.1] == list(env.unwrapped.describe().preference_weights)
    assert len(weights) == len(result.info["reward_vector"]) and all(type(w) is float for w in weights)


def test_pool_and_task_list_envs_describe_their_offer():
    env = gym.make(TOOLSCALE, expert_pool="tradeoffs", offer_size=3, pricing_schedules=["random"])
    _, info = env.reset(seed=2)
    d = env.unwrapped.describe()
    assert d.expert_pool == "tradeoffs" and list(d.experts) == info["offered_experts"] and len(d.experts) == 3
    assert d.pricing_schedule == info["pricing_schedule"] == "random"
    assert d.reward_layout.tools == tuple(env.unwrapped.reward_layout.tools) and len(d.reward_layout.tools) > 3
    assert candidate_actions(env) == [{"name": "call_expert", "arguments": {"expert": e}} for e in info["offered_experts"]]
    tau2 = gym.make("ToolOrchestra-Tau2-Mock-v0")
    t = tau2.unwrapped.describe()
    assert list(t.task_ids) == tau2.unwrapped.task_ids and len(t.task_ids) == 9
    assert (t.domains, t.categories) == (("mock",), ("tau2/mock",))
    feats = TaskFeatures.for_env(tau2)
    assert (feats.domains, feats.categories) == (["mock"], ["tau2/mock"])
    assert TaskFeatures.for_env(gym.make(TOOLSCALE)).domains == list(DOMAIN_NAMES)
