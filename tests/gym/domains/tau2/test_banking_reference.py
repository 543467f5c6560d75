"""banking_knowledge against tau2-bench v1.0.1's recorded behaviour (``tau2_v1_reference/banking_knowledge``).

Issue 50 item 3: every shared gold replay identical (each call's content and error flag, the
database hash after it, the final hash) and tau2's evaluator verdict on it; every probe identical
(``KB_search``'s wall-clock timing trailer excluded, as the reference does); tool schemas,
discoverable tool descriptions and ``mutates_state`` flags equal ``tools.json``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from orchestra_gym.domains.tau2 import Tau2Environment
from orchestra_gym.domains.tau2.banking import KnowledgeTools, KnowledgeUserTools, format_tool_for_agent
from orchestra_gym.domains.tau2.banking_env import BankingEnvironment
from orchestra_gym.domains.tau2.banking_schemas import AGENT_DISCOVERABLE, USER_DISCOVERABLE
from orchestra_gym.domains.tau2.evaluation import evaluate
from orchestra_gym.tasks.tau2 import load_tau2_tasks

SHARED = Path(os.environ["ORCHESTRA_DATA_DIR"])
DATA = Path(os.environ.get("TAU2_V1_DATA_DIR") or SHARED / "tau2_v1")
REF = Path(os.environ.get("TAU2_V1_REFERENCE_DIR") or SHARED / "tau2_v1_reference") / "banking_knowledge"

pytestmark = pytest.mark.skipif(
    not (DATA / "domains" / "banking_knowledge" / "db.json").is_file() or not (REF / "gold_replay.json").is_file(),
    reason=f"tau2 v1.0.1 data ({DATA}) or its reference ({REF}) not found; set ORCHESTRA_DATA_DIR (README: Data)",
)
TIMING = re.compile(r"\[Timing: [^\]]*\]$")


def _load(name: str):
    return json.loads((REF / name).read_text()) if (REF / name).is_file() else []


GOLD = {r["task_id"]: r for r in _load("gold_replay.json")}
PROBES = {p["probe_id"]: p for p in _load("negative_probes.json")}


@pytest.fixture(scope="module")
def tools_ref():
    return _load("tools.json")


def test_tool_schemas_and_flags_match_tools_json(tools_ref):
    env = BankingEnvironment(data_dir=DATA, retrieval="bm25_grep")
    assert env.openai_schemas() == [t["openai_schema"] for t in tools_ref["tools"]]
    assert [(t.name, t.kind) for t in env.tool_specs()] == [(t["name"], t["tool_type"].lower()) for t in tools_ref["tools"]]
    assert env.user_openai_schemas() == [t["openai_schema"] for t in tools_ref["user_tools"]]
    assert [env.tool_type(t["name"], "user") for t in tools_ref["user_tools"]] == [t["tool_type"] for t in tools_ref["user_tools"]]
    for requestor, flags in tools_ref["mutates_state"].items():
        assert {n: env.mutates_state(n, requestor) for n in flags} == flags
    assert env.db_hash() == env.user_db_hash() == tools_ref["pristine_db_hash"] == tools_ref["pristine_user_db_hash"]
    # the retrieval tools of every variant
    schemas = {s["name"]: s["openai_schema"] for s in tools_ref["retrieval_tool_schemas"]}
    grep_only = BankingEnvironment(data_dir=DATA, retrieval="grep_only").openai_schemas()
    assert grep_only[0] == schemas["grep"] and len(grep_only) == 15
    assert [s["function"]["name"] for s in BankingEnvironment(data_dir=DATA, retrieval="full_kb").openai_schemas()] \
        == [t["name"] for t in tools_ref["tools"][2:]]


@pytest.mark.parametrize("side,kit,table", [("discoverable_agent_tools", KnowledgeTools, AGENT_DISCOVERABLE),
                                            ("discoverable_user_tools", KnowledgeUserTools, USER_DISCOVERABLE)])
def test_discoverable_tools_match_tools_json(tools_ref, side, kit, table):
    import inspect

    ref = tools_ref[side]
    assert list(table) == [t["name"] for t in ref]
    for t in ref:
        assert kit.tool_type(t["name"]) == t["tool_type"] and kit.has_discoverable_tool(t["name"])
        assert kit._MUTATES[t["name"]] is t["mutates_state"]
        assert table[t["name"]] == t["tool_info"]
        assert format_tool_for_agent(t["tool_info"]) == t["formatted_for_agent"]
        params = [p for p in inspect.signature(getattr(kit, t["name"])).parameters.values() if p.name != "self"]
        got = [{"name": p.name, "required": p.default is inspect.Parameter.empty} for p in params]
        assert got == [{k: v for k, v in s.items() if k in ("name", "required")} for s in t["signature_parameters"]]


@pytest.mark.parametrize("task_id", sorted(GOLD))
def test_gold_replay_identical(task_id):
    rec = GOLD[task_id]
    env = Tau2Environment("banking_knowledge", data_dir=DATA, task_id=task_id, version="v1.0.1", retrieval="bm25_grep")
    assert env.db_hash() == rec["initial_db_hash"]
    for c in rec["calls"]:
        r = env.call_tool(c["name"], c["arguments"], c["requestor"])
        assert (r.content, r.error) == (c["content"], c["error"]), (task_id, c["index"], c["name"])
    assert env.db_hash() == rec["final_db_hash"]
    assert env.user_db_hash() == rec["final_user_db_hash"]


def test_tau2_evaluator_verdicts_on_gold_replays():
    """Our evaluator on the recorded calls gives tau2's verdict for every shared task."""
    tasks = {t.id: t for t in load_tau2_tasks("banking_knowledge", DATA)}
    assert len(tasks) == 97
    for task_id, rec in GOLD.items():
        check = rec["tau2_evaluator_check"]
        trajectory = [{"name": c["name"], "arguments": c["arguments"], "requestor": c["requestor"]} for c in rec["calls"]]
        res = evaluate(tasks[task_id], trajectory, [], data_dir=DATA)
        assert res.reward == check["reward_evaluated_components"], task_id
        assert sorted(res.not_evaluated) == sorted(check["reward_basis_not_evaluated"]), task_id
        assert res.breakdown.get("ACTION", check["action_reward"]) == check["action_reward"], task_id
        assert res.info.get("db_match", check["db_match"]) == check["db_match"], task_id


