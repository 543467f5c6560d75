"""Tests of the ToolScale-synthetic generator (orchestra_gym.domains.synthetic)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestra_gym.domains.backend import DomainBackend
from orchestra_gym.domains.synthetic import (
    CATEGORIES,
    DOMAIN_NAMES,
    SyntheticInstance,
    export_tasks,
    get_domain,
    import_tasks,
    make_instance,
)
from orchestra_gym.domains.synthetic.core import check_schema, db_hash, mentions, normalize_text
from orchestra_gym.types import ToolCall

SEEDS = range(50)
REPO = Path(__file__).resolve().parents[3]


def _instances(domain: str, seeds=SEEDS) -> list[SyntheticInstance]:
    return [make_instance(s, domain) for s in seeds]


def _play(inst: SyntheticInstance, calls) -> list:
    backend = inst.new_backend()
    return [backend.call_tool(c.name, c.arguments) for c in calls]


def _say_all(inst: SyntheticInstance) -> list[str]:
    return [f"Here is what you asked: {item}." for item in inst.task.communicate_info]


def _bookings(inst: SyntheticInstance) -> tuple[str, dict]:
    table = inst.spec.tables[2]
    return table.key, inst.initial_db[table.name]


def _tool(inst: SyntheticInstance, prefix: str) -> str:
    return next(t.name for t in inst.tools if t.name.startswith(prefix))


def test_all_ten_paper_domains():
    assert DOMAIN_NAMES == ("finance", "sport", "e-commerce", "medicine", "entertainment",
                            "railway", "restaurant", "education", "travel", "weather")


@pytest.mark.parametrize("domain", DOMAIN_NAMES)
def test_domain_structure(domain):
    spec = get_domain(domain)
    inst = make_instance(0, domain)
    names = [t.name for t in inst.tools]
    assert len(names) >= 10 and len(set(names)) == len(names)
    assert {"calculate", "transfer_to_human_agents"} <= set(names)
    kinds = {t.kind for t in inst.tools}
    assert kinds == {"read", "write", "generic"}
    for t in inst.tools:
        assert t.parameters["type"] == "object"
        assert set(t.parameters["required"]) <= set(t.parameters["properties"])
        assert t.description
    assert len(spec.tables) >= 3
    assert sum(len(t.foreign_keys) for t in spec.tables) >= 3
    for seed in range(10):
        assert check_schema(make_instance(seed, domain).initial_db, spec.tables) == []
    # the policy is generated from the rules the tools enforce: every rule text is in it
    for tool in spec.tools:
        for rule in tool.rules:
            assert rule.text in inst.policy
    assert "transfer_to_human_agents" in inst.policy
    assert isinstance(inst.new_backend(), DomainBackend)


@pytest.mark.parametrize("domain", DOMAIN_NAMES)
def test_golden_actions_run_and_grade_one(domain):
    categories = set()
    for inst in _instances(domain):
        t = inst.task
        categories.add(t.category)
        assert t.id == f"{domain}-{inst.seed}" and t.domain == f"synthetic/{domain}"
        assert [c.id for c in t.golden_actions] == [f"gold_{i}" for i in range(len(t.golden_actions))]
        assert t.golden_actions
        assert t.difficulty in ("easy", "medium", "hard")
        instr = t.user_scenario["instructions"]
        assert {"domain", "reason_for_call", "known_info", "unknown_info", "task_instructions"} <= set(instr)
        assert inst.user_answers["email"] in instr["known_info"]
        backend = inst.new_backend()
        for c in t.golden_actions:
            r = backend.call_tool(c.name, c.arguments)
            assert not r.error, (t.id, c, r.content)
            assert r.usage.cost_usd == 0.0 and r.usage.latency_s == 0.0
        assert backend.db_hash() == inst.golden_db_hash
        outcome, br = backend.grade(_say_all(inst), t.golden_actions)
        assert outcome == 1.0, (t.id, br)
        assert br["execution_correctness"] == br["process_fidelity"] == br["operation_completeness"] == 1.0
        assert br["tool_errors"] == 0.0
    assert categories <= set(CATEGORIES)
    assert categories >= {"lookup", "compute", "conditional_write", "search_and_book", "several_writes", "transfer"}


@pytest.mark.parametrize("domain", DOMAIN_NAMES)
def test_empty_trajectory_grades_zero(domain):
    for inst in _instances(domain):
        outcome, br = inst.new_backend().grade([], [])
        assert outcome == 0.0
        assert br["operation_completeness"] == 0.0  # every golden run touches records


@pytest.mark.parametrize("domain", DOMAIN_NAMES)
def test_wrong_write_fails_execution_correctness(domain):
    rng = np.random.default_rng(0)
    checked = 0
    for inst in _instances(domain):
        gold = inst.task.golden_actions
        writes = [i for i, c in enumerate(gold) if inst.spec.tool_map()[c.name].kind == "write"]
        if not writes:
            continue
        i = writes[-1]
        for _ in range(5):
            wrong = inst.plausible_wrong_action(gold[i], rng)
            assert wrong.id == gold[i].id and wrong.to_dict() != gold[i].to_dict()
            traj = gold[:i] + [wrong] + gold[i + 1:]
            if not _play(inst, traj)[i].error:
                outcome, br = inst.new_backend().grade(_say_all(inst), traj)
                assert br["execution_correctness"] == 0.0 and outcome == 0.0, (inst.task.id, wrong)
                checked += 1
                break
        # an extra write the golden actions do not make also fails
        key, bookings = _bookings(inst)
        other = next((k for k, b in bookings.items() if b["status"] in ("pending", "confirmed")), None)
        extra = gold + [ToolCall(_tool(inst, "cancel_"), {key: other}, "x")]
        if other and not _play(inst, extra)[-1].error:
            assert inst.new_backend().grade(_say_all(inst), extra)[1]["execution_correctness"] == 0.0
    assert checked >= 15


@pytest.mark.parametrize("domain", DOMAIN_NAMES)
def test_process_fidelity_needs_every_communicate_item(domain):
    checked = 0
    for inst in _instances(domain):
        info = inst.task.communicate_info
        if not info:
            continue
        backend = inst.new_backend()
        gold = inst.task.golden_actions
        outcome, br = backend.grade(_say_all(inst)[1:], gold)
        assert br["process_fidelity"] == 0.0 and outcome == 0.0
        assert br["missing_communicate_info"] == [info[0]]
        # case and thousands separators do not matter; a longer number does not count
        loud = []
        for item in info:
            try:
                loud.append(f"TOTAL: ${float(item):,.2f} USD")
            except ValueError:
                loud.append(item.upper())
        assert backend.grade(loud, gold)[0] == 1.0, (inst.task.id, loud)
        numeric = [s for s in info if s.replace(".", "").isdigit()]
        if numeric:
            assert backend.grade([s + "7" for s in info], gold)[1]["process_fidelity"] == 0.0
        checked += 1
    assert checked >= 25


def test_normalisation_rules():
    assert normalize_text("Total: $1,234.50") == "total: $1234.5"
    assert mentions("You get 1,234.50 back", "1234.50")
    assert mentions("you get 12,345,678.9", "12345678.90")
    assert not mentions("you get 1234.55", "1234.5")
    assert not mentions("you get 11234.50", "1234.50")
    assert mentions("Departure at 11:30", "11:30")
    assert mentions("the city is BERLIN", "Berlin")


@pytest.mark.parametrize("domain", DOMAIN_NAMES)
def test_business_rules_and_bad_input_are_error_results(domain):
    inst = make_instance(1, domain)
    backend = inst.new_backend()
    before = backend.db_hash()
    key, bookings = _bookings(inst)
    cancel = _tool(inst, "cancel_")
    statuses = {b["status"] for b in bookings.values()}
    done = next(s for s in sorted(statuses) if s not in ("pending", "confirmed", "cancelled"))
    done_id = next(k for k, b in bookings.items() if b["status"] == done)
    r = backend.call_tool(cancel, {key: done_id})
    assert r.error and "not allowed by policy" in r.content and r.metadata["transfer"] is True
    cancelled_id = next((k for k, b in bookings.items() if b["status"] == "cancelled"), None)
    if cancelled_id:
        r = backend.call_tool(cancel, {key: cancelled_id})
        assert r.error and "cannot be cancelled again" in r.content
    r = backend.call_tool(cancel, {key: "NOPE-1"})
    assert r.error and "'NOPE-1' not found" in r.content
    modify = _tool(inst, "modify_")
    open_id = next(k for k, b in bookings.items() if b["status"] in ("pending", "confirmed"))
    r = backend.call_tool(modify, {key: open_id, "quantity": "2"})
    assert r.error and "must be integer" in r.content
    r = backend.call_tool(modify, {key: open_id, "quantity": True})
    assert r.error and "must be integer" in r.content
    r = backend.call_tool(modify, {key: open_id, "quantity": 99})
    assert r.error and "group request" in r.content and r.metadata["transfer"] is True
    r = backend.call_tool(modify, {key: open_id})
    assert r.error and "missing required argument(s) ['quantity']" in r.content
    r = backend.call_tool(modify, {key: open_id, "quantty": 2, "quantity": 2})
    assert r.error and "did you mean 'quantity'" in r.content
    r = backend.call_tool(cancel, ["not", "a", "dict"])  # type: ignore[arg-type]
    assert r.error and "JSON object" in r.content
    assert backend.db_hash() == before  # nothing changed
    r = backend.call_tool(cancel[:-1] + "x", {key: open_id})
    assert r.error and f"did you mean {cancel!r}" in r.content and "known tools:" in r.content
    r = backend.call_tool(cancel, {key: open_id})
    assert not r.error and json.loads(r.content)["status"] == "cancelled"
    assert backend.db_hash() != before


@pytest.mark.parametrize(
    "expr",
    ["__import__('os').system('true')", "open('x')", "x + 1", "'a' * 3", "[1, 2]", "2 ** 1000", "1 / 0",
     "(10 ** 10) ** 50", "1 if 1 else 2", "lambda: 1", "", "1 +", "(-8) ** 0.5", "9" * 600],
)
def test_calculate_rejects_non_arithmetic(expr):
    backend = make_instance(0, DOMAIN_NAMES[0]).new_backend()
    r = backend.call_tool("calculate", {"expression": expr})
    assert r.error and r.content.startswith("Error:")


def test_calculate_values():
    backend = make_instance(0, DOMAIN_NAMES[0]).new_backend()
    assert backend.call_tool("calculate", {"expression": "(120.5 + 30) * 2 - 1 / 4"}).content == "300.75"
    assert backend.call_tool("calculate", {"expression": "-2 ** 2 + 7 % 3 + 7 // 2"}).content == "0.00"
    assert backend.call_tool("calculate", {"expression": 5}).error


@pytest.mark.parametrize("domain", DOMAIN_NAMES)
def test_transfer_counts_only_when_golden_transfers(domain):
    seen_transfer = seen_other = 0
    for inst in _instances(domain):
        gold = inst.task.golden_actions
        transfers = gold[-1].name == "transfer_to_human_agents"
        if transfers:
            seen_transfer += 1
            # the summary wording is free; leaving the transfer out fails completeness
            mine = gold[:-1] + [ToolCall("transfer_to_human_agents", {"summary": "user wants a refund"}, "t")]
            assert inst.new_backend().grade([], mine)[0] == 1.0
            outcome, br = inst.new_backend().grade([], gold[:-1])
            assert outcome == 0.0 and br["operation_completeness"] == 0.0 and not br["transferred"]
        else:
            seen_other += 1
            extra = gold + [ToolCall("transfer_to_human_agents", {"summary": "help"}, "t")]
            outcome, br = inst.new_backend().grade(_say_all(inst), extra)
            assert outcome == 0.0 and br["transferred"] and not br["golden_transfers"]
    assert seen_transfer >= 5 and seen_other >= 20


@pytest.mark.parametrize("domain", DOMAIN_NAMES)
def test_completeness_needs_every_golden_record(domain):
    checked = 0
    for inst in _instances(domain):
        gold = inst.task.golden_actions
        reads = [i for i, c in enumerate(gold) if c.name.startswith("get_")]
        if not reads:
            continue
        traj = [c for i, c in enumerate(gold) if i != reads[-1]]
        outcome, br = inst.new_backend().grade(_say_all(inst), traj)
        if br["missing_records"]:  # the record may also be touched by another call
            assert br["operation_completeness"] == 0.0 and outcome == 0.0
            checked += 1
    assert checked >= 10


@pytest.mark.parametrize("domain", DOMAIN_NAMES)
def test_plausible_wrong_action_is_a_valid_looking_variant(domain):
    rng = np.random.default_rng(1)
    for inst in _instances(domain, range(20)):
        names = {t.name for t in inst.tools}
        for call in inst.task.golden_actions:
            wrong = inst.plausible_wrong_action(call, rng)
            assert wrong.name in names and wrong.id == call.id
            assert wrong.to_dict() != call.to_dict()
            spec = inst.spec.tool_map()[wrong.name]
            assert spec.check_arguments(wrong.arguments) is None, (wrong, spec.check_arguments(wrong.arguments))


def test_determinism_in_process():
    for seed in range(20):
        a, b = make_instance(seed), make_instance(seed)
        assert a.task.to_dict() == b.task.to_dict()
        assert db_hash(a.initial_db) == db_hash(b.initial_db)
        assert a.policy == b.policy and a.tools == b.tools
    assert make_instance(3).domain == DOMAIN_NAMES[3 % len(DOMAIN_NAMES)]
    assert make_instance(0, DOMAIN_NAMES[0]).task.to_dict() != make_instance(1, DOMAIN_NAMES[0]).task.to_dict()


_FINGERPRINT = """
import json, sys
from orchestra_gym.domains.synthetic import DOMAIN_NAMES, make_instance
from orchestra_gym.domains.synthetic.core import db_hash
out = []
for d in DOMAIN_NAMES:
    for s in range(5):
        i = make_instance(s, d)
        out.append([i.task.to_dict(), db_hash(i.initial_db), i.golden_db_hash])
