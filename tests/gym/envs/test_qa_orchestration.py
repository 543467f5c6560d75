"""Offline QA measures orchestration (issue 37): the query matters, the sequence and models matter,
argument errors are counted, the shipped samples regenerate identically."""

from __future__ import annotations

import numpy as np
import pytest

from orchestra_gym.agents import make_agent
from orchestra_gym.data import sample_path
from orchestra_gym.envs.qa import QAEnv
from orchestra_gym.parsing import render_tool_calls
from orchestra_gym.types import ToolCall


def _score(env: QAEnv, agent_name: str, episodes: int) -> float:
    """Mean outcome of `episodes` episodes (seeds 0..episodes-1, tasks drawn by the env)."""
    out = []
    for s in range(episodes):
        agent = make_agent(agent_name, seed=s)
        obs, info = env.reset(seed=s)
        agent.reset(env, obs, info)
        while True:
            obs, r, term, trunc, info = env.step(agent.act(obs, info))
            if term or trunc:
                out.append(r)
                break
    return float(np.mean(out))


@pytest.mark.parametrize("benchmark", ["frames", "hle"])
def test_oracle_far_above_random_and_fixed_rules(benchmark):
    env = QAEnv(benchmark, data_path="sample")
    scores = {a: _score(env, a, 30) for a in ("random", "oracle", "expert-1", "cascade")}
    assert scores["random"] <= 0.15 and scores["oracle"] >= 0.9, scores
    assert max(scores["expert-1"], scores["cascade"]) <= scores["oracle"] - 0.1, scores
    expected = {"frames": {"random": 0.0, "oracle": 0.9666666666666667, "expert-1": 0.5666666666666667, "cascade": 0.2},
                "hle": {"random": 0.03333333333333333, "oracle": 0.9666666666666667, "expert-1": 0.5, "cascade": 0.1}}[benchmark]
    assert scores == pytest.approx(expected)


def test_missing_or_blank_query_is_a_counted_argument_error():
    env = QAEnv("frames", data_path="sample")
    env.reset(seed=0)
    for args, problem in (({"model": "search-1"}, "'query' is a required property"),
                          ({"model": "search-1", "query": "  "}, "does not match")):
        obs, r, term, trunc, info = env.step(render_tool_calls([ToolCall("search", args)]))
        assert "Error: search needs 'query', a non-empty string" in obs and not term
        assert [e["field"] for e in info["argument_errors"]] == ["query"]
        assert problem in info["argument_errors"][0]["problem"]
        assert info["step_errors"][0].startswith("search: argument 'query'")
    assert env.documents == [] and "search-1" not in info["tool_calls"]  # nothing ran, no model was charged


def test_the_right_query_retrieves_the_evidence_and_a_wrong_one_does_not():
    env = QAEnv("frames", data_path="sample")
    env.reset(seed=0, options={"task_id": "0"})
    chain = env.toolset.chain()
    env.step(render_tool_calls([ToolCall("search", {"query": "Kelbrin founder", "model": "search-1"})]))
    assert chain.doc_ids[0] not in {d["id"] for d in env.documents}
    env.step(render_tool_calls([ToolCall("search", {"query": chain.query_for(0), "model": "search-1"})]))
    assert chain.doc_ids[0] in {d["id"] for d in env.documents}
    assert env.toolset.evidence_found()[0] and not all(env.toolset.evidence_found())


def test_expert_k_and_cascade_play_qa_envs():
    env = QAEnv("hle", data_path="sample")
    obs, info = env.reset(seed=1)
    agent = make_agent("expert-2")
    agent.reset(env, obs, info)
    acts = []
    while True:
        a = agent.act(obs, info)
        acts.append(a)
        obs, r, term, trunc, info = env.step(a)
        if term or trunc:
            break
    assert [("search" in a, "reasoner-2" in a, "answer-2" in a) for a in acts] == [
        (True, False, False)] * 3 + [(False, True, False), (False, False, True)]
    assert info["end_reason"] == "answer" and info["tool_calls"]["search-2"] == 3.0
    with pytest.raises(ValueError, match="no search model 'search-5'"):
        make_agent("expert-5").reset(env, obs, info)


def test_sample_files_regenerate_identically(tmp_path):
    from orchestra_gym.data.samples import main

    assert main(["--out-dir", str(tmp_path)]) == 0
    for bench in ("frames", "hle"):
        assert (tmp_path / sample_path(bench).name).read_bytes() == sample_path(bench).read_bytes()
    assert main(["--check"]) == 0
    from orchestra_gym.tasks.frames import load_frames
    from orchestra_gym.tasks.hle import load_hle

    frames, hle = load_frames(data_path="sample"), load_hle(data_path="sample")
    assert (len(frames), len(hle)) == (150, 120)
    assert {t.category for t in frames} == {"numerical_reasoning", "multiple_constraints", "temporal_reasoning",
                                           "tabular_reasoning", "post_processing"}
    assert {t.difficulty for t in frames} == {"easy", "medium", "hard"}
    header = sample_path("frames").read_text(encoding="utf-8").splitlines()[0]
    assert header.split(",")[:3] == ["id", "Prompt", "Answer"] and header.endswith("reasoning_types,wiki_links")
