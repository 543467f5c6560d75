"""Retail domain: each tau2-bench v0.2.0 quirk in its own test, plus copy-on-write integrity.

Ids below are records of the v0.2.0 retail database (order #W1129578 of liam_thomas_8833 is
pending with a Digital Camera and a Cycling Helmet, paid by paypal_8229936).
"""

from __future__ import annotations

import json

import pytest

from orchestra_gym.domains.tau2 import Tau2Environment
from orchestra_gym.domains.tau2.data import data_dir

DATA = data_dir()
pytestmark = pytest.mark.skipif(
    not (DATA / "domains" / "retail" / "db.json").is_file(),
    reason=f"tau2 retail data not found at {DATA}; set ORCHESTRA_DATA_DIR (README: Data) or TAU2_DATA_DIR",
)

ORDER, USER, PAYPAL, CARD = "#W1129578", "liam_thomas_8833", "paypal_8229936", "credit_card_5089597"
CAMERA, CAMERA_NEW = "7583936705", "1804581713"
HELMET, HELMET_NEW = "8573379326", "1596993217"


def call(env, name, **arguments):
    res = env.call_tool(name, arguments)
    return json.loads(res.content) if not res.error and res.content.startswith("{") else res.content, res.error


def variant(env, item_id):
    for product in env.db.values("products"):
        if item_id in product["variants"]:
            return product["variants"][item_id]
    raise KeyError(item_id)


def test_quirk_status_checks_differ_between_tools():
    env = Tau2Environment("retail")
    order, err = call(env, "modify_pending_order_items", order_id=ORDER, item_ids=[CAMERA],
                      new_item_ids=[CAMERA_NEW], payment_method_id=PAYPAL)
    assert not err and order["status"] == "pending (item modified)"
    # exact "pending" required
    assert call(env, "cancel_pending_order", order_id=ORDER, reason="no longer needed") == (
        "Error: Non-pending order cannot be cancelled", True)
    assert call(env, "modify_pending_order_items", order_id=ORDER, item_ids=[HELMET], new_item_ids=[HELMET_NEW],
                payment_method_id=PAYPAL) == ("Error: Non-pending order cannot be modified", True)
    # "pending" substring accepted
    order, err = call(env, "modify_pending_order_address", order_id=ORDER, address1="1 A St", address2="",
                      city="Austin", state="TX", country="USA", zip="78701")
    assert not err and order["address"]["city"] == "Austin" and order["status"] == "pending (item modified)"
    content, err = call(env, "modify_pending_order_payment", order_id=ORDER, payment_method_id=CARD)
    assert err and content == "Error: There should be exactly one payment for a pending order"


def test_quirk_multi_item_modification_copies_last_variant_price():
    env = Tau2Environment("retail")
    before = {i["item_id"]: i for i in env.db.get("orders", ORDER)["items"]}
    order, err = call(env, "modify_pending_order_items", order_id=ORDER, item_ids=[CAMERA, HELMET],
                      new_item_ids=[CAMERA_NEW, HELMET_NEW], payment_method_id=PAYPAL)
    assert not err
    items = {i["name"]: i for i in order["items"]}
    last = variant(env, HELMET_NEW)
    assert items["Digital Camera"]["item_id"] == CAMERA_NEW and items["Cycling Helmet"]["item_id"] == HELMET_NEW
    assert items["Digital Camera"]["price"] == last["price"] == 180.02
    assert items["Digital Camera"]["options"] == last["options"] == items["Cycling Helmet"]["options"]
    assert variant(env, CAMERA_NEW)["price"] != last["price"]
    diff = (variant(env, CAMERA_NEW)["price"] - before[CAMERA]["price"]) + (last["price"] - before[HELMET]["price"])
    assert order["payment_history"][-1] == {"transaction_type": "refund", "amount": abs(diff), "payment_method_id": PAYPAL}


