"""Fuzzing `step` of ToolScale and tau2 retail: random, mutated and deeply nested text and
structured actions. Nothing may escape `step`, no step may take 2 s, and the env stays usable.

Bounded and reproducible: hypothesis with ``derandomize=True`` (a fixed seed), a fixed number of
examples per strategy, no shrinking database.
"""

from __future__ import annotations

import json
import math
import time

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import orchestra_gym  # noqa: F401
from orchestra_gym.domains.tau2.data import data_dir
from orchestra_gym.parsing import render_action
from orchestra_gym.types import ToolCall

MAX_STEP_S = 2.0
FUZZ = settings(max_examples=150, derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

ENVS = {
    "toolscale": ("ToolOrchestra-ToolScale-v0", {}),
    "tau2-retail": ("ToolOrchestra-Tau2-Retail-v0", {"data_dir": str(data_dir())}),
}


@pytest.fixture(scope="module", params=sorted(ENVS))
def env(request):
    env_id, kwargs = ENVS[request.param]
    if "data_dir" in kwargs and not (data_dir() / "domains" / "retail").is_dir():
        pytest.skip(f"tau2 data not found at {data_dir()}; set ORCHESTRA_DATA_DIR (README: Data)")
    e = gym.make(env_id, max_turns=1000, max_errors=1000, **kwargs)
    obs, info = e.reset(seed=0)
    e.tool_names = [t["function"]["name"] if "function" in t else t["name"] for t in info["tools"]]
    yield e
    e.close()


def _step(env, action):
    """One step under the rules: no exception, under 2 s, a str observation and float info; reset at the end."""
    t0 = time.perf_counter()
    obs, reward, terminated, truncated, info = env.step(action)
    elapsed = time.perf_counter() - t0
    assert elapsed < MAX_STEP_S, f"step took {elapsed:.2f} s on {str(action)[:200]!r}"
    assert isinstance(obs, str) and isinstance(info["turn"], float) and math.isfinite(info["episode_cost_usd"])
    json.dumps(info, default=repr)  # info stays serialisable (no deep or cyclic structures leak into it)
    if terminated or truncated:
        env.reset(seed=int(info["turn"]))
    return info


def _nested(depth: int, leaf=1, key="k"):
    node = leaf
    for _ in range(depth):
        node = {key: node}
    return node


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30), st.floats(allow_nan=True),
                      st.text(max_size=40))
json_value = st.recursive(json_leaf, lambda c: st.one_of(st.lists(c, max_size=4),
                                                         st.dictionaries(st.text(max_size=8), c, max_size=4)),
                          max_leaves=20)


def _call_strategy(env):
    names = st.sampled_from(env.tool_names + ["call_expert", "calculate", "nope", ""])
    args = st.one_of(
        st.dictionaries(st.text(max_size=12), json_value, max_size=5),
        st.fixed_dictionaries({"expert": st.sampled_from(["expert-1", "expert-2", "expert-3", "expert-9"])}),
        st.fixed_dictionaries({"expression": st.sampled_from(["(9999**9999)**999", "1+" * 2000 + "1", "((((1))))", "9**99*9**99"])}),
        st.integers(0, 3000).map(lambda d: {"x": _nested(d)}),
        json_value,
    )
    return st.fixed_dictionaries({"name": names, "arguments": args})


def test_random_text_actions(env):
    @FUZZ
    @given(st.text(max_size=400))
    def run(text):
        _step(env, text)

    run()
    _still_usable(env)


def test_mutated_valid_actions(env):
    @FUZZ
    @given(st.data())
    def run(data):
        name = data.draw(st.sampled_from(env.tool_names))
        text = render_action([ToolCall(name, {"expert": "expert-2", "order_id": "#W1"})], message="ok")
        for _ in range(data.draw(st.integers(1, 6))):
            i = data.draw(st.integers(0, len(text)))
            op = data.draw(st.sampled_from(["insert", "delete", "dup", "cut"]))
            if op == "insert":
                text = text[:i] + data.draw(st.sampled_from(["<tool_call>", "</tool_call>", "{", "}", '"', "\\", "\ud800", "<think>", "\x00"])) + text[i:]
            elif op == "delete":
                text = text[:i] + text[i + 3:]
            elif op == "dup":
                text = text[:i] + text[i:i + 30] * 3 + text[i:]
            else:
                text = text[:i]
        _step(env, text)

    run()
    _still_usable(env)


def test_deeply_nested_text_and_structured_actions(env):
    @FUZZ
    @given(st.integers(1, 5000), st.sampled_from(["text-object", "text-array", "structured", "message", "list"]))
    def run(depth, kind):
        if kind == "text-object":
            action = '<tool_call>{"name": "call_expert", "arguments": ' + '{"k": ' * depth + "1" + "}" * depth + "}</tool_call>"
        elif kind == "text-array":
            action = '<tool_call>{"name": "calculate", "arguments": {"expression": ' + "[" * depth + "]" * depth + "}}</tool_call>"
        elif kind == "structured":
            action = {"name": "call_expert", "arguments": {"expert": "expert-1", "x": _nested(depth)}}
        elif kind == "message":
            action = {"message": _nested(depth)}
        else:
            action = [_nested(depth)]
        _step(env, action)

    run()
    _still_usable(env)


def test_random_structured_actions(env):
    @FUZZ
    @given(st.one_of(_call_strategy(env), st.lists(_call_strategy(env), max_size=3),
                     st.fixed_dictionaries({"tool_calls": st.lists(_call_strategy(env), max_size=2),
                                            "message": st.one_of(st.text(max_size=50), json_value)}),
                     json_value))
    def run(action):
        _step(env, action)

    run()
    _still_usable(env)


def _still_usable(env):
    """After the fuzzing: a fresh episode takes a valid call and a message normally."""
    obs, info = env.reset(seed=1)
    info = _step(env, {"name": "call_expert", "arguments": {"expert": "expert-2"}})
    assert info["tool_calls"].get("call_expert") == 1.0
    assert isinstance(env.step("<message>Thanks, that is all.</message>")[0], str)
