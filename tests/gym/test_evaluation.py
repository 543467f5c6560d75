"""orchestra_gym.evaluation: the episode runner (plan, seeds, trials, trajectories) and the metrics."""

from __future__ import annotations

import itertools
import json
import math
import threading
import time

import gymnasium as gym
import numpy as np
import pytest

import orchestra_gym  # noqa: F401  (registers the ids)
from orchestra_gym.agents import OracleAgent, make_agent
from orchestra_gym.errors import InfraError
from orchestra_gym.evaluation import (
    EpisodeResult,
    RunConfig,
    aiq,
    asked_moves,
    cost_accuracy_hull,
    evaluate,
    hull_accuracy,
    hull_gap,
    infra_error_of,
    load_run,
    pass_hat_k,
    pass_hat_ks,
    regrade,
    report,
    resume,
    tau2_task_weighted,
    format_mix,
    format_qa_table,
    mean_tool_calls,
    moves_as_asked,
    preference_score,
    group_preference_score,
    qa_metrics,
    rollout_summary,
    run_episodes,
    summarize,
    wald_interval,
)
from orchestra_gym.rewards import preference_metric
from tests.gym.tasks.test_frames import synthetic_rows as frames_rows
from tests.gym.tasks.test_frames import write as write_frames
from tests.servers import OpenAIServer

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
    # one answer per episode, by the best answer model for the question's kind (the QA oracle)
    assert sum(v for k, v in m["model_calls"].items() if k.startswith("answer-")) == 4.0
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


# ---------------------------------------------------------------------------------- concurrency
def _lines(results):
    return [json.dumps(r.record(), sort_keys=True) for r in results]


def test_concurrent_run_equals_the_serial_run(tmp_path):
    make = lambda: gym.make(TOOLSCALE)  # noqa: E731
    serial = run_episodes(make, lambda s: make_agent("random", seed=s), 10, seed=4, trajectories_path=tmp_path / "a.jsonl")
    built = []

    def counting_make():
        built.append(1)
        return make()

    conc = run_episodes(counting_make, lambda s: make_agent("random", seed=s), 10, seed=4, max_concurrency=4,
                        trajectories_path=tmp_path / "b.jsonl")
    assert [r.seed for r in conc] == list(range(4, 14))  # plan order, whatever order they ended in
    assert _lines(conc) == _lines(serial)
    assert 1 < len(built) <= 4  # an env per worker
    by_seed = lambda p: sorted((json.loads(line) for line in p.read_text().splitlines()), key=lambda d: d["seed"])  # noqa: E731
    assert by_seed(tmp_path / "b.jsonl") == by_seed(tmp_path / "a.jsonl")


class _SharedOracle(OracleAgent):
    """One agent object for every episode; records how many episodes act at once."""

    def __init__(self):
        self.active, self.most = 0, 0
        self.lock = threading.Lock()

    def act(self, observation, info):
        with self.lock:
            self.active += 1
            self.most = max(self.most, self.active)
        time.sleep(0.002)
        with self.lock:
            self.active -= 1
        return super().act(observation, info)


def test_one_agent_object_plays_one_episode_at_a_time():
    agent = _SharedOracle()
    results = run_episodes(lambda: gym.make(TOOLSCALE), lambda s: agent, 6, max_concurrency=3)
    assert agent.most == 1 and all(r.solved for r in results)


def _models_file(tmp_path, srv, limit=3):
    path = tmp_path / "models.toml"
    path.write_text(f'[models."m"]\nbase_url = "{srv.base_url}"\ninput_per_m = 1.0\noutput_per_m = 2.0\n'
                    f'max_concurrency = {limit}\nmax_retries = 0\ntimeout_s = 10.0\n'
                    '[aliases]\n"expert-1" = "m"\n"expert-2" = "m"\n"expert-3" = "m"\n')
    return path