def _gift_card_pending_case(env):
    """A pending order, a user's gift card and an item swap that yields a refund."""
    for oid, order in env.db.items("orders"):
        if order["status"] != "pending":
            continue
        cards = [p for p in env.db.get("users", order["user_id"])["payment_methods"].values() if p["source"] == "gift_card"]
        if not cards:
            continue
        for item in order["items"]:
            for vid, v in env.db.get("products", item["product_id"])["variants"].items():
                if vid != item["item_id"] and v["available"] and v["price"] < item["price"]:
                    return oid, cards[0]["id"], item, v
    raise AssertionError("no pending order with a gift card and a cheaper variant in the database")


def test_quirk_unrounded_refund_but_rounded_gift_card_balance():
    env = Tau2Environment("retail")
    oid, card, item, new = _gift_card_pending_case(env)
    balance = env.db.get("users", env.db.get("orders", oid)["user_id"])["payment_methods"][card]["balance"]
    order, err = call(env, "modify_pending_order_items", order_id=oid, item_ids=[item["item_id"]],
                      new_item_ids=[new["item_id"]], payment_method_id=card)
    assert not err
    diff = new["price"] - item["price"]
    assert order["payment_history"][-1] == {"transaction_type": "refund", "amount": abs(0 + diff), "payment_method_id": card}
    user = env.db.get("users", order["user_id"])
    assert user["payment_methods"][card]["balance"] == round(balance - diff, 2)
    # the recorded gold data shows an unrounded amount: 53.48 - 53.43 style differences keep float noise
    env2 = Tau2Environment("retail")
    order2, _ = call(env2, "modify_pending_order_items", order_id="#W4776164", item_ids=["8349118980"],
                     new_item_ids=["9647292434"], payment_method_id="credit_card_9513926")
    assert order2["payment_history"][-1]["amount"] == 0.04999999999999716


def test_quirk_no_argument_type_validation():
    env = Tau2Environment("retail")
    assert call(env, "get_order_details", order_id=1129578) == ("Error: Order not found", True)
    assert call(env, "find_user_id_by_email", email=25) == ("Error: 'int' object has no attribute 'lower'", True)
    assert call(env, "find_user_id_by_name_zip", first_name="Liam", last_name="Thomas", zip=20119) == (
        "Error: User not found", True)
    assert call(env, "find_user_id_by_name_zip", first_name="liam", last_name="THOMAS", zip="20119") == (USER, False)
    # a bare string is iterated character by character
    assert call(env, "modify_pending_order_items", order_id=ORDER, item_ids=CAMERA, new_item_ids=[CAMERA_NEW],
                payment_method_id=PAYPAL) == ("Error: 7 not found", True)
    assert call(env, "calculate", expression=25) == ("Error: 'int' object is not iterable", True)
    assert call(env, "calculate", expression="25") == ("25.0", False)
    assert call(env, "transfer_to_human_agents", summary=25) == ("Transfer successful", False)
    assert env.db_hash() == Tau2Environment("retail").db_hash()


def test_quirk_empty_return_accepted():
    env = Tau2Environment("retail")
    order, err = call(env, "return_delivered_order_items", order_id="#W1341845", item_ids=[],
                      payment_method_id="credit_card_6450164")
    assert not err
    assert (order["status"], order["return_items"], order["return_payment_method_id"]) == (
        "return requested", [], "credit_card_6450164")


def test_quirk_exchange_has_no_same_item_check():
    env = Tau2Environment("retail")
    for oid, order in env.db.items("orders"):
        if order["status"] != "delivered":
            continue
        pm = order["payment_history"][0]["payment_method_id"]
        for item in order["items"]:
            if env.db.get("products", item["product_id"])["variants"][item["item_id"]]["available"]:
                out, err = call(env, "exchange_delivered_order_items", order_id=oid, item_ids=[item["item_id"]],
                                new_item_ids=[item["item_id"]], payment_method_id=pm)
                assert not err
                assert out["status"] == "exchange requested"
                assert out["exchange_new_items"] == [item["item_id"]]
                expected = round(0 + (env.db.get("products", item["product_id"])["variants"][item["item_id"]]["price"]
                                      - item["price"]), 2)
                assert out["exchange_price_difference"] == expected
                # modify_pending_order_items, by contrast, refuses the same id
                assert call(env, "modify_pending_order_items", order_id=ORDER, item_ids=[CAMERA],
                            new_item_ids=[CAMERA], payment_method_id=PAYPAL) == (
                    "Error: The new item id should be different from the old item id", True)
                return
    raise AssertionError("no delivered order with an available ordered variant")


