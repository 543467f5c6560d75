"""OrchestraEnv's turn loop, info accounting, error handling and limits, on a toy domain."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from orchestra_gym.envs.function_calling import FunctionCallingEnv
from orchestra_gym.errors import ResetNeeded
from orchestra_gym.types import Task, ToolCall, ToolResult, ToolSpec

INFO_FLOATS = ("cost_usd", "latency_s", "prompt_tokens", "completion_tokens", "episode_cost_usd",
               "episode_latency_s", "parse_errors")


class CounterBackend:
    """A one-table domain: `add(n)` adds to a counter; the task is to reach the target and say it."""

    def __init__(self, task: Task):
        self.task = task
        self.value = 0
        self.policy = "Add to the counter until it equals the target, then tell the user the value."
        self.tools = [
            ToolSpec("add", "Add n to the counter.", {"type": "object", "properties": {"n": {"type": "integer"}},
                                                      "required": ["n"]}, kind="write"),
            ToolSpec("transfer_to_human_agents", "Transfer.", {"type": "object", "properties": {}}, kind="generic"),
        ]

    def call_tool(self, name, arguments, requestor="assistant"):
        if name == "add":
            n = arguments.get("n")
            if not isinstance(n, int):
                return ToolResult(f"Error: 'n' must be an integer, got {n!r}", error=True)
            self.value += n
            return ToolResult(str(self.value))
        if name == "transfer_to_human_agents":
            return ToolResult("Transfer successful")
        return ToolResult(f"Error: unknown tool {name}", error=True)

    def grade(self, agent_messages, trajectory):
        target = int(self.task.answer)
        db = float(self.value == target)
        said = float(any(str(target) in m for m in agent_messages))
        return db * said, {"db": db, "communicate": said}


class CounterEnv(FunctionCallingEnv):
    def _sample_task(self, task_id):
        target = int(self.np_random.integers(1, 5)) if task_id is None else int(task_id)
        return Task(id=str(target), domain="counter", answer=str(target), difficulty="easy",
                    golden_actions=[ToolCall("add", {"n": target}, "gold_0")], communicate_info=[str(target)],
                    user_scenario={"instructions": {"reason_for_call": "Please set my counter.",
                                                    "known_info": f"The target is {target}."}})

    def _new_backend(self, task):
        return CounterBackend(task)


def _play(env, actions, seed=0, options=None):
    obs, info = env.reset(seed=seed, options=options)
    out = []
    for a in actions:
        step = env.step(a)
        out.append(step)
        if step[2] or step[3]:
            break
    return obs, info, out


def test_oracle_episode_info_and_reward_vector():
    env = CounterEnv()
    obs, info = env.reset(seed=0, options={"task_id": 3})
    assert "Please set my counter. The target is 3." in obs
    assert all(isinstance(info[k], float) for k in INFO_FLOATS)
    obs, r, term, trunc, info = env.step('<tool_call>{"name": "add", "arguments": {"n": 3}}</tool_call>')
    assert (r, term, trunc) == (0.0, False, False)
    assert info["tool_calls"] == {"add": 1.0}
    obs, r, term, trunc, info = env.step(env.oracle_action())
    assert term and not trunc and r == 1.0
    assert info["outcome"] == 1.0 and info["solved"] is True
    assert info["reward_vector_names"] == ["calls/expert-1", "calls/expert-2", "calls/expert-3", "outcome", "-cost_usd", "-latency_s"]
    np.testing.assert_array_equal(info["reward_vector"], [0, 0, 0, 1.0, -0.0, -0.0])
    assert info["reward_breakdown"] == {"db": 1.0, "communicate": 1.0}
    assert info["end_reason"] == "user_stop"


def test_expert_call_is_charged_and_executed():
    env = CounterEnv()
    env.reset(seed=1, options={"task_id": 2})
    _, _, _, _, info = env.step({"name": "call_expert", "arguments": {"expert": "expert-1"}})
    assert info["tool_calls"]["call_expert"] == 1.0 and info["tool_calls"]["expert-1"] == 1.0
    assert info["cost_usd"] > 0 and info["latency_s"] > 0 and info["prompt_tokens"] > 0
    assert info["episode_cost_usd"] == info["cost_usd"]
    assert "expert-1 called" in info["new_messages"][1]["content"]


def test_malformed_action_is_an_observation_then_truncation():
    env = CounterEnv(max_errors=2)
    env.reset(seed=0)
    obs, r, term, trunc, info = env.step('<tool_call>{"name": "add", "arguments": {"n": 1}</tool_call>')
    assert not term and not trunc and info["parse_errors"] == 1.0
    assert "could not be executed" in obs and info["step_errors"]
    obs, r, term, trunc, info = env.step("<tool_call>not json</tool_call>")
    assert trunc and not term and info["outcome"] == 0.0 and info["end_reason"] == "too_many_errors"
    with pytest.raises(ResetNeeded, match=r"episode has ended \(too_many_errors\); call reset\(\)"):
        env.step("<message>hi</message>")


def test_step_before_reset_and_after_the_end_raise_reset_needed():
    """Gymnasium's own exception type (`gymnasium.error.ResetNeeded`), re-exported by `orchestra_gym.errors`."""
    assert ResetNeeded is gymnasium.error.ResetNeeded
    env = CounterEnv()
    with pytest.raises(ResetNeeded, match=r"step\(\) was called before reset\(\)"):
        env.step("<message>hi</message>")
    env.reset(seed=0, options={"task_id": 1})
    env.step('<tool_call>{"name": "add", "arguments": {"n": 1}}</tool_call>')
    _, _, term, _, info = env.step(env.oracle_action())
    assert term and info["end_reason"] == "user_stop"
    with pytest.raises(ResetNeeded, match=r"episode has ended \(user_stop\)"):
        env.step(env.oracle_action())
    env.reset(seed=0, options={"task_id": 1})  # reset makes the env usable again
    _, _, term, trunc, _ = env.step('<tool_call>{"name": "add", "arguments": {"n": 1}}</tool_call>')
    assert not term and not trunc