def test_each_model_limit_holds_across_concurrent_episodes(tmp_path):
    with OpenAIServer(delay_s=0.05) as srv:
        models = _models_file(tmp_path, srv, limit=3)
        make = lambda: gym.make(TOOLSCALE, models=str(models), max_turns=2)  # noqa: E731
        results = run_episodes(make, lambda s: make_agent("expert-1"), 8, max_concurrency=8)
        assert 2 <= srv.max_in_flight <= 3  # 8 workers, but at most 3 calls of model m at once
        assert srv.count == sum(r.info["tool_calls"]["expert-1"] for r in results) >= 8
    assert all(r.infra_error is None for r in results)


# ---------------------------------------------------------------------------------- infrastructure failures
class _FlakyOracle(OracleAgent):
    """Raises InfraError on its first `fail` actions (an orchestrator endpoint that is down)."""

    def __init__(self, fail):
        self.fail = fail

    def act(self, observation, info):
        if self.fail > 0:
            self.fail -= 1
            raise InfraError("endpoint down after 3 retries")
        return super().act(observation, info)


def test_infra_failures_are_retried_then_recorded_apart():
    make = lambda: gym.make(TOOLSCALE)  # noqa: E731
    fails = {0: 1, 1: 5, 2: 0}
    results = run_episodes(make, lambda s: _FlakyOracle(fails[s]), 3, max_retries=2)
    assert [r.attempts for r in results] == [2, 3, 1]
    assert [r.infra_error for r in results] == [None, "InfraError: endpoint down after 3 retries", None]
    assert results[0].solved and results[2].solved and results[1].info == {}
    s = summarize(results)
    assert s["episodes"] == 2 and s["infra_failures"] == 1 and s["success_rate"] == 1.0  # never a task failure
    assert qa_metrics(results)["n"] == 2 and pass_hat_k(results, 1) == 1.0
    rec = results[1].record()
    assert (rec["end_reason"], rec["outcome"], rec["attempts"]) == ("infra_error", 0.0, 3)


def test_a_tool_model_down_after_its_retries_is_an_infra_failure(tmp_path):
    with OpenAIServer() as srv:
        models = _models_file(tmp_path, srv)
        make = lambda: gym.make(TOOLSCALE, models=str(models), max_turns=2)  # noqa: E731
        srv.queue_fault("500")  # the first expert call fails (the model's max_retries is 0), the retry is served
        once = run_episodes(make, lambda s: make_agent("expert-1"), 1, max_retries=1)
        assert once[0].infra_error is None and once[0].attempts == 2 and once[0].steps == 2
        srv.queue_fault("503", times=2)
        down = run_episodes(make, lambda s: make_agent("expert-1"), 1, max_retries=1)
    assert down[0].attempts == 2 and "HTTP 503" in down[0].infra_error and down[0].steps == 1
    assert summarize(down)["infra_failures"] == 1 and summarize(down)["episodes"] == 0
    # what counts: retries exhausted on a retryable failure, or the orchestrator's own model down
    tool = lambda text: {"new_messages": [{"role": "tool", "name": "call_expert", "content": text}]}  # noqa: E731
    assert infra_error_of(tool("Error: expert expert-1 failed: model 'm': chat completion (m) to http://x/v1/chat/completions "
                               "failed after 4 attempts: timeout (ReadTimeout)")).startswith("tool call_expert: ")
    assert infra_error_of(tool("Error: x failed after 1 attempt: HTTP 400: bad request")) is None  # the agent's fault
    assert infra_error_of({"end_reason": "orchestrator_error", "step_errors": ["down"]}) == "orchestrator: down"
    assert infra_error_of({"end_reason": "answer"}) is None


# ---------------------------------------------------------------------------------- pass^k
def _ep(task, trial, solved, seed=0):
    return EpisodeResult(task, trial, seed, {"solved": solved, "outcome": float(solved)})


