"""orchestra_gym.evaluation: the episode runner (plan, seeds, trials, trajectories) and the metrics."""

from __future__ import annotations

import json
import math

import gymnasium as gym
import numpy as np
import pytest

import orchestra_gym  # noqa: F401  (registers the ids)
from orchestra_gym.agents import make_agent
from orchestra_gym.evaluation import (
    EpisodeResult,
    evaluate,
    format_mix,
    format_qa_table,
    mean_tool_calls,
    preference_score,
    qa_metrics,
    rollout_summary,
    run_episodes,
    summarize,
    wald_interval,
)
from orchestra_gym.rewards import preference_metric
from tests.gym.tasks.test_frames import synthetic_rows as frames_rows
from tests.gym.tasks.test_frames import write as write_frames

TOOLSCALE = "ToolOrchestra-ToolScale-v0"


@pytest.fixture()
def frames_file(tmp_path):
    return write_frames(tmp_path / "frames.csv", frames_rows())


def _info(solved, cost, latency, calls, end="answer", turn=2.0, parse_errors=0.0, breakdown=None):
    return {"solved": solved, "outcome": 1.0 if solved else 0.0, "episode_cost_usd": cost, "episode_latency_s": latency,
            "tool_calls": calls, "end_reason": end, "turn": turn, "parse_errors": parse_errors,
            "reward_breakdown": breakdown or {}}


# ---------------------------------------------------------------------------------- runner
def test_runner_plays_what_a_hand_written_loop_plays():
    results = run_episodes(lambda: gym.make(TOOLSCALE), lambda s: make_agent("random", seed=s), 4, seed=10)
    env = gym.make(TOOLSCALE)
    for i, r in enumerate(results):
        agent = make_agent("random", seed=10 + i)
        obs, info = env.reset(seed=10 + i)
        agent.reset(env, obs, info)
        steps, done = 0, False
        while not done:
            obs, _, term, trunc, info = env.step(agent.act(obs, info))
            steps, done = steps + 1, term or trunc
        assert (r.seed, r.trial, r.task_id, r.steps) == (10 + i, 0, env.unwrapped.task.id, steps)
        assert r.messages is None and r.end_reason == info["end_reason"] and r.solved == info["solved"]
        np.testing.assert_array_equal(r.info["reward_vector"], info["reward_vector"])
        assert {k: v for k, v in r.info.items() if k != "reward_vector"} == {k: v for k, v in info.items() if k != "reward_vector"}


def test_runner_task_list_trials_options_and_trajectories(frames_file, tmp_path):
    traj = tmp_path / "t.jsonl"
    make = lambda: gym.make("ToolOrchestra-FRAMES-v0", data_path=str(frames_file))  # noqa: E731
    ids = list(make().unwrapped.task_ids)
    pref = {"outcome": 1.0, "cost": 0.5}
    results = run_episodes(make, lambda s: make_agent("oracle", seed=s), 2, seed=5, all_tasks=True, trials=2,
                           options={"preference": pref}, trajectories_path=traj, keep_messages=True)
    assert [(r.task_id, r.trial, r.seed) for r in results] == [
        (ids[0], 0, 5), (ids[1], 0, 6), (ids[0], 1, 7), (ids[1], 1, 8)]
    assert all(r.info["preference"]["cost"] == 0.5 for r in results)
    lines = [json.loads(line) for line in traj.read_text().splitlines()]
    assert [(d["task_id"], d["trial"], d["seed"]) for d in lines] == [(r.task_id, r.trial, r.seed) for r in results]
    assert lines[0]["messages"] == results[0].messages and lines[0]["messages"][0]["role"] == "system"
    assert lines[0]["reward_vector"] == results[0].info["reward_vector"].tolist()
    assert {k: v for k, v in lines[1].items() if k != "messages"} == json.loads(json.dumps(results[1].record()))
    explicit = run_episodes(make, lambda s: make_agent("oracle", seed=s), 0, seed=5, task_ids=[ids[1]])
    assert [(r.task_id, r.seed) for r in explicit] == [(ids[1], 5)]
    with pytest.raises(ValueError, match="has no fixed task list"):
        run_episodes(lambda: gym.make(TOOLSCALE), lambda s: make_agent("oracle"), 0, all_tasks=True)
    with pytest.raises(ValueError, match="trials must be >= 1"):
        run_episodes(lambda: gym.make(TOOLSCALE), lambda s: make_agent("oracle"), 1, trials=0)


