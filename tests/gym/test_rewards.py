"""Tests for orchestra_gym.rewards against independent float64 loop references."""

from __future__ import annotations

import json
import math

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import orchestra_gym  # noqa: F401  (registers the ids)
from orchestra_gym.agents import make_agent
from orchestra_gym.rewards import (
    RewardLayout,
    group_preference_rewards,
    is_solved,
    preference_metric,
    preference_scores,
    reference_group_scores,
    reward_vector,
    reward_vector_names,
)
from orchestra_gym.types import Preference, ToolSpec
from tests.conftest import SHARED_DATA
from tests.gym.tasks.test_hle import synthetic_rows as hle_rows

TOOLS = ["search", "gpt-5", "qwen3-32b"]


# ------------------------------------------------------------------ references (plain loops)


def ref_group_rewards(vectors, solved, preference):
    """Paper Sec. 3.2, written as loops over rollouts and components."""
    g_count, k_count = len(vectors), len(vectors[0])
    out = []
    for g in range(g_count):
        if not solved[g]:
            out.append(0.0)
            continue
        total = 0.0
        for k in range(k_count):
            col = [float(vectors[h][k]) for h in range(g_count)]
            lo, hi = min(col), max(col)
            m = 0.0 if hi == lo else (float(vectors[g][k]) - lo) / (hi - lo)
            total += m * float(preference[k])
        out.append(total)
    return np.array(out, dtype=np.float64)


def ref_preference_scores(vectors, baseline, preference):
    out = []
    for i in range(len(vectors)):
        p = preference[i] if np.ndim(preference) == 2 else preference
        s = 0.0
        for k in range(len(vectors[i])):
            b = float(baseline[i][k])
            s += float(vectors[i][k]) / (abs(b) if b != 0.0 else 1.0) * float(p[k])
        out.append(s)
    return np.array(out)


# ------------------------------------------------------------------ reward_vector


def test_reward_vector_layout_and_names():
    v = reward_vector({"gpt-5": 2, "search": 1}, TOOLS, outcome=1.0, cost_usd=0.25, latency_s=12.5)
    assert v.dtype == np.float64 and v.shape == (6,)
    np.testing.assert_array_equal(v, [1.0, 2.0, 0.0, 1.0, -0.25, -12.5])
    assert reward_vector_names(TOOLS) == ["calls/search", "calls/gpt-5", "calls/qwen3-32b", "outcome", "-cost_usd", "-latency_s"]
    assert reward_vector({}, [], 0.0, 0.0, 0.0).tolist() == [0.0, -0.0, -0.0]


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        (dict(tool_calls={"gpt5": 1}), "'gpt5'"),
        (dict(tool_calls={"search": -1}), "negative"),
        (dict(tool_calls={"search": float("nan")}), "finite"),
        (dict(outcome=1.5), "outcome"),
        (dict(outcome="yes"), "outcome must be a number"),
        (dict(cost_usd=-0.1), "cost_usd"),
        (dict(latency_s=float("inf")), "latency_s must be finite"),
        (dict(tool_names=["a", "a"]), "duplicate"),
        (dict(tool_names="search"), "list of names"),
    ],
)
def test_reward_vector_validation(kwargs, needle):
    args = dict(tool_calls={}, tool_names=TOOLS, outcome=1.0, cost_usd=0.0, latency_s=0.0)
    args.update(kwargs)
    with pytest.raises(ValueError) as e:
        reward_vector(**args)
    assert needle in str(e.value)


def test_reward_vector_with_preference_as_vector_order():
    pref = Preference(tools={"qwen3-32b": 1.0}, outcome=1.0, cost=0.5, latency=0.25)
    p = pref.as_vector(TOOLS)
    v = reward_vector({"qwen3-32b": 3}, TOOLS, 1.0, 0.1, 2.0)
    assert p.shape == v.shape
    assert float(p @ v) == pytest.approx(3.0 + 1.0 - 0.05 - 0.5)


# ------------------------------------------------------------------ group_preference_rewards


def test_group_rewards_hand_computed():
    # 3 rollouts, tools [a], components: calls/a, outcome, -cost, -latency
    v = np.array(
        [
            [2.0, 1.0, -0.30, -10.0],
            [0.0, 1.0, -0.10, -30.0],
            [1.0, 0.0, -0.20, -20.0],
        ]
    )
    p = np.array([0.5, 1.0, 1.0, 0.0])
    r = group_preference_rewards(v, np.array([True, True, False]), p)
    # rollout 0: a: (2-0)/2 = 1 -> 0.5; outcome constant among 1,1,0? no: min 0 max 1 -> 1; cost: (-0.3+0.3)/0.2 = 0
    # rollout 1: a: 0; outcome: 1; cost: (-0.1+0.3)/0.2 = 1 (cheapest gets 1)
    np.testing.assert_allclose(r, [1.5, 2.0, 0.0], rtol=0, atol=1e-12)
    assert r.dtype == np.float64