def test_cancel_refunds_gift_card_immediately_and_records_refunds():
    env = Tau2Environment("retail")
    for oid, order in env.db.items("orders"):
        if order["status"] == "pending" and order["payment_history"][0]["payment_method_id"].startswith("gift_card"):
            break
    pid = order["payment_history"][0]["payment_method_id"]
    amount = order["payment_history"][0]["amount"]
    balance = env.db.get("users", order["user_id"])["payment_methods"][pid]["balance"]
    out, err = call(env, "cancel_pending_order", order_id=oid, reason="ordered by mistake")
    assert not err and out["status"] == "cancelled" and out["cancel_reason"] == "ordered by mistake"
    assert out["payment_history"][-1] == {"transaction_type": "refund", "amount": amount, "payment_method_id": pid}
    assert env.db.get("users", order["user_id"])["payment_methods"][pid]["balance"] == round(balance + amount, 2)


def test_writes_never_touch_the_shared_snapshot_and_fork_is_independent():
    env = Tau2Environment("retail")
    pristine = env.db_hash()
    call(env, "modify_user_address", user_id=USER, address1="1 A St", address2="", city="Austin", state="TX",
         country="USA", zip="78701")
    child = env.fork()
    call(child, "cancel_pending_order", order_id=ORDER, reason="no longer needed")
    assert env.db.get("orders", ORDER)["status"] == "pending"
    assert child.db.get("orders", ORDER)["status"] == "cancelled"
    assert env.db.snapshot.tables["users"][USER]["address"]["city"] != "Austin"
    assert Tau2Environment("retail").db_hash() == pristine
    assert not env.same_db(child) and env.same_db(env.fork())
    assert env.db_hash() != pristine != child.db_hash()


def test_incremental_hash_equals_full_serialisation():
    env = Tau2Environment("retail")
    call(env, "modify_pending_order_items", order_id=ORDER, item_ids=[CAMERA], new_item_ids=[CAMERA_NEW],
         payment_method_id=PAYPAL)
    full = json.dumps(env.db.to_dict(), sort_keys=True, default=str)
    assert env.db.canonical() == full


def test_calculate_rounds_to_two_places_and_rejects_letters():
    env = Tau2Environment("retail")
    assert call(env, "calculate", expression="3131.1 + 4777.75 + 367.38") == ("8276.23", False)
    assert call(env, "calculate", expression="(10 - 4) / 4") == ("1.5", False)
    assert call(env, "calculate", expression="-2 ** 2") == ("-4.0", False)
    assert call(env, "calculate", expression="2 ** -1") == ("0.5", False)
    assert call(env, "calculate", expression="abs(2)") == ("Error: Invalid characters in expression", True)
    assert call(env, "calculate", expression="9 ** 99999") == ("Error: Exponent too large", True)


@pytest.mark.parametrize("domain", ["retail", "airline"])  # one shared calculate (toolkit.calculate_expression)
@pytest.mark.parametrize("expression", ["(9999**9999)**999", "(9999 ** 99) ** 99", "(9**9999) * (9**9999) * (9**9999)"])
def test_calculate_bounds_the_work_of_any_expression(expression, domain):
    import time

    if not (DATA / "domains" / domain).is_dir():
        pytest.skip(f"tau2 {domain} data not found at {DATA}")
    env = Tau2Environment(domain)
    t0 = time.monotonic()
    content, error = call(env, "calculate", expression=expression)
    assert time.monotonic() - t0 < 0.5
    assert error and content.startswith("Error: number too large: the result would have about")
    assert call(env, "calculate", expression="(2 ** 2000) / (2 ** 1990)") == ("1024.0", False)  # parity kept