def test_evaluate_adds_the_qa_columns_for_qa_envs_only(frames_file):
    results, s = evaluate("ToolOrchestra-FRAMES-v0", "oracle", 4, env_kwargs={"data_path": str(frames_file)})
    assert [r.seed for r in results] == [0, 1, 2, 3]
    assert (s["env"], s["agent"], s["seed"]) == ("ToolOrchestra-FRAMES-v0", "oracle", 0)
    m = s["qa"]
    assert m == qa_metrics(results)
    assert m["n"] == 4 and 0.0 <= m["accuracy"] <= 1.0 and m["cost_cents"] > 0 and m["latency_min"] > 0
    assert m["model_calls"].get("answer-1") == 4.0
    _, t = evaluate(TOOLSCALE, "oracle", 2, seed=3)
    assert "qa" not in t and t["episodes"] == 2 and t["success_rate"] == 1.0


# ---------------------------------------------------------------------------------- metrics
def test_summarize_values():
    infos = [
        _info(True, 0.02, 30.0, {"call_expert": 1.0, "expert-1": 1.0}, end="user_stop", turn=3.0),
        _info(False, 0.0, 10.0, {"get_order": 2.0}, end="turn_limit", parse_errors=2.0,
              breakdown={"not_evaluated": ["NL_ASSERTION"]}),
        _info(True, 0.01, 20.0, {}, end="user_stop", turn=1.0, breakdown={"not_evaluated": []}),
    ]
    s = summarize(infos)
    lo, hi = wald_interval(2 / 3, 3)
    assert s["episodes"] == 3 and s["success_rate"] == 2 / 3 and s["success_rate_ci95"] == [lo, hi]
    assert s["mean_cost_usd"] == pytest.approx(0.01) and s["mean_latency_s"] == 20.0 and s["mean_turns"] == 2.0
    assert s["tool_calls"] == {"call_expert": 1 / 3, "expert-1": 1 / 3, "get_order": 2 / 3}
    assert s["parse_errors"] == 2 / 3 and s["end_reasons"] == {"user_stop": 2, "turn_limit": 1}
    assert s["not_fully_judged"] == {"episodes": 1, "components": {"NL_ASSERTION": 1}, "judgeability_reported": True}
    assert s["success_rate_judged"] == 1.0 and s["mean_outcome"] == 2 / 3
    results = [EpisodeResult(str(i), 0, i, info) for i, info in enumerate(infos)]
    assert summarize(results) == s and mean_tool_calls(results) == s["tool_calls"]
    empty = summarize([])
    assert empty["episodes"] == 0 and math.isnan(empty["success_rate"]) and empty["tool_calls"] == {}


def test_tool_mix_counts_each_model_call_once():
    mix = format_mix({"call_expert": 3.0, "expert-1": 1.0, "expert-2": 2.0, "get_order": 1.0})
    assert mix == "expert-2 2.00 (50%), expert-1 1.00 (25%), get_order 1.00 (25%)"


def test_wald_interval_any_n():
    assert all(math.isnan(x) for x in wald_interval(0.5, 0))  # undefined for n = 0
    assert wald_interval(1.0, 1) == (1.0, 1.0)
    lo, hi = wald_interval(0.5, 100)
    assert lo == pytest.approx(0.5 - 1.96 * 0.05) and hi == pytest.approx(0.5 + 1.96 * 0.05)
    assert summarize([])["episodes"] == 0


