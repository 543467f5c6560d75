"""Mock domain (tau2-bench v0.2.0 data): tools, the status quirk, initial states, errors."""

from __future__ import annotations

import json

import pytest

from orchestra_gym.domains.tau2 import Tau2Environment
from orchestra_gym.domains.tau2.data import data_dir

DATA = data_dir()
pytestmark = pytest.mark.skipif(
    not (DATA / "domains" / "mock" / "db.json").is_file(),
    reason=f"tau2 mock data not found at {DATA}; set ORCHESTRA_DATA_DIR (README: Data) or TAU2_DATA_DIR",
)


def test_create_task_numbers_tasks_and_links_the_user():
    env = Tau2Environment("mock")
    r1 = env.call_tool("create_task", {"user_id": "user_1", "title": "A"})
    r2 = env.call_tool("create_task", {"user_id": "user_1", "title": "B", "description": "d"})
    assert r1.content == '{"task_id": "task_2", "title": "A", "description": null, "status": "pending"}'
    assert json.loads(r2.content)["task_id"] == "task_3"
    users = json.loads(env.call_tool("get_users", {}).content)
    assert users == [{"user_id": "user_1", "name": "Test User", "tasks": ["task_1", "task_2", "task_3"]}]
    assert env.tool_type("create_task") == "WRITE" and env.tool_type("get_users") == "READ"


def test_quirk_update_task_status_stores_any_value():
    env = Tau2Environment("mock")
    for value in ["done", None, 1]:
        res = env.call_tool("update_task_status", {"task_id": "task_1", "status": value})
        assert not res.error and json.loads(res.content)["status"] == value
    h_int = env.db_hash()
    env.call_tool("update_task_status", {"task_id": "task_1", "status": 1.0})
    assert env.db_hash() != h_int  # 1 and 1.0 hash differently, as in tau2


def test_title_validation_message_matches_pydantic():
    res = Tau2Environment("mock").call_tool("create_task", {"user_id": "user_1", "title": 25})
    assert res.error
    assert res.content == (
        "Error: 1 validation error for Task\ntitle\n  Input should be a valid string [type=string_type, "
        "input_value=25, input_type=int]\n    For further information visit https://errors.pydantic.dev/2.14/v/string_type"
    )


def test_three_kinds_of_initial_state_reach_the_same_database():
    pristine = Tau2Environment("mock").db_hash()
    hashes = {t: Tau2Environment("mock", task_id=t).db_hash() for t in [
        "update_task_with_message_history", "update_task_with_initialization_data",
        "update_task_with_initialization_actions"]}
    assert len(set(hashes.values())) == 1 and pristine not in hashes.values()
    env = Tau2Environment("mock", task_id="update_task_with_initialization_data")
    assert env.db.get("tasks", "task_2")["description"] == "Review Q4 project status"
    assert env.db.get("users", "user_1") == {"user_id": "user_1", "name": "Test User", "tasks": ["task_1", "task_2"]}


def test_history_that_does_not_replay_is_an_error():
    env = Tau2Environment("mock")
    call = {"id": "c1", "name": "create_task", "arguments": {"user_id": "user_1", "title": "X"}}
    with pytest.raises(ValueError, match="replaying history call create_task"):
        env.set_state(None, None, [{"role": "assistant", "tool_calls": [call]},
                                   {"role": "tool", "id": "c1", "content": "{\"task_id\": \"task_9\"}"}])
    with pytest.raises(ValueError, match="Tool message not expected"):
        Tau2Environment("mock").set_state(None, None, [{"role": "tool", "id": "c1", "content": ""}])
    with pytest.raises(ValueError, match="Tool call id mismatch"):
        Tau2Environment("mock").set_state(None, None, [{"role": "assistant", "tool_calls": [call]},
                                                       {"role": "tool", "id": "c2", "content": ""}])


def test_bad_names_give_clear_errors():
    with pytest.raises(ValueError, match=r"unknown tau2 domain 'banking'; known domains: \['airline', 'banking_knowledge', 'mock', 'retail', 'telecom'\]"):
        Tau2Environment("banking")
    with pytest.raises(ValueError, match="unknown task id 'nope'"):
        Tau2Environment("mock", task_id="nope")
    env = Tau2Environment("mock")
    assert env.call_tool("assert_task_status", {"task_id": "task_1", "expected_status": "pending"}).content == (
        "Error: Tool 'assert_task_status' not found.")
    assert env.call_tool("get_users", {}, requestor="user").content == "Error: User tools not available"
    assert env.run_env_assertion({"func_name": "assert_task_status",
                                  "arguments": {"task_id": "task_1", "expected_status": "pending"}}) is True
    assert env.run_env_assertion({"func_name": "assert_number_of_tasks", "assert_value": False,
                                  "arguments": {"user_id": "user_1", "expected_number": 2}}) is True


def test_v101_scripted_user_checks_and_dismisses_notifications():
    """tau2-bench v1.0.1's mock user tools through the env: the scripted user acts on the agent's request."""
    import os
    from pathlib import Path

    import gymnasium as gym

    import orchestra_gym  # noqa: F401

    v1 = Path(os.environ.get("ORCHESTRA_DATA_DIR", "")) / "tau2_v1"
    if not (v1 / "domains" / "mock" / "user_db.json").is_file():
        pytest.skip(f"tau2-bench v1.0.1 data not found at {v1}")
    env = gym.make("ToolOrchestra-Tau2-Mock-v0", data_dir=v1, version="v1.0.1").unwrapped
    env.reset(seed=0, options={"task_id": "update_task_with_user_tools"})
    live = env.backend.env
    assert live.user_tools.assert_notification_status("notif_1", "unread")
    request = live.user_request_text("dismiss_notification", {"notification_id": "notif_1"})
    env.step(request)  # plain text: a message to the user
    assert live.user_tools.assert_notification_status("notif_1", "read")
    assert env.joint_trajectory[-1] == {"name": "dismiss_notification", "arguments": {"notification_id": "notif_1"},
                                        "requestor": "user"}