def test_pass_hat_k_equals_the_brute_force_over_all_k_subsets():
    rng = np.random.default_rng(0)
    for _ in range(20):
        episodes, tasks = [], {}
        for t in range(int(rng.integers(1, 6))):
            n = int(rng.integers(1, 8))
            wins = [bool(x) for x in rng.random(n) < rng.random()]
            tasks[f"t{t}"] = wins
            episodes += [_ep(f"t{t}", i, w) for i, w in enumerate(wins)]
        for k in range(1, 8):
            per_task = [np.mean([all(c) for c in itertools.combinations(w, k)], dtype=np.float64)
                        for w in tasks.values() if len(w) >= k]
            want = float(np.mean(per_task, dtype=np.float64)) if per_task else math.nan
            got = pass_hat_k(episodes, k)
            assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, rel=1e-12, abs=1e-15)
    # by hand: 2 of 4 trials solved -> pass^1 1/2, pass^2 C(2,2)/C(4,2) = 1/6; 4 of 4 -> 1
    eps = [_ep("a", i, i < 2) for i in range(4)] + [_ep("b", i, True) for i in range(4)]
    assert pass_hat_ks(eps, 3) == pytest.approx({1: 0.75, 2: (1 / 6 + 1) / 2, 3: 0.5})
    infra = EpisodeResult("a", 4, 0, {}, infra_error="down")
    assert pass_hat_ks(eps + [infra], 3) == pass_hat_ks(eps, 3)  # an infra failure is not a trial
    with pytest.raises(ValueError, match="k >= 1"):
        pass_hat_k(eps, 0)


# ---------------------------------------------------------------------------------- accuracy-cost plane
def _brute_hull(points, c):
    """The non-decreasing concave hull at cost c, by brute force over every point and pair (float64)."""
    best = max((a for ci, a in points if ci <= c), default=-math.inf)
    for (c1, a1), (c2, a2) in itertools.product(points, repeat=2):
        if c1 < c2 and c1 <= c <= c2:
            best = max(best, a1 + (a2 - a1) * (c - c1) / (c2 - c1))
    return best


def _random_points(rng):
    n = int(rng.integers(1, 10))
    costs = rng.choice([0.0, 0.5, 1.0, 2.0, 3.5, 5.0], size=n) if rng.random() < 0.3 else rng.uniform(0, 5, size=n)
    return [(float(c), float(a)) for c, a in zip(costs, rng.uniform(0, 1, size=n).round(int(rng.integers(1, 4))))]


def test_hull_against_a_brute_force_reference():
    rng = np.random.default_rng(1)
    for _ in range(40):
        pts = _random_points(rng)
        hull = cost_accuracy_hull(pts)
        assert all(v in pts for v in hull)  # every vertex is an input point
        assert all(c1 < c2 and a1 < a2 for (c1, a1), (c2, a2) in zip(hull, hull[1:]))
        lo = min(c for c, _ in pts)
        assert all(hull_accuracy(hull, c) >= a - 1e-12 for c, a in pts)  # no point above the hull
        for c in np.linspace(lo, max(c for c, _ in pts) + 1.0, 301):
            assert hull_accuracy(hull, float(c)) == pytest.approx(_brute_hull(pts, float(c)), abs=1e-12)
    assert cost_accuracy_hull([(1.0, 0.5), (2.0, 0.4), (3.0, 0.9), (2.0, 0.6)]) == [(1.0, 0.5), (3.0, 0.9)]
    assert hull_gap(0.8, 2.0, [(1.0, 0.5), (3.0, 0.9)]) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="empty"):
        cost_accuracy_hull([])
    with pytest.raises(ValueError, match="finite"):
        cost_accuracy_hull([(math.nan, 0.5)])


def test_aiq_against_dense_grid_integration():
    rng = np.random.default_rng(2)
    for _ in range(15):
        pts = _random_points(rng)
        lo_pt, hi_pt = min(c for c, _ in pts), max(c for c, _ in pts)
        for lo, hi in ((0.0, hi_pt + 1.0), (lo_pt, hi_pt + 0.5), (lo_pt + 0.3, lo_pt + 2.0)):
            grid = np.linspace(lo, hi, 100_001, dtype=np.float64)
            vals = np.array([_brute_hull(pts, c) if c >= lo_pt else 0.0 for c in grid], dtype=np.float64)
            want = float(np.sum((vals[1:] + vals[:-1]) / 2 * np.diff(grid)) / (hi - lo))
            assert aiq(pts, (lo, hi)) == pytest.approx(want, abs=2e-5)
    assert aiq([(1.0, 0.8)], (0.0, 4.0)) == pytest.approx(0.6)  # 0 on [0, 1), 0.8 on [1, 4]
    with pytest.raises(ValueError, match="c_max > c_min"):
        aiq([(1.0, 0.8)], (2.0, 2.0))