def test_unknown_tool_and_bad_arguments_do_not_raise():
    env = CounterEnv()
    env.reset(seed=0)
    _, _, _, _, info = env.step('<tool_call>{"name": "ad", "arguments": {"n": 1}}</tool_call>')
    assert "did you mean 'add'" in info["new_messages"][1]["content"]
    _, _, _, _, info = env.step('<tool_call>{"name": "add", "arguments": {"n": "x"}}</tool_call>')
    assert info["new_messages"][1]["content"].startswith("Error: 'n' must be an integer")


def test_turn_limit_truncates():
    env = CounterEnv(max_turns=2)
    _, _, out = _play(env, ['<tool_call>{"name": "add", "arguments": {"n": 0}}</tool_call>'] * 5)
    assert len(out) == 2 and out[-1][3] and out[-1][4]["end_reason"] == "turn_limit"


def test_two_calls_in_one_turn_each_answered_in_order():
    env = CounterEnv()
    env.reset(seed=0, options={"task_id": 4})
    text = ('<tool_call>{"name": "add", "arguments": {"n": 1}}</tool_call> then '
            '<tool_call>{"name": "add", "arguments": {"n": 2}}</tool_call>')
    _, _, _, _, info = env.step(text)
    tools = [m for m in info["new_messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tools] == ["1", "3"]
    assert [m["tool_call_id"] for m in tools] == ["call_0", "call_1"]


def test_reset_options_are_validated():
    env = CounterEnv()
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(seed=0, options={"task": 1})
    with pytest.raises(ValueError, match="unknown tool"):
        env.reset(seed=0, options={"tools": ["add", "nope"]})
    _, info = env.reset(seed=0, options={"tools": ["add"], "preference": {"cost": 1.0}, "pricing": 5})
    assert [t["function"]["name"] for t in info.get("tools", [])] in ([], ["add"])
    assert env.unwrapped.pricing.name == "paper-random-5"
    assert info["preference"]["cost"] == 1.0


def test_transfer_terminates():
    env = CounterEnv()
    env.reset(seed=0)
    _, r, term, trunc, info = env.step({"name": "transfer_to_human_agents", "arguments": {}})
    assert term and info["end_reason"] == "transfer" and r == 0.0


def test_check_env_passes():
    check_env(CounterEnv())


def test_unknown_arguments_of_a_call_that_ran_are_reported_and_counted():
    import gymnasium as gym

    from orchestra_gym.envs.qa import QAEnv

    qa = QAEnv("hle", tasks=[Task("1", "hle", "What is the capital city of Zembla?", "Vornstad")])
    qa.reset(seed=0)
    _, _, _, _, info = qa.step({"name": "search", "arguments": {"model": "search-1", "query": "Zembla capital", "k": 3}})
    note = "search: ignored unknown argument(s) ['k']; search takes ['model', 'query']"
    assert info["step_errors"] == [note] and info["parse_errors"] == 1.0
    assert info["new_messages"][1]["content"].endswith(f"\n[environment] {note}")
    env = gym.make("ToolOrchestra-ToolScale-v0")
    env.reset(seed=0)
    _, _, _, _, info = env.step({"name": "call_expert", "arguments": {"expert": "expert-2", "bogus": 1}})
    assert info["parse_errors"] == 1.0 and info["step_errors"][0].startswith("call_expert: ignored unknown argument(s) ['bogus']")
    _, _, _, _, info = env.step({"name": "calculate", "arguments": {"expression": "1 + 1", "bogus": 1}})
    # refused by the tool itself: no second note in the observation and parse_errors unchanged, but counted
    assert info["parse_errors"] == 1.0 and info["argument_error_turns"] == 2.0
    assert info["step_errors"] == ["calculate: argument 'bogus': unknown argument; calculate takes ['expression']"]
    assert "unexpected argument 'bogus'" in info["new_messages"][1]["content"]
    assert "[environment]" not in info["new_messages"][1]["content"]


def test_a_tool_argument_error_is_counted_with_the_tool_and_the_field():
    """issue 37: call_expert with {"model": ...} was refused by the tool but counted nowhere."""
    import gymnasium as gym

    env = gym.make("ToolOrchestra-ToolScale-v0")
    _, info = env.reset(seed=0)
    assert info["argument_errors"] == [] and info["argument_error_turns"] == 0.0
    obs, _, _, _, info = env.step({"name": "call_expert", "arguments": {"model": "expert-2"}})
    assert "call_expert needs 'expert' to be one of" in info["new_messages"][1]["content"]
    assert info["argument_errors"] == [
        {"tool": "call_expert", "field": "expert", "problem": "'expert' is a required property"},
        {"tool": "call_expert", "field": "model", "problem": "unknown argument; call_expert takes ['expert']"},
    ]
    assert info["step_errors"] == [
        "call_expert: argument 'expert': 'expert' is a required property",
        "call_expert: argument 'model': unknown argument; call_expert takes ['expert']",
    ]
    # apart from parse_errors: max_errors (the training setting's 1) is not spent on it
    assert info["parse_errors"] == 0.0 and info["argument_error_turns"] == 1.0
    _, _, _, _, info = env.step({"name": "call_expert", "arguments": {"expert": "expert-9"}})
    assert info["argument_errors"] == [{"tool": "call_expert", "field": "expert",
                                        "problem": "'expert-9' is not one of ['expert-1', 'expert-2', 'expert-3']"}]
    _, _, _, _, info = env.step({"name": "call_expert", "arguments": {"expert": "expert-2"}})
    assert info["argument_errors"] == [] and info["step_errors"] == [] and info["argument_error_turns"] == 2.0
    env = gym.make("ToolOrchestra-ToolScale-v0", max_errors=1)
    env.reset(seed=0)
    _, _, terminated, truncated, info = env.step({"name": "call_expert", "arguments": {"model": "expert-2"}})
    assert not (terminated or truncated)


def test_tool_spec_argument_errors():
    spec = ToolSpec("book", "d", {
        "type": "object", "required": ["user", "flights"],
        "properties": {"user": {"type": "string"}, "cabin": {"enum": ["economy", "business"]},
                       "flights": {"type": "array", "items": {"$ref": "#/$defs/F"}}},
        "$defs": {"F": {"type": "object", "properties": {"date": {"type": "string"}}, "required": ["date"]}},
    })
    assert spec.argument_errors({"user": "u", "flights": [{"date": "2024-05-01"}]}) == []
    assert spec.argument_errors({"user": 3, "cabin": "first", "flights": [{"date": "d"}, {}], "x": 1}) == [
        ("cabin", "'first' is not one of ['economy', 'business']"),
        ("flights[1].date", "'date' is a required property"),
        ("user", "3 is not of type 'string'"),
        ("x", "unknown argument; book takes ['user', 'cabin', 'flights']"),
    ]
    assert spec.argument_errors({}) == [("user", "'user' is a required property"),
                                        ("flights", "'flights' is a required property")]
    assert spec.argument_errors(["a"]) == [("", "arguments must be a JSON object, got list")]
    assert ToolSpec("g", "d").argument_errors({"z": 1}) == []


def test_tool_spec_unknown_arguments():
    spec = ToolSpec("f", "d", {"type": "object", "properties": {"a": {}, "b": {}}})
    assert spec.unknown_arguments({"a": 1, "z": 2, "y": 3}) == ["z", "y"]
    assert ToolSpec("g", "d").unknown_arguments({"z": 1}) == []
    assert ToolSpec("h", "d", {"type": "object", "properties": {"a": {}}, "additionalProperties": True}).unknown_arguments({"z": 1}) == []


def test_orchestrator_usage_is_reported_apart_and_in_the_totals():
    from orchestra_gym.types import Usage

    env = CounterEnv()
    with pytest.raises(RuntimeError, match="reset"):
        env.add_orchestrator_usage(Usage(1, 1, 0.5, 0.5))
    env.reset(seed=0, options={"task_id": 3})
    env.add_orchestrator_usage(Usage(prompt_tokens=100, completion_tokens=10, cost_usd=0.25, latency_s=1.5))
    env.add_orchestrator_usage(Usage(prompt_tokens=20, completion_tokens=2, cost_usd=0.125, latency_s=0.5))  # adds up
    _, _, _, _, info = env.step({"name": "call_expert", "arguments": {"expert": "expert-1"}})
    assert (info["orchestrator_cost_usd"], info["orchestrator_latency_s"]) == (0.375, 2.0)
    assert (info["orchestrator_prompt_tokens"], info["orchestrator_completion_tokens"]) == (120.0, 12.0)
    expert_cost = info["cost_usd"] - 0.375  # the tools' part
    assert expert_cost > 0 and info["episode_cost_usd"] == info["cost_usd"]
    _, _, _, _, info = env.step('<tool_call>{"name": "add", "arguments": {"n": 3}}</tool_call>')  # nothing reported
    assert info["orchestrator_cost_usd"] == 0.0 and info["episode_orchestrator_cost_usd"] == 0.375
    assert info["episode_orchestrator_prompt_tokens"] == 120.0 and info["episode_orchestrator_latency_s"] == 2.0
    assert info["episode_cost_usd"] == pytest.approx(0.375 + expert_cost)


def test_orchestrator_error_ends_the_episode_truncated():
    from orchestra_gym.types import Usage

    env = CounterEnv()
    env.reset(seed=0, options={"task_id": 3})
    env.add_orchestrator_usage(Usage(latency_s=3.0), error="model 'x': HTTP 500 after 4 attempts")
    obs, r, term, trunc, info = env.step("this action is ignored")
    assert (r, term, trunc) == (0.0, False, True) and info["end_reason"] == "orchestrator_error"
    assert info["parse_errors"] == 0.0 and info["step_errors"] == ["model 'x': HTTP 500 after 4 attempts"]
    assert info["episode_latency_s"] == info["episode_orchestrator_latency_s"] == 3.0
    assert info["reward_vector"][-1] == -3.0 and "orchestrator's model failed" in obs
    with pytest.raises(ResetNeeded, match="episode has ended"):
        env.step("more")
    env.add_orchestrator_usage(Usage(latency_s=9.0), error="late")
    env.reset(seed=1)  # a report does not outlive its episode
    _, _, _, trunc, info = env.step('<tool_call>{"name": "add", "arguments": {"n": 1}}</tool_call>')
    assert not trunc and info["episode_orchestrator_latency_s"] == 0.0


def test_preference_in_prompt_states_the_episodes_preference():
    """Paper Sec. 3.2 / 6.4: the preference vector is an input of the orchestrator (opt-in; default prompt unchanged)."""
    import orchestra_gym  # noqa: F401

    plain = gymnasium.make("ToolOrchestra-ToolScale-v0", system_prompt="compact")
    stated = gymnasium.make("ToolOrchestra-ToolScale-v0", system_prompt="compact", preference_in_prompt=True,
                      preference={"outcome": 1.0, "cost": 0.5})
    obs0, _ = plain.reset(seed=3)
    obs1, info = stated.reset(seed=3)
    line = "User preference (weights; cost and latency: lower is better): outcome 1, cost 0.5, latency 0"
    assert line not in obs0 and line in obs1
    assert stated.unwrapped.messages[0].content.endswith("\n" + line)
    obs2, _ = stated.reset(seed=3, options={"preference": {"outcome": 1, "latency": 2, "tools": {"expert-2": 0.5}}})
    assert ("User preference (weights; cost and latency: lower is better): outcome 1, cost 0, latency 2, "
            "expert-2 0.5") in obs2
    assert obs1.replace("\n" + line, "") == obs0  # nothing else changes


def test_preference_levels_say_the_weights_in_words():
    """The weights relative to the outcome weight in level words; a held-out vector reads like the
    training vector of the same level (Preference.LEVELS bounds: 0.25, 1.5)."""
    import orchestra_gym  # noqa: F401
    from orchestra_gym.types import Preference

    words = [Preference.level(w) for w in (0.0, 0.02, 0.1, 0.2499, 0.25, 0.5, 1.0, 1.4999, 1.5, 3.0, -0.5)]
    assert words == ["none", "low", "low", "low", "medium", "medium", "medium", "medium", "high", "high", "negative"]
    assert Preference.level(1.0, outcome=2.0) == "medium" and Preference.level(4.0, outcome=2.0) == "high"
    assert Preference.level(0.1, outcome=0.0) == "low"  # a non-positive outcome weight counts as 1
    assert Preference(cost=2.0).levels_text() == "cost high, latency none"
    assert Preference(cost=0.0, latency=0.5).levels_text() == "cost none, latency medium"
    env = gymnasium.make("ToolOrchestra-ToolScale-v0", system_prompt="compact", preference_in_prompt=True,
                         preference_levels=True, preference={"outcome": 1.0, "cost": 0.5})
    obs, _ = env.reset(seed=3)
    line = ("User preference (weights; cost and latency: lower is better): outcome 1, cost 0.5, latency 0 "
            "(cost medium, latency none)")
    assert env.unwrapped.messages[0].content.endswith("\n" + line) and line in obs
    obs, _ = env.reset(seed=3, options={"preference": {"outcome": 1.0, "cost": 0.0, "latency": 3.0}})
    assert obs.count("(cost none, latency high)") == 1