def test_cheapest_rollout_gets_the_cost_reward():
    # the released code's sign error would reward the expensive rollout; we follow the paper
    v = np.stack([reward_vector({}, [], 1.0, c, 1.0) for c in (0.5, 0.1)])
    r = group_preference_rewards(v, np.array([True, True]), np.array([0.0, 1.0, 0.0]))
    np.testing.assert_array_equal(r, [0.0, 1.0])


def test_constant_components_give_zero_not_nan():
    v = np.array([[1.0, 1.0, -0.5], [1.0, 1.0, -0.5], [1.0, 1.0, -0.5]])
    r = group_preference_rewards(v, np.array([True, True, True]), np.array([1.0, 1.0, 1.0]))
    np.testing.assert_array_equal(r, [0.0, 0.0, 0.0])


def test_all_unsolved_group_is_zero():
    rng = np.random.default_rng(3)
    v = rng.normal(size=(8, 6))
    r = group_preference_rewards(v, np.zeros(8, dtype=bool), rng.normal(size=6))
    np.testing.assert_array_equal(r, np.zeros(8))


def test_group_of_one():
    r = group_preference_rewards(np.array([[3.0, 1.0, -2.0, -4.0]]), np.array([True]), np.array([1.0, 1.0, 1.0, 1.0]))
    np.testing.assert_array_equal(r, [0.0])


@pytest.mark.parametrize("seed", range(20))
def test_group_rewards_match_reference_on_random_groups(seed):
    rng = np.random.default_rng(seed)
    g, n_tools = int(rng.integers(1, 17)), int(rng.integers(0, 6))
    k = n_tools + 3
    counts = rng.integers(0, 4, size=(g, n_tools)).astype(np.float64)
    solved = rng.random(g) < 0.6
    outcome = solved.astype(np.float64)
    cost = rng.exponential(0.05, size=g)
    latency = rng.exponential(20.0, size=g)
    v = np.column_stack([counts, outcome, -cost, -latency])
    if seed % 4 == 0:
        v[:, 0] = 2.0  # a constant column
    p = rng.normal(size=k)
    got = group_preference_rewards(v, solved, p)
    want = ref_group_rewards(v.tolist(), solved.tolist(), p.tolist())
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert not np.isnan(got).any()


finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


@st.composite
def groups(draw):
    g = draw(st.integers(1, 8))
    k = draw(st.integers(1, 6))
    # draw from a few values so that ties and constant columns are common
    pool = draw(st.lists(finite, min_size=1, max_size=4))
    v = draw(hnp.arrays(np.float64, (g, k), elements=st.sampled_from(pool)))
    solved = draw(hnp.arrays(np.bool_, (g,)))
    p = draw(hnp.arrays(np.float64, (k,), elements=st.floats(-10, 10)))
    return v, solved, p


@settings(max_examples=300, deadline=None)
@given(groups())
def test_group_rewards_property_vs_reference(case):
    v, solved, p = case
    got = group_preference_rewards(v, solved, p)
    want = ref_group_rewards(v.tolist(), solved.tolist(), p.tolist())
    assert got.shape == (v.shape[0],) and got.dtype == np.float64
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    assert np.all(got[~solved] == 0.0)


def test_extreme_magnitudes_never_nan():
    v = np.array([[-1.7e308, 1.0], [1.7e308, 1.0], [0.0, 1.0]])
    r = group_preference_rewards(v, np.array([True, True, True]), np.array([1.0, 1.0]))
    np.testing.assert_allclose(r, [0.0, 1.0, 0.5], atol=1e-12)


@pytest.mark.parametrize(
    "vectors, solved, pref, needle",
    [
        (np.ones(4), np.ones(1, bool), np.ones(4), "shape [G, K]"),
        (np.ones((2, 4)), np.ones(3, bool), np.ones(4), "solved must have shape"),
        (np.ones((2, 4)), np.ones(2), np.ones(4), "bool array"),
        (np.ones((2, 4)), np.ones(2, bool), np.ones(3), "preference must have shape"),
        (np.array([[1.0, np.nan]]), np.ones(1, bool), np.ones(2), "vectors[0, 1]"),
        (np.ones((2, 2)), np.ones(2, bool), np.array([1.0, np.inf]), "preference must be finite"),
        (np.zeros((0, 3)), np.ones(0, bool), np.ones(3), "at least one row"),
        (np.array([["a", "b"]]), np.ones(1, bool), np.ones(2), "real-valued"),
        (np.array([[1.0, 1.0], [2.0, 2.0]]), np.ones(2, bool), np.array([1.7e308, 1.7e308]), "overflows"),
    ],
)
def test_group_rewards_validation(vectors, solved, pref, needle):
    with pytest.raises(ValueError) as e:
        group_preference_rewards(vectors, solved, pref)
    assert needle in str(e.value)