# ---------------------------------------------------------------------------------- run folders
class _Counting:
    """An agent factory that records which seeds it built agents for."""

    def __init__(self, name="oracle"):
        self.name, self.seeds = name, []

    def __call__(self, seed):
        self.seeds.append(seed)
        return make_agent(self.name, seed=seed)


def test_run_folder_resume_plays_only_what_is_missing(tmp_path):
    full_dir, cut_dir = tmp_path / "full", tmp_path / "cut"
    _, full = evaluate(TOOLSCALE, "random", 6, seed=3, output_dir=full_dir, max_concurrency=2)
    assert json.loads((full_dir / "run.json").read_text()) == RunConfig(TOOLSCALE, "random", {}, 3, 6).to_dict()
    assert json.loads((full_dir / "summary.json").read_text()) == json.loads(json.dumps(full))
    evaluate(TOOLSCALE, "random", 6, seed=3, output_dir=cut_dir)
    lines = (cut_dir / "trajectories.jsonl").read_text().splitlines(keepends=True)
    (cut_dir / "trajectories.jsonl").write_text("".join(lines[:2] + lines[4:5]) + lines[5][:40])  # killed mid-line
    (cut_dir / "summary.json").unlink()
    agents = _Counting("random")
    results, summary = resume(cut_dir, agents=agents, max_concurrency=2)
    assert sorted(agents.seeds) == [5, 6, 8]  # seeds 3, 4 and 7 were finished
    assert summary == full and json.loads((cut_dir / "summary.json").read_text()) == json.loads(json.dumps(full))
    cfg, stored = load_run(cut_dir)
    assert [r.seed for r in stored] == [3, 4, 5, 6, 7, 8] and _lines(stored) == _lines(load_run(full_dir)[1])
    again = _Counting("random")
    resume(cut_dir, env_id=TOOLSCALE, agent="random", agents=again)
    assert again.seeds == []  # nothing left to play
    with pytest.raises(ValueError, match="env 'ToolOrchestra-ToolScale-v0' with agent 'random', not env "
                                         "'ToolOrchestra-ToolScale-v0' with agent 'oracle'"):
        resume(cut_dir, agent="oracle")
    with pytest.raises(ValueError, match="already holds a run"):
        evaluate(TOOLSCALE, "random", 6, output_dir=cut_dir)
    with pytest.raises(FileNotFoundError, match="not a run folder"):
        resume(tmp_path / "nothing")


class _StoppingOracle(OracleAgent):
    """The oracle that sets `stop` at its second action of the episode with seed `at`."""

    def __init__(self, seed, stop, at):
        self.seed, self.stop, self.at, self.acts = seed, stop, at, 0

    def act(self, observation, info):
        self.acts += 1
        if self.seed == self.at and self.acts == 2:
            self.stop.request("test")
        return super().act(observation, info)


@pytest.mark.parametrize("concurrency", [1, 3])
def test_a_stop_request_keeps_the_ended_episodes_and_resume_plays_the_rest(tmp_path, concurrency):
    from orchestra_gym.evaluation import EvaluationStopped, StopRequest

    stop, run = StopRequest(), tmp_path / "run"
    with pytest.raises(EvaluationStopped) as e:
        evaluate(TOOLSCALE, "oracle", 8, seed=10, output_dir=run, max_concurrency=concurrency, stop=stop,
                 agents=lambda s: _StoppingOracle(s, stop, at=13))
    kept = [r.seed for r in e.value.results]
    assert e.value.reason == "test" and e.value.planned == 8 and 13 not in kept and 1 <= e.value.abandoned <= concurrency
    if concurrency == 1:
        assert kept == [10, 11, 12] and e.value.abandoned == 1  # serial: the plan's order, the episode in flight dropped
    cfg, stored = load_run(run)
    assert [r.seed for r in stored] == kept  # every ended episode has its line, no abandoned one has
    assert json.loads((run / "summary.json").read_text()) == json.loads(json.dumps(e.value.summary))
    assert e.value.summary["episodes"] == len(kept) and e.value.summary["success_rate"] == 1.0
    agents = _Counting()
    _, summary = resume(run, agents=agents)
    assert sorted(agents.seeds) == sorted(set(range(10, 18)) - set(kept))
    _, whole = evaluate(TOOLSCALE, "oracle", 8, seed=10)
    assert summary == whole