def test_probes_identical():
    """All 314 probes: content (timing trailer excluded), error flag and DB hash after every step."""
    failed = []
    for probe_id, p in PROBES.items():
        env = BankingEnvironment(data_dir=DATA, read_log_allowlist=p.get("read_log_allowlist") or [])
        if p.get("initialization_data"):
            env.set_state(p["initialization_data"], None, [])
        assert env.db_hash() == p["db_hash_start"], probe_id
        for i, s in enumerate(p["steps"]):
            r = env.call_tool(s["name"], s["arguments"], s["requestor"])
            if (TIMING.sub("", r.content), r.error, env.db_hash()) != (TIMING.sub("", s["content"]), s["error"],
                                                                        s["db_hash_after"]):
                failed.append((probe_id, i))
                break
    assert len(PROBES) == 314 and failed == []


def test_kb_search_trailer_and_tau2_task_loading():
    env = BankingEnvironment(data_dir=DATA)
    out = env.call_tool("KB_search", {"query": "debit card dispute provisional credit"}).content
    assert out.startswith("1. ") and out.count("\n   Score: ") == 10
    assert out.endswith("\n\n[Timing: retrieval=0ms, total=0ms]")
    assert env.call_tool("KB_search", {"query": "   "}).content == "No relevant documents found.\n\n[Timing: retrieval=0ms, total=0ms]"
    ids = [t.id for t in load_tau2_tasks("banking_knowledge", DATA)]
    assert ids[:3] == ["task_001", "task_002", "task_003"] and "task_009" not in ids and ids[-1] == "task_102"