# ------------------------------------------------------------------ App. L metric


def test_preference_metric_hand_computed():
    v = np.array([[2.0, 1.0, -0.5, -10.0], [0.0, 0.0, -0.1, -5.0]])
    b = np.array([[1.0, 1.0, -1.0, -20.0], [0.0, 1.0, -0.2, -5.0]])
    p = np.array([1.0, 1.0, 1.0, 1.0])
    # ex 0: 2/1 + 1/1 - 0.5/1 - 10/20 = 2.0 ; ex 1: 0 (baseline 0 -> unit) + 0 - 0.5 - 1 = -1.5
    np.testing.assert_allclose(preference_scores(v, b, p), [2.0, -1.5])
    assert preference_metric(v, b, p) == pytest.approx(0.5)


@pytest.mark.parametrize("seed", range(10))
def test_preference_metric_matches_reference(seed):
    rng = np.random.default_rng(100 + seed)
    n, k = int(rng.integers(1, 30)), int(rng.integers(1, 8))
    v = rng.normal(size=(n, k))
    b = rng.normal(size=(n, k))
    b[rng.random((n, k)) < 0.2] = 0.0  # zero baseline components
    p = rng.normal(size=(n, k)) if seed % 2 else rng.normal(size=k)
    want = ref_preference_scores(v.tolist(), b.tolist(), p.tolist() if p.ndim == 2 else p)
    np.testing.assert_allclose(preference_scores(v, b, p), want, rtol=1e-12, atol=1e-12)
    assert preference_metric(v, b, p) == pytest.approx(math.fsum(want.tolist()), rel=1e-12, abs=1e-12)


def test_baseline_scores_itself_as_signed_unit_weights():
    b = np.array([[2.0, 1.0, -0.4, -8.0]])
    p = np.array([0.0, 1.0, 1.0, 1.0])
    assert preference_metric(b, b, p) == pytest.approx(1.0 - 1.0 - 1.0)


@pytest.mark.parametrize(
    "v, b, p, needle",
    [
        (np.ones((2, 3)), np.ones((3, 3)), np.ones(3), "baseline_vectors shape"),
        (np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 2)), "preference must have shape"),
        (np.ones((2, 3)), np.full((2, 3), np.nan), np.ones(3), "baseline_vectors must be finite"),
        (np.full((1, 1), 1e308), np.full((1, 1), 1e-308), np.ones(1), "overflow"),
    ],
)
def test_preference_metric_validation(v, b, p, needle):
    with pytest.raises(ValueError) as e:
        preference_metric(v, b, p)
    assert needle in str(e.value)


# ------------------------------------------------------------------ RewardLayout


def test_layout_names_size_and_round_trip():
    layout = RewardLayout(("search-1", "answer-1"))
    assert layout.names == ["calls/search-1", "calls/answer-1", "outcome", "-cost_usd", "-latency_s"]
    assert layout.size == 5 and layout.names == reward_vector_names(["search-1", "answer-1"])
    assert RewardLayout.from_names(layout.names) == layout
    assert RewardLayout.from_names(["outcome", "-cost_usd", "-latency_s"]).tools == ()
    for bad in (["calls/a", "outcome"], ["outcome", "-cost_usd", "-latency_s", "calls/a"], ["x", "outcome", "-cost_usd", "-latency_s"]):
        with pytest.raises(ValueError, match="do not have the layout"):
            RewardLayout.from_names(bad)
    with pytest.raises(ValueError, match="duplicate tool name 'a'"):
        RewardLayout(("a", "a"))
    with pytest.raises(ValueError, match="got the string 'abc'"):
        RewardLayout("abc")  # type: ignore[arg-type]