def test_resume_replays_infra_failures(tmp_path):
    fails = {0: 9, 1: 0}
    evaluate(TOOLSCALE, "oracle", 2, output_dir=tmp_path / "r", agents=lambda s: _FlakyOracle(fails[s]))
    assert summarize(load_run(tmp_path / "r")[1])["infra_failures"] == 1
    agents = _Counting()
    _, s = resume(tmp_path / "r", agents=agents)
    assert agents.seeds == [0] and s["infra_failures"] == 0 and s["episodes"] == 2 and s["success_rate"] == 1.0


def test_trials_report_pass_hat_k(frames_file, tmp_path):
    results, s = evaluate("ToolOrchestra-FRAMES-v0", "random", 0, env_kwargs={"data_path": str(frames_file)},
                          all_tasks=True, trials=3, max_concurrency=3)
    assert [r.trial for r in results] == [0] * 2 + [1] * 2 + [2] * 2
    assert s["trials"] == 3 and s["pass_hat_k"] == {str(k): v for k, v in pass_hat_ks(results, 3).items()}
    assert set(s["pass_hat_k"]) == {"1", "2", "3"} and s["pass_hat_k"]["1"] == s["success_rate"]


def test_regrade_recomputes_grades_and_summary(frames_file, tmp_path):
    run = tmp_path / "run"
    _, before = evaluate("ToolOrchestra-FRAMES-v0", "oracle", 0, env_kwargs={"data_path": str(frames_file)},
                         all_tasks=True, output_dir=run)
    path = run / "trajectories.jsonl"
    stale = [json.loads(line) for line in path.read_text().splitlines()]
    for d in stale:  # an old grader that failed everything
        d["info"]["outcome"], d["info"]["solved"], d["info"]["reward_breakdown"]["correct"] = 0.0, False, False
    path.write_text("".join(json.dumps(d) + "\n" for d in stale))
    after = regrade(run)
    assert after == json.loads(json.dumps(before))
    assert after["success_rate"] == before["success_rate"] > 0
    regraded = load_run(run)[1]
    assert [r.info["reward_breakdown"]["judge_method"] for r in regraded] == ["exact", "exact"]
    assert all(r.info["reward_vector"][r.info["reward_vector_names"].index("outcome")] == r.info["outcome"] for r in regraded)
    assert (run / "trajectories.before-regrade.jsonl").read_text() == "".join(json.dumps(d) + "\n" for d in stale)
    # tau2/ToolScale keep their stored outcome; solved and the reward vector follow from it
    ts = tmp_path / "ts"
    _, s = evaluate(TOOLSCALE, "expert-1", 3, output_dir=ts)
    assert regrade(ts) == json.loads(json.dumps(s))
    assert regrade(ts, grader=lambda r: (0.0, {"new": True}))["success_rate"] == 0.0  # a new grader
    assert {r.info["reward_breakdown"]["new"] for r in load_run(ts)[1]} == {True}


# ---------------------------------------------------------------------------------- report
NAMES = ["calls/expert-1", "outcome", "-cost_usd", "-latency_s"]


def _write_run(root, env, agent, eps):
    """A synthetic run folder: eps = [(task, solved, cost USD, latency s, expert-1 calls)]."""
    root.mkdir(parents=True)
    (root / "run.json").write_text(json.dumps(RunConfig(env, agent, episodes=len(eps)).to_dict()))
    with open(root / "trajectories.jsonl", "w") as f:
        for seed, (task, solved, cost, lat, calls) in enumerate(eps):
            info = _info(solved, cost, lat, {"call_expert": calls, "expert-1": calls, "get_order": 1.0})
            info.update(reward_vector=[calls, float(solved), -cost, -lat], reward_vector_names=NAMES)
            f.write(json.dumps(EpisodeResult(task, 0, seed, info).record()) + "\n")
    return root


