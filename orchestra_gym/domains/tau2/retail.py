"""The tau2 ``retail`` domain: data model and the 15 agent tools, reimplemented from tau2-bench v0.2.0.

Database tables: ``products`` (product_id -> Product{name, product_id, variants: {item_id ->
Variant{item_id, options, available, price}}}), ``users`` (user_id -> User{user_id, name, address,
email, payment_methods: {id -> credit_card | paypal | gift_card}, orders}) and ``orders``
(order_id -> Order{order_id, user_id, address, items, status, fulfillments, payment_history,
and seven optional fields that default to None}).

Behaviour matched to tau2-bench v0.2.0, including its quirks (each marked ``QUIRK`` below and
tested in ``tests/gym/domains/tau2/test_retail.py``):

1. QUIRK status checks differ between tools: ``modify_pending_order_address`` and
   ``modify_pending_order_payment`` accept any status that *contains* "pending" (so also
   "pending (item modified)"), while ``cancel_pending_order`` and ``modify_pending_order_items``
   need exactly "pending".
2. QUIRK ``modify_pending_order_items`` with several items writes the price and options of the
   *last* new variant onto *every* modified item (item ids are set correctly).
3. QUIRK refunds / payments of ``modify_pending_order_items`` are not rounded (e.g.
   ``0.04999999999999716``), while gift-card balances are rounded to 2 places.
4. QUIRK no argument type validation: arguments reach the code as given, so ``"25"`` vs ``25``
   changes the outcome (an int id is simply "not found", an int email fails on ``.lower``, a bare
   string ``item_ids`` is iterated character by character).
5. QUIRK ``return_delivered_order_items`` accepts an empty ``item_ids`` list, and
   ``exchange_delivered_order_items`` has no same-item check.
"""

from __future__ import annotations

import json
from typing import Any

from orchestra_gym.domains.tau2.db import ANY, FLOAT, copy_json, dict_of, list_of, model, union
from orchestra_gym.domains.tau2.schemas import RETAIL_TOOLS, RETAIL_TOOLS_V1
from orchestra_gym.domains.tau2.toolkit import Tau2Toolkit, calculate_expression, check_str_fields, tool

__all__ = ["RetailTools", "RetailToolsV1", "RETAIL_TABLES"]

_ADDRESS = model(("address1", ANY), ("address2", ANY), ("city", ANY), ("country", ANY), ("state", ANY), ("zip", ANY))
_ADDRESS_FIELDS = ("address1", "address2", "city", "country", "state", "zip")

#: tau2 retail data model: field order, defaults and float fields of each table's records.
RETAIL_TABLES = {
    "products": model(
        ("name", ANY), ("product_id", ANY),
        ("variants", dict_of(model(("item_id", ANY), ("options", ANY), ("available", ANY), ("price", FLOAT)))),
    ),
    "users": model(
        ("user_id", ANY), ("name", model(("first_name", ANY), ("last_name", ANY))), ("address", _ADDRESS),
        ("email", ANY),
        ("payment_methods", dict_of(union(
            "source",
            credit_card=model(("source", ANY), ("id", ANY), ("brand", ANY), ("last_four", ANY)),
            paypal=model(("source", ANY), ("id", ANY)),
            gift_card=model(("source", ANY), ("id", ANY), ("balance", FLOAT)),
        ))),
        ("orders", list_of(ANY)),
    ),
    "orders": model(
        ("order_id", ANY), ("user_id", ANY), ("address", _ADDRESS),
        ("items", list_of(model(("name", ANY), ("product_id", ANY), ("item_id", ANY), ("price", FLOAT), ("options", ANY)))),
        ("status", ANY),
        ("fulfillments", list_of(model(("tracking_id", ANY), ("item_ids", ANY)))),
        ("payment_history", list_of(model(("transaction_type", ANY), ("amount", FLOAT), ("payment_method_id", ANY)))),
        ("cancel_reason", ANY, None), ("exchange_items", ANY, None), ("exchange_new_items", ANY, None),
        ("exchange_payment_method_id", ANY, None), ("exchange_price_difference", FLOAT, None),
        ("return_items", ANY, None), ("return_payment_method_id", ANY, None),
    ),
}


def _payment(kind: str, amount: Any, payment_method_id: Any) -> dict[str, Any]:
    """An OrderPayment record (tau2 validates it as a model: an int amount becomes a float)."""
    return {"transaction_type": kind, "amount": float(amount) if type(amount) is int else amount,
            "payment_method_id": payment_method_id}