def test_qa_metrics_any_n():
    empty = qa_metrics([])
    assert empty["n"] == 0 and math.isnan(empty["accuracy"]) and all(math.isnan(x) for x in empty["accuracy_ci95"])
    one = qa_metrics([_info(True, 0.02, 90.0, {"answer-1": 1.0, "answer": 1.0})])
    assert one["accuracy"] == 1.0 and one["accuracy_ci95"] == [1.0, 1.0]
    assert one["cost_cents"] == pytest.approx(2.0) and one["latency_min"] == pytest.approx(1.5)
    assert one["model_calls"] == {"answer-1": 1.0} and one["model_call_share"] == {"answer-1": 1.0}
    recs = [_info(i < 30, 0.01, 60.0, {"search-2": 2.0, "answer-1": 1.0}) for i in range(100)]
    m = qa_metrics(recs)
    half = 1.96 * math.sqrt(0.3 * 0.7 / 100)
    assert m["accuracy"] == 0.3 and m["accuracy_ci95"] == pytest.approx([0.3 - half, 0.3 + half])
    assert m["model_calls"] == {"answer-1": 100.0, "search-2": 200.0}
    assert m["model_call_share"]["search-2"] == pytest.approx(2 / 3)
    zero = qa_metrics([_info(False, 0.0, 0.0, {})] * 3)
    assert zero["accuracy_ci95"] == [0.0, 0.0]
    table = format_qa_table(m, "ToolOrchestra-FRAMES-v0", "oracle")
    assert "accuracy %" in table and "30.0" in table and "cost ¢" in table and "latency min" in table and "search-2 200 (67%)" in table


def test_rollout_summary_values():
    infos = [_info(True, 0.03, 12.0, {"expert-1": 2.0}, turn=4.0), _info(False, 0.01, 4.0, {"expert-2": 1.0}, turn=2.0),
             {"tool_calls": {"expert-1": 1.0}, "episode_cost_usd": 0.02, "episode_latency_s": 2.0, "turn": 2.0}]  # cut
    s = rollout_summary(infos, turns=[4, 2, 3], invalid_turns=[0, 1, 2], cut=[False, False, True])
    assert s == {
        "episodes": 3, "success_rate": 1 / 3, "cost_per_solved_usd": pytest.approx(0.06), "mean_cost_usd": pytest.approx(0.02),
        "mean_latency_s": 6.0, "valid_format_rate": 1.0 - 3 / 9, "turns_per_episode": 3.0, "cut": 1,
        "tool_mix": {"expert-1": 1.0, "expert-2": 1 / 3},
    }
    d = rollout_summary(infos)  # defaults from info: turn, parse_errors, nothing cut
    assert d["turns_per_episode"] == 8 / 3 and d["valid_format_rate"] == 1.0 and d["cut"] == 0
    none = rollout_summary([])
    assert none["success_rate"] == 0.0 and none["cost_per_solved_usd"] == math.inf and none["tool_mix"] == {}
    with pytest.raises(ValueError, match="cut has 1 entries for 3 rollouts"):
        rollout_summary(infos, cut=[True])


def test_preference_score_pairs_episodes_with_the_baseline():
    run = run_episodes(lambda: gym.make(TOOLSCALE), lambda s: make_agent("expert-1", seed=s), 6, seed=7)
    base = run_episodes(lambda: gym.make(TOOLSCALE), lambda s: make_agent("expert-3", seed=s), 6, seed=7)
    assert [r.task_id for r in run] == [b.task_id for b in base]
    pref = {"outcome": 1.0, "cost": 0.5, "tools": {"expert-1": 0.1}}
    want = preference_metric(np.stack([r.info["reward_vector"] for r in run]), np.stack([b.info["reward_vector"] for b in base]),
                             np.array([0.1, 0.0, 0.0, 1.0, 0.5, 0.0]))
    assert preference_score(run, base, pref) == want
    assert preference_score(run[::-1], base, pref) == pytest.approx(want)  # paired by task, not by position
    # against itself: each solved episode scores +1 (outcome), each paid one -1 (cost in units of its own)
    solved, paid = sum(r.solved for r in run), sum(r.info["episode_cost_usd"] > 0 for r in run)
    assert preference_score(run, run, {"outcome": 1.0, "cost": 1.0}) == pytest.approx(solved - paid)
    assert preference_score(run, run) == pytest.approx(solved)  # each episode's own preference: the default, outcome only
    with pytest.raises(ValueError, match="baseline has no episode of task"):
        preference_score(run, base[:3], pref)
    with pytest.raises(ValueError, match="baseline has two episodes"):
        preference_score(run, base + base[:1], pref)