def test_layout_from_tool_specs_models_else_tool_names():
    enum = {"type": "object", "properties": {"model": {"type": "string", "enum": ["m-1", "m-2"]}}}
    other = {"type": "object", "properties": {"expert": {"type": "string", "enum": ["m-2", "m-3"]}}}
    specs = [ToolSpec("search", "", enum, kind="model"), ToolSpec("get", "", kind="read"), ToolSpec("ask", "", other, kind="model")]
    assert RewardLayout.from_tool_specs(specs).tools == ("m-1", "m-2", "m-3")  # each model once, in order
    assert RewardLayout.from_tool_specs(specs[1:2] + [ToolSpec("python", "")]).tools == ("get", "python")
    assert RewardLayout.from_tool_specs([]).tools == ()


def test_layout_vector_from_info_finished_and_cut():
    layout = RewardLayout(("expert-1", "expert-2"))
    info = {"tool_calls": {"call_expert": 3.0, "expert-1": 2.0, "expert-2": 1.0, "get_order": 4.0},
            "episode_cost_usd": 0.25, "episode_latency_s": 12.5, "outcome": 1.0}
    np.testing.assert_array_equal(layout.vector_from_info(info), [2.0, 1.0, 1.0, -0.25, -12.5])
    cut = {k: v for k, v in info.items() if k != "outcome"}  # an episode stopped before its end
    np.testing.assert_array_equal(layout.vector_from_info(cut), [2.0, 1.0, 0.0, -0.25, -12.5])
    np.testing.assert_array_equal(layout.vector_from_info(info, outcome=0.0), [2.0, 1.0, 0.0, -0.25, -12.5])
    end = layout.end_info(cut, 1.0, {"db": 1.0}, "user_stop")
    assert list(end) == ["outcome", "solved", "reward_vector", "reward_vector_names", "reward_breakdown", "end_reason",
                         "action_errors", "preference_weights"]
    assert end["action_errors"] == {"parse_errors": 0.0, "argument_error_turns": 0.0}
    assert end["preference_weights"] == [0.0, 0.0, 1.0, 0.0, 0.0]  # no preference in info: Preference() defaults
    weighted = layout.end_info({**cut, "preference": {"tools": {"expert-2": 0.5}, "outcome": 1.0, "cost": 0.3}}, 1.0, {}, "x")
    assert weighted["preference_weights"] == [0.0, 0.5, 1.0, 0.3, 0.0]
    assert end["solved"] is True and end["reward_vector_names"] == layout.names and end["end_reason"] == "user_stop"
    assert layout.end_info(cut, 0.5, {}, "answer")["solved"] is False and is_solved(1.0 - 1e-10)
    with pytest.raises(ValueError, match="outcome = 2.0 must be in"):
        layout.vector_from_info(info, outcome=2.0)


def test_layout_sees_an_argument_error_beside_the_reward_vector():
    """issue 37: call_expert with {"model": ...} is counted at the episode's end, and M is unchanged by it."""
    def play(first):
        env = gym.make("ToolOrchestra-ToolScale-v0", max_turns=2)
        env.reset(seed=3, options={"tools": ["call_expert"]})
        env.step(first)
        *_, info = env.step({"name": "call_expert", "arguments": {"expert": "expert-1"}})
        return env.unwrapped.reward_layout, info

    layout, bad = play({"name": "call_expert", "arguments": {"model": "expert-2"}})
    assert bad["end_reason"] == "turn_limit"
    assert bad["action_errors"] == layout.action_errors(bad) == {"parse_errors": 0.0, "argument_error_turns": 1.0}
    _, good = play("<message>Hello</message>")
    assert good["action_errors"] == {"parse_errors": 0.0, "argument_error_turns": 0.0}
    assert len(bad["reward_vector"]) == len(good["reward_vector"]) == layout.size