print(json.dumps(out, sort_keys=True))
"""


def test_determinism_across_processes():
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": "random"}
    runs = [
        subprocess.run([sys.executable, "-c", _FINGERPRINT], env=env, capture_output=True, text=True, check=True).stdout
        for _ in range(2)
    ]
    assert runs[0] == runs[1]
    here = json.loads(runs[0])
    assert here[0][1] == db_hash(make_instance(0, DOMAIN_NAMES[0]).initial_db)


def test_export_import_round_trip():
    insts = [make_instance(s) for s in range(30)]
    rows = json.loads(json.dumps(export_tasks(insts)))
    for row, inst in zip(rows, insts):
        assert row["id"] == inst.task.id
        assert set(row) == {"id", "description", "user_scenario", "initial_state", "evaluation_criteria"}
        crit = row["evaluation_criteria"]
        assert set(crit) == {"actions", "communicate_info", "nl_assertions"}
        assert set(crit["actions"][0]) == {"action_id", "name", "arguments", "info"}
        assert row["user_scenario"]["instructions"]["reason_for_call"]
    back = import_tasks(rows)
    for a, b in zip(insts, back):
        assert a.task.to_dict() == b.task.to_dict()
        assert a.golden_db_hash == b.golden_db_hash and a.golden_touched == b.golden_touched
        assert b.new_backend().grade(_say_all(b), b.task.golden_actions)[0] == 1.0
    assert export_tasks(back) == rows


def test_import_rejects_foreign_rows():
    row = export_tasks([make_instance(0)])[0]
    with pytest.raises(ValueError, match="description.notes"):
        import_tasks([{**row, "description": {"notes": "hand-written"}}])
    bad = json.loads(json.dumps(row))
    bad["evaluation_criteria"]["actions"][0]["arguments"] = {}
    with pytest.raises(ValueError, match="fail on the regenerated database"):
        import_tasks([bad])


def test_bad_arguments_to_make_instance():
    with pytest.raises(ValueError, match="seed must be an int >= 0"):
        make_instance(-1)
    with pytest.raises(ValueError, match="unknown synthetic domain 'mars'"):
        make_instance(0, "mars")


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=True) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


_FUZZ_INSTANCES = [make_instance(s) for s in range(20)]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(data=st.data())
def test_call_tool_never_raises(data):
    inst = data.draw(st.sampled_from(_FUZZ_INSTANCES))
    backend = inst.new_backend()
    tool = data.draw(st.sampled_from(inst.tools))
    props = tool.parameters["properties"]
    # well-typed-looking values from the database mixed with arbitrary JSON
    values = st.sampled_from(sorted({v for rows in inst.initial_db.values() for r in rows.values()
                                     for v in r.values() if isinstance(v, (str, int))}, key=str)) | _json
    args = data.draw(st.dictionaries(st.sampled_from(sorted(props) + ["bogus"]), values, max_size=5) | _json)
    name = data.draw(st.just(tool.name) | st.text(max_size=20))
    r = backend.call_tool(name, args)
    assert isinstance(r.content, str) and r.content
    assert r.error or name == tool.name


def test_booking_tools_and_templates_are_registered_functions():
    import dataclasses

    from orchestra_gym.domains.synthetic import booking
    from orchestra_gym.domains.synthetic.railway import CONFIG

    assert list(booking.BOOKING_TOOLS) == [
        "find_customer", "get_customer", "get_item", "search_items", "get_booking", "get_payment",
        "book_item", "cancel_booking", "modify_quantity", "change_item", "update_profile"]
    assert list(booking.BOOKING_TEMPLATES) == [
        "lookup", "total_active", "conditional_cancel", "search_and_book", "several_writes",
        "change_booking_item", "refund_done", "group_request"]
    assert all(getattr(booking, name) is entry.function for name, entry in booking.BOOKING_TOOLS.items())
    names = booking.BookingNames(CONFIG)
    tools = booking.build_tools(names)
    assert [t.name for t in tools] == [
        "find_passenger_id_by_email", "get_passenger_details", "get_train_details", "search_trains",
        "get_ticket_details", "get_payment_method_details", "book_train", "cancel_ticket",
        "modify_ticket_quantity", "change_ticket_train", "update_passenger_home_station"]
    change = tools[9]
    assert [p.name for p in change.params] == ["ticket_id", "new_train_id"]
    assert change.rules[1].text == ("The new train must be a different train with status 'open' and the same origin "
                                    "and destination.")
    assert names.text("{max_quantity} {unit} per {booking}") == "6 seats per ticket"
    with pytest.raises(ValueError, match=r"BookingConfig 'railway': id prefixes collide: \['PAS-', 'PAS-'"):
        booking.BookingNames(dataclasses.replace(CONFIG, item="pass"))


def test_instances_are_cached_and_episodes_do_not_write_into_them():
    """make_instance keeps recent instances (a GRPO group resets the same task G times): the same
    (seed, domain) gives the same object, and an episode that plays the golden actions writes only into
    its backend's copy of the database."""
    inst = make_instance(11)
    assert make_instance(11) is inst and make_instance(11, inst.domain) is inst
    before = db_hash(inst.initial_db)
    backend = inst.new_backend()
    for call in inst.task.golden_actions:
        backend.call_tool(call.name, dict(call.arguments))
    assert backend.db_hash() == inst.golden_db_hash != before
    assert db_hash(inst.initial_db) == before
    assert db_hash(make_instance(11).new_backend().db) == before