def test_report_tables_tau2_weighting_preference_and_plane(tmp_path):
    retail = _write_run(tmp_path / "retail", "ToolOrchestra-Tau2-Retail-v0", "A",
                        [("r1", True, 0.02, 60.0, 1.0), ("r2", False, 0.04, 120.0, 2.0), ("r3", True, 0.0, 0.0, 0.0)])
    airline = _write_run(tmp_path / "airline", "ToolOrchestra-Tau2-Airline-v0", "A", [("x1", True, 0.08, 240.0, 4.0)])
    cheap = _write_run(tmp_path / "cheap", TOOLSCALE, "cheap", [(f"t{i}", i < 1, 0.01, 30.0, 1.0) for i in range(4)])
    mid = _write_run(tmp_path / "mid", TOOLSCALE, "mid", [(f"t{i}", i < 2, 0.05, 30.0, 1.0) for i in range(4)])
    dear = _write_run(tmp_path / "dear", TOOLSCALE, "dear", [(f"t{i}", i < 4, 0.10, 60.0, 2.0) for i in range(4)])
    rows = [dict(n=3, accuracy=2 / 3, cost_cents=2.0, latency_min=1.0, env="ToolOrchestra-Tau2-Retail-v0", agent="A",
                 infra_failures=0),
            dict(n=1, accuracy=1.0, cost_cents=8.0, latency_min=4.0, env="ToolOrchestra-Tau2-Airline-v0", agent="A",
                 infra_failures=0)]
    w = tau2_task_weighted(rows)
    assert (w["n"], w["accuracy"], w["cost_cents"], w["latency_min"]) == (4, 0.75, 3.5, 1.75)
    assert w["env"] == "tau2 (Retail-v0, Airline-v0)" and w["accuracy_ci95"] == list(wald_interval(0.75, 4))
    png = tmp_path / "plane.png"
    text = report([retail, airline, cheap, mid, dear], baseline=cheap, png_path=png)
    assert "| ToolOrchestra-Tau2-Retail-v0 | A | 3 | 66.7 |" in text and "| 2.000 | 1.000 | 1: 0.667 | 0 |" in text
    assert "| tau2 (Retail-v0, Airline-v0) | A | 4 | 75.0 |" in text and "| 3.500 | 1.750 |" in text
    assert "| env | agent | expert-1 | other tools |" in text and "| ToolOrchestra-ToolScale-v0 | dear | 2.00 | 1.00 |" in text
    pts = [(1.0, 0.25), (5.0, 0.5), (10.0, 1.0)]
    assert f"AIQ over [1.000, 10.000] ¢: {aiq(pts, (1.0, 10.0)):.4f}" in text
    assert "hull vertices (cost ¢, accuracy %): (1.000, 25.0), (10.000, 100.0)" in text  # mid is under the chord
    assert f"| mid | 5.000 | 50.0 | {100 * hull_gap(0.5, 5.0, [pts[0], pts[2]]):+.1f} |" in text
    pref = preference_score(load_run(dear)[1], load_run(cheap)[1])
    assert f"| ToolOrchestra-ToolScale-v0 | dear | {pref:.4f} (4 episodes) |" in text
    assert "Accuracy-cost plane: ToolOrchestra-Tau2" not in text  # one run per tau2 env: no plane
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_by_label_groups_success_and_tool_mix_per_task_label():
    from orchestra_gym.evaluation import by_label

    infos = [
        {**_info(True, 0.02, 30.0, {"expert-1": 1.0}), "task_difficulty": "medium"},
        {**_info(False, 0.01, 10.0, {"expert-3": 1.0}), "task_difficulty": "medium"},
        {**_info(True, 0.001, 5.0, {"expert-3": 1.0}), "task_difficulty": "easy"},
        _info(False, 0.0, 1.0, {}),  # cut before the end: no label
    ]
    out = by_label(infos)
    assert list(out) == ["easy", "medium", "unknown"]
    assert out["medium"] == {"episodes": 2, "success_rate": 0.5, "tool_mix": {"expert-1": 0.5, "expert-3": 0.5}}
    assert out["easy"]["success_rate"] == 1.0 and out["unknown"]["episodes"] == 1
    assert by_label([], "task_category") == {}