def test_layout_preference_weights_align_with_names():
    layout = RewardLayout(("expert-1", "expert-2", "expert-3"))
    w = layout.preference_weights({"tools": {"expert-3": 0.5, "not-counted": 9.0}, "outcome": 1.0, "cost": 0.2})
    assert w.dtype == np.float64
    np.testing.assert_array_equal(w, [0.0, 0.0, 0.5, 1.0, 0.2, 0.0])
    np.testing.assert_array_equal(layout.preference_weights(None), [0, 0, 0, 1.0, 0.0, 0.0])  # Preference() defaults
    np.testing.assert_array_equal(layout.preference_weights({}), layout.preference_weights(None))
    np.testing.assert_array_equal(layout.preference_weights(Preference(outcome=2.0, latency=1.0)), [0, 0, 0, 2.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="unknown preference key"):
        layout.preference_weights({"outcom": 1.0})


TAU2 = SHARED_DATA / "tau2"
EXPERTS = ["expert-1", "expert-2", "expert-3"]
QA_ALL = ["search-1", "search-2", "search-3", "reasoner-1", "reasoner-2", "reasoner-3",
          "answer-1", "answer-2", "answer-3", "answer-4", "answer-math-1", "answer-math-2"]


def _env_cases(tmp_path):
    hle = tmp_path / "hle.jsonl"
    hle.write_text("".join(json.dumps(r) + "\n" for r in hle_rows()), encoding="utf-8")
    cases = [("ToolOrchestra-ToolScale-v0", {}, None, EXPERTS),
             ("ToolOrchestra-HLE-v0", {"data_path": str(hle)}, None, QA_ALL),
             ("ToolOrchestra-HLE-v0", {"data_path": str(hle)}, ["search", "answer"], QA_ALL[:3] + QA_ALL[6:]),
             ("ToolOrchestra-HLE-v0", {"data_path": str(hle), "mode": "basic"}, None, ["web_search", "local_search", "python", "answer"])]
    if (TAU2 / "domains" / "retail" / "db.json").is_file():
        cases += [("ToolOrchestra-Tau2-Mock-v0", {"data_dir": str(TAU2)}, None, EXPERTS),
                  ("ToolOrchestra-Tau2-Retail-v0", {"data_dir": str(TAU2)}, None, EXPERTS)]
    return cases


def test_env_reward_vector_is_its_layouts_vector(tmp_path):
    """ToolScale, HLE (both modes, a tool subset) and tau2 (when its data is here): the env's
    ``reward_layout`` names today's components, and ``info["reward_vector"]`` is the vector built by
    hand from the final info."""
    seen = set()
    for env_id, kwargs, tools, want_tools in _env_cases(tmp_path):
        env = gym.make(env_id, **kwargs)
        for agent_name in ("random", "oracle"):
            for seed in range(2):
                obs, info = env.reset(seed=seed, options={"tools": tools} if tools else None)
                layout = env.unwrapped.reward_layout
                assert list(layout.tools) == want_tools
                agent = make_agent(agent_name, seed=seed)
                agent.reset(env, obs, info)
                done = False
                while not done:
                    obs, _, term, trunc, info = env.step(agent.act(obs, info))
                    done = term or trunc
                assert info["reward_vector_names"] == [f"calls/{t}" for t in want_tools] + ["outcome", "-cost_usd", "-latency_s"]
                by_hand = [info["tool_calls"].get(t, 0.0) for t in want_tools] + [
                    info["outcome"], -info["episode_cost_usd"], -info["episode_latency_s"]]
                np.testing.assert_array_equal(info["reward_vector"], by_hand)
                np.testing.assert_array_equal(layout.vector_from_info(info), info["reward_vector"])
                seen.add((env_id, bool(info["solved"])))
        env.close()
    assert ("ToolOrchestra-ToolScale-v0", True) in seen and ("ToolOrchestra-HLE-v0", True) in seen


def test_reference_group_scores_are_the_training_reward_in_the_references_group():
    # 2 examples, 3 reference runs (dear/accurate, mid, cheap), K = 3: [outcome, -cost, -latency]
    refs = np.array([[[1.0, -4.0, -90.0], [1.0, -5.0, -100.0]],
                     [[1.0, -0.4, -25.0], [0.0, -0.5, -30.0]],
                     [[1.0, -0.2, -60.0], [0.0, -0.3, -80.0]]])
    ref_solved = refs[:, :, 0] > 0.5
    run = np.array([[1.0, -0.2, -60.0], [1.0, -5.0, -100.0]])  # cheap on example 0, dear on example 1
    p = np.array([1.0, 0.5, 0.0])
    got = reference_group_scores(run, np.array([True, True]), refs, ref_solved, p)
    # example 0: every episode solved, so the outcome column is constant (0); the run is the cheapest: 0.5 * 1
    # example 1: outcome mixed (run 1), the run is the dearest (cost 0): 1 * 1 + 0.5 * 0
    np.testing.assert_allclose(got, [0.5, 1.0], rtol=1e-12)
    for i in range(2):  # the same as the training reward of the group [refs..., run]
        group = np.concatenate([refs[:, i], run[i][None]])
        want = ref_group_rewards(group.tolist(), list(ref_solved[:, i]) + [True], p.tolist())[-1]
        assert got[i] == pytest.approx(want, abs=1e-12)
    assert reference_group_scores(run, np.array([False, True]), refs, ref_solved, p)[0] == 0.0  # unsolved: 0
    with pytest.raises(ValueError, match="reference_vectors must have shape"):
        reference_group_scores(run, np.array([True, True]), refs[:, :1], ref_solved, p)
    with pytest.raises(ValueError, match="solved must be a bool array"):
        reference_group_scores(run, np.array([1, 1]), refs, ref_solved, p)