def _address(address1: Any, address2: Any, city: Any, state: Any, country: Any, zip: Any) -> dict[str, Any]:
    """A UserAddress record, validated like tau2's pydantic model (string fields, in model order)."""
    values = {"address1": address1, "address2": address2, "city": city, "country": country, "state": state, "zip": zip}
    check_str_fields("UserAddress", [(f, values[f], False) for f in _ADDRESS_FIELDS])
    return values


class RetailTools(Tau2Toolkit):
    """Tools of the tau2 ``retail`` domain (class name as in tau2, used in argument-error texts)."""

    SCHEMAS = RETAIL_TOOLS

    # -- look-ups (raise ValueError with tau2's texts) ---------------------------------------
    def _get_order(self, order_id: Any) -> dict[str, Any]:
        if not self.db.contains("orders", order_id):
            raise ValueError("Order not found")
        return self.db.get("orders", order_id)

    def _get_user(self, user_id: Any) -> dict[str, Any]:
        if not self.db.contains("users", user_id):
            raise ValueError("User not found")
        return self.db.get("users", user_id)

    def _get_product(self, product_id: Any) -> dict[str, Any]:
        if not self.db.contains("products", product_id):
            raise ValueError("Product not found")
        return self.db.get("products", product_id)

    def _get_variant(self, product_id: Any, variant_id: Any) -> dict[str, Any]:
        variants = self._get_product(product_id)["variants"]
        if variant_id not in variants:
            raise ValueError("Variant not found")
        return variants[variant_id]

    def _get_payment_method(self, user_id: Any, payment_method_id: Any) -> dict[str, Any]:
        methods = self._get_user(user_id)["payment_methods"]
        if payment_method_id not in methods:
            raise ValueError("Payment method not found")
        return methods[payment_method_id]

    def _edit_payment_method(self, user_id: str, payment_method_id: str) -> dict[str, Any]:
        return self.db.edit("users", user_id)["payment_methods"][payment_method_id]

    @staticmethod
    def _check_listed_items(order: dict[str, Any], item_ids: Any, missing: str) -> None:
        """Each id may be listed at most as often as the order holds it; ``missing`` formats the error."""
        in_order = [item["item_id"] for item in order["items"]]
        for item_id in item_ids:
            # QUIRK (no type validation): a bare string is iterated per character ("7 not found").
            if item_ids.count(item_id) > in_order.count(item_id):
                raise ValueError(missing.format(item_id))

    def _swap_variants(self, order: dict[str, Any], item_ids: Any, new_item_ids: Any,
                       refuse_same: bool) -> tuple[Any, dict[str, Any] | None]:
        """Check each (old item, new variant) pair; returns the summed price difference and the last variant."""
        diff_price = 0
        variant: dict[str, Any] | None = None
        for item_id, new_item_id in zip(item_ids, new_item_ids):
            if refuse_same and item_id == new_item_id:
                raise ValueError("The new item id should be different from the old item id")
            item = self._find_item(order["items"], item_id)
            variant = self._get_variant(item["product_id"], new_item_id)
            if not variant["available"]:
                raise ValueError(f"New item {new_item_id} not found or available")
            diff_price += variant["price"] - item["price"]
        return diff_price, variant

    @staticmethod
    def _find_item(items: list[dict[str, Any]], item_id: Any) -> dict[str, Any]:
        for item in items:
            if item["item_id"] == item_id:
                return item
        raise ValueError(f"Item {item_id} not found")

    # -- tools, in tau2's order ---------------------------------------------------------------
    @tool("GENERIC")
    def calculate(self, expression: str) -> str:
        """Evaluate ``+ - * / ( ) .`` arithmetic; returns ``str(round(float(value), 2))`` (see `calculate_expression`)."""
        return calculate_expression(expression)

    @tool("WRITE")
    def cancel_pending_order(self, order_id: str, reason: str) -> dict[str, Any]:
        """Cancel a pending order: refund every payment (gift cards at once, rounded), status 'cancelled'."""
        order = self._get_order(order_id)
        # QUIRK (status checks differ): cancellation needs exactly "pending".
        if order["status"] != "pending":
            raise ValueError("Non-pending order cannot be cancelled")
        if reason not in {"no longer needed", "ordered by mistake"}:
            raise ValueError("Invalid reason")
        refunds = []
        for payment in order["payment_history"]:
            pid = payment["payment_method_id"]
            refunds.append(_payment("refund", payment["amount"], pid))
            user = self._get_user(order["user_id"])
            method = self._get_payment_method(user["user_id"], pid)
            if method["source"] == "gift_card":
                method = self._edit_payment_method(user["user_id"], pid)
                method["balance"] = round(method["balance"] + payment["amount"], 2)
        order = self.db.edit("orders", order_id)
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        order["payment_history"].extend(refunds)
        return order

    @tool("WRITE")
    def exchange_delivered_order_items(
        self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
    ) -> dict[str, Any]:
        """Request an exchange of delivered items for available variants of the same products."""
        order = self._get_order(order_id)
        if order["status"] != "delivered":
            raise ValueError("Non-delivered order cannot be exchanged")
        self._check_listed_items(order, item_ids, "Number of {} not found.")
        if len(item_ids) != len(new_item_ids):
            raise ValueError("The number of items to be exchanged should match.")
        # QUIRK (no same-item check here, unlike modify_pending_order_items).
        diff_price, _ = self._swap_variants(order, item_ids, new_item_ids, refuse_same=False)
        diff_price = round(diff_price, 2)
        method = self._get_payment_method(order["user_id"], payment_method_id)
        if method["source"] == "gift_card" and method["balance"] < diff_price:
            raise ValueError("Insufficient gift card balance to pay for the price difference")
        order = self.db.edit("orders", order_id)
        order["status"] = "exchange requested"
        order["exchange_items"] = sorted(item_ids)
        order["exchange_new_items"] = sorted(new_item_ids)
        order["exchange_payment_method_id"] = payment_method_id
        order["exchange_price_difference"] = diff_price
        return order

    @tool("READ")
    def find_user_id_by_name_zip(self, first_name: str, last_name: str, zip: str) -> str:
        """First user whose names match case-insensitively and whose zip matches exactly."""
        for user_id, user in self.db.items("users"):
            if (
                user["name"]["first_name"].lower() == first_name.lower()
                and user["name"]["last_name"].lower() == last_name.lower()
                and user["address"]["zip"] == zip
            ):
                return user_id
        raise ValueError("User not found")

    @tool("READ")
    def find_user_id_by_email(self, email: str) -> str:
        """First user whose email matches case-insensitively."""
        # QUIRK (no type validation): an int email fails with "'int' object has no attribute 'lower'".
        for user_id, user in self.db.items("users"):
            if user["email"].lower() == email.lower():
                return user_id
        raise ValueError("User not found")

    @tool("READ")
    def get_order_details(self, order_id: str) -> dict[str, Any]:
        """The order record."""
        return self._get_order(order_id)

    @tool("READ")
    def get_product_details(self, product_id: str) -> dict[str, Any]:
        """The product record with all its variants."""
        return self._get_product(product_id)

    @tool("READ")
    def get_user_details(self, user_id: str) -> dict[str, Any]:
        """The user record."""
        return self._get_user(user_id)

    @tool("READ")
    def list_all_product_types(self) -> str:
        """JSON object product name -> product id, keys sorted."""
        return json.dumps({p["name"]: p["product_id"] for p in self.db.values("products")}, sort_keys=True)

    @tool("WRITE")
    def modify_pending_order_address(
        self, order_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str
    ) -> dict[str, Any]:
        """Replace the shipping address of a pending order."""
        order = self._get_order(order_id)
        # QUIRK (status checks differ): any status containing "pending" is accepted here.
        if "pending" not in order["status"]:
            raise ValueError("Non-pending order cannot be modified")
        address = _address(address1, address2, city, state, country, zip)
        order = self.db.edit("orders", order_id)
        order["address"] = address
        return order

    @tool("WRITE")
    def modify_pending_order_items(
        self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
    ) -> dict[str, Any]:
        """Swap items of a pending order for other variants; pay or refund the difference."""
        order = self._get_order(order_id)
        # QUIRK (status checks differ): item modification needs exactly "pending".
        if order["status"] != "pending":
            raise ValueError("Non-pending order cannot be modified")
        self._check_listed_items(order, item_ids, "{} not found")
        if len(item_ids) != len(new_item_ids):
            raise ValueError("The number of items to be exchanged should match")
        diff_price, variant = self._swap_variants(order, item_ids, new_item_ids, refuse_same=True)
        method = self._get_payment_method(order["user_id"], payment_method_id)
        if method["source"] == "gift_card" and method["balance"] < diff_price:
            raise ValueError("Insufficient gift card balance to pay for the new item")
        order = self.db.edit("orders", order_id)
        # QUIRK (unrounded amounts): the payment / refund keeps the raw float difference.
        order["payment_history"].append(
            _payment("payment" if diff_price > 0 else "refund", abs(diff_price), payment_method_id)
        )
        if method["source"] == "gift_card":
            method = self._edit_payment_method(order["user_id"], payment_method_id)
            method["balance"] = round(method["balance"] - diff_price, 2)
        for item_id, new_item_id in zip(item_ids, new_item_ids):
            item = self._find_item(order["items"], item_id)
            item["item_id"] = new_item_id
            # QUIRK (one variant's price for all): v0.2.0 uses the variant left over from the
            # check loop (`_swap_variants`), i.e. the LAST new variant, for every modified item.
            item["price"] = variant["price"]  # type: ignore[index]
            item["options"] = copy_json(variant["options"])  # type: ignore[index]
        order["status"] = "pending (item modified)"
        return order

    @tool("WRITE")
    def modify_pending_order_payment(self, order_id: str, payment_method_id: str) -> dict[str, Any]:
        """Move the single payment of a pending order to another payment method."""
        order = self._get_order(order_id)
        # QUIRK (status checks differ): any status containing "pending" is accepted here.
        if "pending" not in order["status"]:
            raise ValueError("Non-pending order cannot be modified")
        method = self._get_payment_method(order["user_id"], payment_method_id)
        history = order["payment_history"]
        if len(history) != 1 or history[0]["transaction_type"] != "payment":
            raise ValueError("There should be exactly one payment for a pending order")
        old_pid = history[0]["payment_method_id"]
        if old_pid == payment_method_id:
            raise ValueError("The new payment method should be different from the current one")
        amount = history[0]["amount"]
        if method["source"] == "gift_card" and method["balance"] < amount:
            raise ValueError("Insufficient gift card balance to pay for the order")
        order = self.db.edit("orders", order_id)
        order["payment_history"].extend(
            [_payment("payment", amount, payment_method_id), _payment("refund", amount, old_pid)]
        )
        if method["source"] == "gift_card":
            method = self._edit_payment_method(order["user_id"], payment_method_id)
            method["balance"] = round(method["balance"] - amount, 2)
        old_method = self._get_payment_method(order["user_id"], old_pid)
        if old_method["source"] == "gift_card":
            old_method = self._edit_payment_method(order["user_id"], old_pid)
            old_method["balance"] = round(old_method["balance"] + amount, 2)
        return order

    @tool("WRITE")
    def modify_user_address(
        self, user_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str
    ) -> dict[str, Any]:
        """Replace a user's default address."""
        self._get_user(user_id)
        address = _address(address1, address2, city, state, country, zip)
        user = self.db.edit("users", user_id)
        user["address"] = address
        return user

    @tool("WRITE")
    def return_delivered_order_items(self, order_id: str, item_ids: list[str], payment_method_id: str) -> dict[str, Any]:
        """Request a return of delivered items, refunded to the original method or a gift card."""
        order = self._get_order(order_id)
        if order["status"] != "delivered":
            raise ValueError("Non-delivered order cannot be returned")
        user = self._get_user(order["user_id"])
        method = self._get_payment_method(user["user_id"], payment_method_id)
        if method["source"] != "gift_card" and payment_method_id != order["payment_history"][0]["payment_method_id"]:
            raise ValueError("Payment method should be the original payment method")
        self._check_listed_items(order, item_ids, "Some item not found")
        # QUIRK (empty return accepted): an empty item_ids list still sets "return requested".
        order = self.db.edit("orders", order_id)
        order["status"] = "return requested"
        order["return_items"] = sorted(item_ids)
        order["return_payment_method_id"] = payment_method_id
        return order

    @tool("GENERIC")
    def transfer_to_human_agents(self, summary: str) -> str:
        """Hand the conversation to a human; the summary is not checked."""
        return "Transfer successful"


class RetailToolsV1(RetailTools):
    """tau2-bench v1.0.1's retail toolkit: v0.2.0's 15 tools plus the READ tool ``get_item_details``
    (listed after ``get_product_details``); every other tool is unchanged."""

    SCHEMAS = RETAIL_TOOLS_V1

    @tool("READ")
    def get_item_details(self, item_id: str) -> dict[str, Any]:
        """The variant record with this item id, searched in every product's variants in database
        order (also unavailable variants); ``Item not found`` otherwise (a product id, an int id)."""
        for product in self.db.values("products"):
            if item_id in product["variants"]:
                return product["variants"][item_id]
        raise ValueError("Item not found")

    # Python's argument errors name the method's qualified name: tau2's class is RetailTools.
    get_item_details.__qualname__ = "RetailTools.get_item_details"