def test_final_info_carries_the_tasks_labels_but_the_observation_does_not():
    env = gym.make("ToolOrchestra-ToolScale-v0", system_prompt="compact", max_turns=3)
    obs, info = env.reset(seed=4)
    task = env.unwrapped.task
    assert "task_category" not in info
    done, agent = False, make_agent("expert-1")
    agent.reset(env, obs, info)
    while not done:
        obs, _, term, trunc, info = env.step(agent.act(obs, info))
        done = term or trunc
    assert (info["task_category"], info["task_difficulty"]) == (task.category, task.difficulty)
    assert task.category not in obs.split("### user", 1)[0]  # the system prompt never names the label


def test_group_preference_score_pairs_by_task_and_a_reference_scores_its_own_group_reward():
    from orchestra_gym.rewards import reference_group_scores

    runs = {e: run_episodes(lambda: gym.make(TOOLSCALE), lambda s, e=e: make_agent(e, seed=s), 5, seed=11)
            for e in ("expert-1", "expert-2", "expert-3")}
    refs = list(runs.values())
    pref = {"outcome": 1.0, "cost": 0.5}
    p = np.array([0.0, 0.0, 0.0, 1.0, 0.5, 0.0])
    stack = lambda rs: np.stack([r.info["reward_vector"] for r in rs])
    want = reference_group_scores(stack(refs[2]), np.array([r.solved for r in refs[2]]), np.stack([stack(r) for r in refs]),
                                  np.array([[r.solved for r in rr] for rr in refs]), p).sum()
    got = group_preference_score(refs[2], refs, pref)
    assert got == pytest.approx(want)
    assert group_preference_score(refs[2][::-1], refs, pref) == pytest.approx(got)  # paired by task, not position
    # expert-3 is the cheapest of the three on every task: its score is 0.5 per solved task (plus 1 where the outcome
    # column is mixed), expert-1's never includes the cost bonus
    solved3 = sum(r.solved for r in refs[2])
    assert got >= 0.5 * solved3 - 1e-9
    with pytest.raises(ValueError, match="a reference run has no episode of task"):
        group_preference_score(refs[2], [refs[0][:2]], pref)


def test_asked_moves_reads_weights_relative_to_the_outcome():
    default = {"outcome": 1.0, "cost": 0.5, "latency": 0.0}
    assert asked_moves({"outcome": 1.0, "cost": 1.0}, default) == {"cost_cents": "down"}
    assert asked_moves({"outcome": 1.0, "cost": 0.02}, default) == {"success": "up"}
    assert asked_moves({"outcome": 1.0, "cost": 0.0, "latency": 0.5}, default) == {"latency_s": "down"}
    assert asked_moves({"outcome": 2.0, "cost": 1.0}, default) == {}  # the same weights relative to the outcome
    assert asked_moves({"outcome": 1.0, "cost": 2.0, "latency": 1.0}, default) == {"cost_cents": "down",
                                                                                   "latency_s": "down"}
    with pytest.raises(ValueError, match="outcome weight must be > 0"):
        asked_moves({"outcome": 0.0, "cost": 1.0}, default)
    base = {"success": 0.6, "cost_cents": 2.0, "latency_s": 40.0}
    assert moves_as_asked({"success": 0.6, "cost_cents": 1.5, "latency_s": 50.0}, base, {"cost_cents": "down"})
    assert not moves_as_asked({"success": 0.6, "cost_cents": 2.0, "latency_s": 30.0}, base, {"cost_cents": "down"})
    assert moves_as_asked({"success": 0.7, "cost_cents": 3.0, "latency_s": 50.0}, base, {"success": "up"})
    assert moves_as_asked(base, base, {})
