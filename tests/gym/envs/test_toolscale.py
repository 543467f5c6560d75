"""ToolOrchestra-ToolScale-v0 end to end: registration, check_env, agents, determinism, vector envs."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import orchestra_gym
from orchestra_gym.evaluation import evaluate
from orchestra_gym.domains.synthetic import DOMAIN_NAMES

ENV_ID = "ToolOrchestra-ToolScale-v0"


def test_registered_and_module_prefix_form_works_in_a_fresh_interpreter():
    code = (
        "import gymnasium as gym\n"
        "from gymnasium.utils.env_checker import check_env\n"
        f"env = gym.make('orchestra_gym:{ENV_ID}')\n"
        "obs, info = env.reset(seed=0)\n"
        "check_env(env.unwrapped)\n"
        "import sys; print('jax' in sys.modules, type(obs).__name__, info['episode_cost_usd'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False str 0.0"


def test_import_is_cheap():
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", "import orchestra_gym"], capture_output=True, text=True)
    assert out.returncode == 0
    modules = {line.split("|")[-1].strip() for line in out.stderr.splitlines() if "|" in line}
    assert not {m for m in modules if m.split(".")[0] in ("jax", "flax", "optax", "torch", "orchestra_jax")}
    assert "orchestra_gym.domains.synthetic" not in modules


def test_register_envs_form():
    gym.register_envs(orchestra_gym)
    assert ENV_ID in gym.registry


def test_check_env_passes():
    check_env(gym.make(ENV_ID).unwrapped)


def test_oracle_solves_every_domain_and_random_does_not():
    _, oracle = evaluate(ENV_ID, "oracle", 4 * len(DOMAIN_NAMES), seed=100)
    assert oracle["success_rate"] == 1.0
    _, random_ = evaluate(ENV_ID, "random", 40, seed=100)
    assert random_["success_rate"] <= 0.05
    assert oracle["mean_cost_usd"] == 0.0  # the oracle calls no expert


def test_experts_trade_cost_for_success():
    _, s1 = evaluate(ENV_ID, "expert-1", 40, seed=7)
    _, s3 = evaluate(ENV_ID, "expert-3", 40, seed=7)
    assert s1["mean_cost_usd"] > s3["mean_cost_usd"] > 0
    assert s1["success_rate"] > s3["success_rate"]
    assert s1["tool_calls"]["expert-1"] > 0 and "expert-1" not in s3["tool_calls"]


def _episode_dump(seed: int) -> str:
    code = (
        "import json, gymnasium as gym, numpy as np\n"
        "from orchestra_gym.agents import make_agent\n"
        f"env = gym.make('orchestra_gym:{ENV_ID}')\n"
        f"obs, info = env.reset(seed={seed}); a = make_agent('expert-2'); a.reset(env, obs, info); done=False\n"
        "while not done:\n"
        "    obs, r, t, tr, info = env.step(a.act(obs, info)); done = t or tr\n"
        "info = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in info.items()}\n"
        "print(json.dumps({'obs': obs, 'info': info}, sort_keys=True))\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


def test_same_seed_same_transcript_and_info_in_two_processes():
    a, b = _episode_dump(11), _episode_dump(11)
    assert a == b
    assert json.loads(a)["info"]["episode_cost_usd"] > 0
    assert _episode_dump(12) != a


def test_async_vector_env_without_shared_memory():
    envs = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="async", vector_kwargs={"shared_memory": False})
    try:
        obs, info = envs.reset(seed=[1, 2])
        assert len(obs) == 2 and all(isinstance(o, str) and o for o in obs)
        action = '<tool_call>{"name": "call_expert", "arguments": {"expert": "expert-3"}}</tool_call>'
        obs, rew, term, trunc, info = envs.step([action, action])
        assert info["cost_usd"].dtype == np.float64 and (info["cost_usd"] > 0).all()
    finally:
        envs.close()


def test_task_id_option_and_errors():
    env = gym.make(ENV_ID)
    d = DOMAIN_NAMES[0]
    _, info = env.reset(seed=0, options={"task_id": f"{d}-5"})
    assert info["task_id"] == env.unwrapped.task.id and env.unwrapped.task.domain == f"synthetic/{d}"
    with pytest.raises(ValueError, match="expected '<domain>-<seed>'"):
        env.reset(options={"task_id": "nonsense"})
    with pytest.raises(ValueError, match="unknown ToolScale domain"):
        gym.make(ENV_ID, domains=["atlantis"])


def test_expert_proposals_do_not_reveal_golden_ids():
    env = gym.make(ENV_ID)
    env.reset(seed=0)
    text = ""
    for _ in range(5):
        _, _, term, trunc, info = env.step({"name": "call_expert", "arguments": {"expert": "expert-3"}})
        text += "".join(m["content"] for m in info["new_messages"])
        if term or trunc:
            break
    assert "expert-3 called" in text and "gold_" not in text


def _call(expert: str) -> dict:
    return {"name": "call_expert", "arguments": {"expert": expert}}


def test_expert_scope_turn_carries_out_the_whole_turn():
    """One call of expert-1 with expert_scope="turn" plays the golden actions and the closing message."""
    env = gym.make(ENV_ID, expert_scope="turn", max_turns=30)
    for seed in range(40):  # the first task with 2+ golden actions that expert-1 gets right in one turn
        env.reset(seed=seed)
        golden = list(env.unwrapped.task.golden_actions)
        _, reward, term, trunc, info = env.step(_call("expert-1"))
        if term and info["solved"] and len(golden) >= 2:
            break
    assert term and not trunc and reward == 1.0 and info["solved"]
    assert [c.name for c in env.unwrapped.trajectory if c.name != "call_expert"] == [g.name for g in golden]
    assert info["tool_calls"]["expert-1"] == 1  # one delegation, however many actions it took
    assert info["turn"] == len(golden) + 1  # each action is a step toward max_turns (tau2's max_steps)
    text = info["new_messages"][1]["content"]
    assert text.count("expert-1 called") == len(golden) and "expert-1 sent the user this message" in text
    assert "carry out your turn" in env.unwrapped._expert_spec().description
    env.close()


def test_expert_scope_turn_counts_actions_toward_max_turns():
    env = gym.make(ENV_ID, expert_scope="turn", max_turns=3)
    for seed in range(60):
        env.reset(seed=seed)
        if len(env.unwrapped.task.golden_actions) > 3:
            break
    _, reward, term, trunc, info = env.step(_call("expert-1"))
    assert trunc and not term and info["end_reason"] == "turn_limit" and reward == 0.0
    assert info["answered"] is True  # a graded failure of valid actions (tau2-bench's max_steps: reward 0)
    assert len([c for c in env.unwrapped.trajectory if c.name != "call_expert"]) == 3 and info["turn"] == 3
    one = gym.make(ENV_ID, max_turns=3)  # the default scope: one action per call, the same budget
    one.reset(seed=seed)
    for _ in range(3):
        _, _, _, trunc_one, info_one = one.step(_call("expert-1"))
    assert trunc_one and len([c for c in one.unwrapped.trajectory if c.name != "call_expert"]) == 3 and info_one["tool_calls"]["expert-1"] == 3
    # the cost of the turn is the sum of its actions' usage
    assert info["episode_cost_usd"] == pytest.approx(info["cost_usd"]) and info["cost_usd"] > 0
    with pytest.raises(ValueError, match="expert_scope must be one of"):
        gym.make(ENV_ID, expert_scope="episode")


def test_answered_marks_graded_ends_not_malformed_ones():
    env = gym.make(ENV_ID, max_errors=2, max_turns=6)
    env.reset(seed=3)
    for _ in range(2):
        _, _, term, trunc, info = env.step("<tool_call>{not json</tool_call>")
    assert trunc and not term and info["end_reason"] == "too_many_errors" and info["answered"] is False
    # a valid action (a call with a wrong expert name: a tool error, not a malformed action), then a
    # malformed turn: graded 0 as tau2-bench scores TOO_MANY_ERRORS, so the valid turn gets the outcome
    one = gym.make(ENV_ID, max_errors=1, max_turns=6)
    one.reset(seed=3)
    _, _, term, trunc, info = one.step(_call("expert-32"))
    assert not (term or trunc) and info["parse_errors"] == 0.0 and "expert-32" in info["new_messages"][1]["content"]
    _, reward, term, trunc, info = one.step("</tool_call>")
    assert trunc and info["end_reason"] == "too_many_errors" and info["answered"] is True
    assert reward == 0.0 and info["outcome"] == 0.0 and not info["solved"]
    one.reset(seed=3)  # the count starts again at reset: a malformed first turn stays unanswered
    _, _, _, trunc, info = one.step("</tool_call>")
    assert trunc and info["answered"] is False
    env.reset(seed=3)
    done = False
    while not done:
        _, _, term, trunc, info = env.step(env.unwrapped.oracle_action())
        done = term or trunc
    assert term and info["solved"] and info["answered"] is True


def test_expert_profiles_kwarg_changes_the_simulated_pool_the_prompt_states():
    """``expert_profiles`` (`orchestra_gym.tools.simulated.with_profiles`): a slower expert-3 is what the system
    prompt states and what a call to it costs in time; with real experts (``models=``) it is refused."""
    slow = gym.make(ENV_ID, system_prompt="compact", expert_profiles={"expert-3": {"decode_tok_s": 20, "ttft_s": 1.0}})
    base = gym.make(ENV_ID, system_prompt="compact")
    obs_slow, _ = slow.reset(seed=3)
    obs_base, _ = base.reset(seed=3)
    assert "expert-3: $0.8/1M input tokens, $0.8/1M output tokens, about 14 s per call" in obs_slow
    assert "about 2 s per call" in obs_base and "about 14 s per call" not in obs_base
    call = {"name": "call_expert", "arguments": {"expert": "expert-3"}}
    info_slow, info_base = slow.step(call)[4], base.step(call)[4]
    # at least 1 s + 100 completion tokens at 20 tokens/s; at most 0.3 s + 400 at 150/s and the prefill
    assert info_slow["latency_s"] >= 1.0 + 100 / 20 > 0.3 + 400 / 150 + info_base["prompt_tokens"] / 5000 >= info_base["latency_s"]
    with pytest.raises(ValueError, match="expert_profiles"):
        gym.make(ENV_ID, expert_profiles={"expert-7": {"ttft_s": 1.0}})
    with pytest.raises(ValueError, match="simulated experts only"):
        gym.make(ENV_ID, models={"models": {}}, expert_profiles={"expert-3": {"ttft_s": 1.0}})
