"""The tau2 ``telecom`` domain, agent side: data model and the 13 agent tools (tau2-bench v0.2.0).

Telecom is tau2's dual-control domain: the agent works on the carrier's database (this module)
while the user works on their own phone (`orchestra_gym.domains.tau2.telecom_user`). The
environment that joins both (`orchestra_gym.domains.tau2.telecom_env.TelecomEnvironment`) keeps
them in step with tau2's ``sync_tools``.

Database (``db.toml``): five *lists* of records (not ``{id: record}`` tables as in retail):
``plans``, ``customers``, ``lines``, ``bills``, ``devices``. Records are normalised at load time to
the field order and defaults of tau2's pydantic models; dates are kept as the strings tau2's hash
and tool output give them (``"2025-02-25"``, datetimes ``"2025-01-20 14:30:00"``). Each episode is a
`CowDB` view: the first write to a list copies that list (the whole database is 10 KB).

Behaviour matched to tau2-bench v0.2.0 (checked against ``tau2_reference/telecom``), including:

1. QUIRK "today" is fixed at 2025-02-25 (suspension dates, line items, the data cycle end).
2. QUIRK dicts built by a tool render bare numbers as strings (``get_data_usage``:
   ``"data_used_gb": "8.7"``; ``refuel_data``: ``"charge": "4.0"``), numbers inside records stay
   numbers; ``refuel_data``'s message echoes the amount as given (``2 GB`` for ``2``).
3. QUIRK no status checks: ``refuel_data`` and ``enable_roaming`` work on suspended lines and
   ``send_payment_request`` accepts a ``Paid`` bill (only another ``Awaiting Payment`` bill blocks).
4. QUIRK ``get_bills_for_customer`` passes ``limit`` to a slice (``-1`` drops the oldest bill,
   ``"2"`` and ``2.0`` fail with Python's slice error); ``set_data_usage`` stores the value as given.
5. A refuel for a customer without a ``Draft`` bill creates one. tau2 names it ``B`` + 8 random hex
   digits (``uuid4``); here the 8 hex digits come from the customer id and the bill count, so the
   id has the same form and episodes stay reproducible (no gold task reaches this path).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Any

from orchestra_gym.domains.tau2.db import ANY, FLOAT, Schema, copy_json, list_of, model
from orchestra_gym.domains.tau2.telecom_schemas import TELECOM_TOOLS
from orchestra_gym.domains.tau2.toolkit import Tau2Toolkit, tool

__all__ = ["TelecomTools", "TELECOM_TABLES", "TODAY", "DateSchema"]

#: tau2 v0.2.0 telecom ``get_today()``.
TODAY = dt.date(2025, 2, 25)


class DateSchema(Schema):
    """A date or datetime field, stored as ``str(value)`` (how tau2's hash and tool output show it)."""

    def normalise(self, value: Any) -> Any:
        if value is None or isinstance(value, dt.date):
            return None if value is None else str(value)
        if self.kind == "datetime":
            return str(dt.datetime.fromisoformat(value))
        return str(dt.date.fromisoformat(value))


DATE = DateSchema("date")
DATETIME = DateSchema("datetime")

_LINE_ITEM = model(("description", ANY), ("amount", FLOAT), ("date", DATE), ("item_type", ANY))

#: tau2 telecom data model (``TelecomDB``): field order, defaults, floats and dates per list.
TELECOM_TABLES: dict[str, Schema] = {
    "plans": model(("plan_id", ANY), ("name", ANY), ("data_limit_gb", FLOAT), ("price_per_month", FLOAT),
                   ("data_refueling_price_per_gb", FLOAT)),
    "customers": model(
        ("customer_id", ANY), ("full_name", ANY), ("date_of_birth", ANY), ("email", ANY), ("phone_number", ANY),
        ("address", model(("street", ANY), ("city", ANY), ("state", ANY), ("zip_code", ANY))),
        ("account_status", ANY, "Pending Verification"),
        ("payment_methods", list_of(model(("method_type", ANY), ("account_number_last_4", ANY),
                                          ("expiration_date", ANY))), []),
        ("line_ids", list_of(ANY), []), ("bill_ids", list_of(ANY), []),
        # tau2's default is a date (2025-01-01), kept unvalidated, so it prints without a time
        ("created_at", DATETIME, "2025-01-01"), ("last_extension_date", DATE, None),
        ("goodwill_credit_used_this_year", FLOAT, 0.0),
    ),
    "lines": model(
        ("line_id", ANY), ("phone_number", ANY), ("status", ANY, "Pending Activation"), ("plan_id", ANY),
        ("device_id", ANY, None), ("data_used_gb", FLOAT, 0.0), ("data_refueling_gb", FLOAT, 0.0),
        ("roaming_enabled", ANY, False), ("contract_end_date", DATE, None), ("last_plan_change_date", DATE, None),
        ("last_sim_replacement_date", DATE, None), ("suspension_start_date", DATE, None),
    ),
    "bills": model(
        ("bill_id", ANY), ("customer_id", ANY), ("period_start", DATE), ("period_end", DATE), ("issue_date", DATE),
        ("total_due", FLOAT), ("due_date", DATE), ("line_items", list_of(_LINE_ITEM), []), ("status", ANY, "Draft"),
    ),
    "devices": model(
        ("device_id", ANY), ("device_type", ANY), ("model", ANY), ("imei", ANY, None), ("is_esim_capable", ANY),
        ("activated", ANY, False), ("activation_date", DATETIME, None), ("last_esim_transfer_date", DATETIME, None),
    ),
}


def _first_of_next_month(day: dt.date) -> dt.date:
    return (day.replace(day=1) + dt.timedelta(days=32)).replace(day=1)


def _as_float(x: Any) -> Any:
    """What a pydantic ``float`` field stores for a validated input (ints become floats)."""
    return float(x) if type(x) is int else x


def _shown(x: Any) -> Any:
    """tau2's ``to_json_str`` for a bare value inside a tool's own dict: numbers and bools as ``str``."""
    return str(x) if isinstance(x, (bool, int, float)) else x


class TelecomTools(Tau2Toolkit):
    """The agent's tools in tau2's ``telecom`` domain (class name as in tau2, used in argument-error texts).

    The database is a `CowDB` whose top-level values are lists; `rows` reads a list, `own` returns
    the episode's private copy of it for writing.
    """

    SCHEMAS = TELECOM_TOOLS

    # -- storage --------------------------------------------------------------------------------
    def rows(self, table: str) -> list[dict[str, Any]]:
        """The current records of a list (read-only)."""
        own = self.db.scalars.get(table)
        return own if own is not None else self.db.snapshot.tables[table]

    def own(self, table: str) -> list[dict[str, Any]]:
        """The episode's own, writable copy of a list (copied on the first write)."""
        if table not in self.db.scalars:
            self.db.scalars[table] = copy_json(self.db.snapshot.tables[table])
        return self.db.scalars[table]

    def _find(self, table: str, key: str, value: Any, error: str, write: bool = False) -> dict[str, Any]:
        for rec in self.own(table) if write else self.rows(table):
            if rec[key] == value:
                return rec
        raise ValueError(error)

    def _customer(self, customer_id: Any, write: bool = False) -> dict[str, Any]:
        return self._find("customers", "customer_id", customer_id, f"Customer with ID {customer_id} not found", write)

    def _line(self, line_id: Any, write: bool = False) -> dict[str, Any]:
        return self._find("lines", "line_id", line_id, f"Line with ID {line_id} not found", write)

    def _plan(self, plan_id: Any) -> dict[str, Any]:
        return self._find("plans", "plan_id", plan_id, f"Plan with ID {plan_id} not found")

    def _device(self, device_id: Any) -> dict[str, Any]:
        return self._find("devices", "device_id", device_id, f"Device with ID {device_id} not found")

    def _bill(self, bill_id: Any, write: bool = False) -> dict[str, Any]:
        return self._find("bills", "bill_id", bill_id, f"Bill with ID {bill_id} not found", write)

    def _target_line(self, customer_id: Any, line_id: Any, write: bool = False) -> dict[str, Any]:
        """The customer's line (tau2 ``_get_target_line``): customer first, then ownership, then the line."""
        customer = self._customer(customer_id)
        if line_id not in customer["line_ids"]:
            raise ValueError(f"Line {line_id} not found for customer {customer_id}")
        return self._line(line_id, write)

    def line_by_phone(self, phone_number: Any) -> dict[str, Any]:
        """The line with this phone number (tau2 ``_get_line_by_phone``); ValueError if none."""
        return self._find("lines", "phone_number", phone_number, f"Line with phone number {phone_number} not found")

    def bills_awaiting_payment(self, customer: dict[str, Any]) -> list[dict[str, Any]]:
        """The customer's bills in ``Awaiting Payment``, in ``bill_ids`` order."""
        return [b for b in (self._bill(i) for i in customer["bill_ids"]) if b["status"] == "Awaiting Payment"]

    def set_bill_paid(self, bill_id: str) -> None:
        """Mark a bill ``Paid`` (what tau2's sync does once the user paid the request)."""
        self._bill(bill_id, write=True)["status"] = "Paid"

    # -- customer look-ups ----------------------------------------------------------------------
    @tool("READ")
    def get_customer_by_phone(self, phone_number: str) -> dict[str, Any]:
        """The customer whose contact number or one of whose lines has this number (exact match)."""
        for customer in self.rows("customers"):
            if customer["phone_number"] == phone_number:
                return customer
            for line_id in customer["line_ids"]:
                if self._line(line_id)["phone_number"] == phone_number:
                    return customer
        raise ValueError(f"Customer with phone number {phone_number} not found")

    @tool("READ")
    def get_customer_by_id(self, customer_id: str) -> dict[str, Any]:
        """The customer record with this id."""
        return self._customer(customer_id)

    @tool("READ")
    def get_customer_by_name(self, full_name: str, dob: str) -> list[dict[str, Any]]:
        """Customers with this name (case-insensitive) and date of birth (exact string)."""
        return [c for c in self.rows("customers")
                if c["full_name"].lower() == full_name.lower() and c["date_of_birth"] == dob]

    @tool("READ")
    def get_details_by_id(self, id: str) -> dict[str, Any]:  # noqa: A002 - tau2's argument name
        """A line, device, bill, customer or plan, chosen by the id's first letter (L, D, B, C, P)."""
        for prefix, lookup in (("L", self._line), ("D", self._device), ("B", self._bill),
                               ("C", self._customer), ("P", self._plan)):
            if id.startswith(prefix):
                return lookup(id)
        raise ValueError(f"Unknown ID format or type: {id}")

    # -- line status ----------------------------------------------------------------------------
    @tool("WRITE")
    def suspend_line(self, customer_id: str, line_id: str, reason: str) -> dict[str, Any]:
        """Suspend an active line from today; the reason is not stored."""
        line = self._target_line(customer_id, line_id)
        if line["status"] != "Active":
            raise ValueError("Line must be active to suspend")
        line = self._line(line_id, write=True)
        line["status"] = "Suspended"
        line["suspension_start_date"] = str(TODAY)
        return {"message": "Line suspended successfully. $5/month holding fee will apply.", "line": line}

    @tool("WRITE")
    def resume_line(self, customer_id: str, line_id: str) -> dict[str, Any]:
        """Reactivate a suspended (or pending) line."""
        line = self._target_line(customer_id, line_id)
        if line["status"] not in ("Suspended", "Pending Activation"):
            raise ValueError("Line must be suspended to resume")
        line = self._line(line_id, write=True)
        line["status"] = "Active"
        line["suspension_start_date"] = None
        return {"message": "Line resumed successfully", "line": line}

    # -- bills ----------------------------------------------------------------------------------
    @tool("READ")
    def get_bills_for_customer(self, customer_id: str, limit: int = 12) -> list[dict[str, Any]]:
        """The customer's bills, newest issue date first, cut with ``[:limit]`` (QUIRK 4)."""
        customer = self._customer(customer_id)
        bills = sorted((self._bill(i) for i in customer["bill_ids"]), key=lambda b: b["issue_date"], reverse=True)
        return bills[:limit]

    @tool("WRITE")
    def send_payment_request(self, customer_id: str, bill_id: str) -> str:
        """Put a bill in ``Awaiting Payment`` (the user then sees a payment request); QUIRK 3."""
        customer = self._customer(customer_id)
        if self.bills_awaiting_payment(customer):
            raise ValueError("A bill is already awaiting payment for this customer")
        if bill_id not in customer["bill_ids"]:
            raise ValueError(f"Bill {bill_id} not found for customer {customer_id}")
        bill = self._bill(bill_id, write=True)
        bill["status"] = "Awaiting Payment"
        return f"Payment request sent to the customer for bill {bill['bill_id']}"

    def _charge(self, customer_id: str, amount: Any, description: str) -> None:
        """Add a line item to the customer's Draft bill, creating the bill when there is none (QUIRK 5)."""
        customer = self._customer(customer_id)
        draft = next((b for b in (self._bill(i) for i in customer["bill_ids"]) if b["status"] == "Draft"), None)
        if draft is None:
            start = _first_of_next_month(TODAY)
            digest = hashlib.sha256(f"{customer_id}:{len(self.rows('bills'))}".encode()).hexdigest()
            draft = {
                "bill_id": f"B{digest[:8]}", "customer_id": customer_id, "period_start": str(start),
                "period_end": str(_first_of_next_month(start) - dt.timedelta(days=1)), "issue_date": str(start),
                "total_due": 0.0, "due_date": str(start + dt.timedelta(days=14)), "line_items": [], "status": "Draft",
            }
            self.own("bills").append(draft)
            self._customer(customer_id, write=True)["bill_ids"].append(draft["bill_id"])
        else:
            draft = self._bill(draft["bill_id"], write=True)
        draft["line_items"].append({"description": description, "amount": _as_float(amount), "date": str(TODAY),
                                    "item_type": "Credit" if amount < 0 else "Charge"})
        draft["total_due"] += amount

    # -- data -----------------------------------------------------------------------------------
    @tool("READ")
    def get_data_usage(self, customer_id: str, line_id: str) -> dict[str, Any]:
        """Data used, plan limit and refuelled data this cycle, and the cycle's last day (QUIRK 2)."""
        line = self._target_line(customer_id, line_id)
        plan = self._plan(line["plan_id"])
        return {
            "line_id": _shown(line_id), "data_used_gb": _shown(line["data_used_gb"]),
            "data_limit_gb": _shown(plan["data_limit_gb"]), "data_refueling_gb": _shown(line["data_refueling_gb"]),
            "cycle_end_date": str(_first_of_next_month(TODAY) - dt.timedelta(days=1)),
        }

    @tool("WRITE")
    def enable_roaming(self, customer_id: str, line_id: str) -> str:
        """Allow international roaming on a line (QUIRK 3: also on a suspended line)."""
        line = self._target_line(customer_id, line_id)
        if line["roaming_enabled"]:
            return "Roaming was already enabled"
        self._line(line_id, write=True)["roaming_enabled"] = True
        return "Roaming enabled successfully"

    @tool("WRITE")
    def disable_roaming(self, customer_id: str, line_id: str) -> str:
        """Stop international roaming on a line."""
        line = self._target_line(customer_id, line_id)
        if not line["roaming_enabled"]:
            return "Roaming was already disabled"
        self._line(line_id, write=True)["roaming_enabled"] = False
        return "Roaming disabled successfully"

    @tool("GENERIC")
    def transfer_to_human_agents(self, summary: str) -> str:
        """Hand the conversation to a human; the summary is not checked."""
        return "Transfer successful"

    @tool("WRITE")
    def refuel_data(self, customer_id: str, line_id: str, gb_amount: float) -> dict[str, Any]:
        """Add data to a line and charge it to the Draft bill at the plan's refuelling price (QUIRKS 2, 3, 5)."""
        line = self._target_line(customer_id, line_id)
        if gb_amount <= 0:
            raise ValueError("Refuel amount must be positive")
        price = self._plan(line["plan_id"])["data_refueling_price_per_gb"]
        charge = gb_amount * price
        line = self._line(line_id, write=True)
        line["data_refueling_gb"] += gb_amount
        self._charge(customer_id, charge, f"Data refueling: {gb_amount} GB at ${price}/GB")
        return {
            "message": f"Successfully added {gb_amount} GB of data for line {line_id} for ${charge:.2f}",
            "new_data_refueling_gb": _shown(line["data_refueling_gb"]), "charge": _shown(charge),
        }

    # -- functions for task set-up (not tools) --------------------------------------------------
    def get_available_plan_ids(self) -> list[str]:
        """Every plan id, in database order."""
        return [p["plan_id"] for p in self.rows("plans")]

    def set_data_usage(self, customer_id: str, line_id: str, data_used_gb: float) -> str:
        """Set a line's data used this cycle (stored as given: QUIRK 4)."""
        self._target_line(customer_id, line_id)
        self._line(line_id, write=True)["data_used_gb"] = data_used_gb
        return f"Data usage set to {data_used_gb} GB for line {line_id}"

    def suspend_line_for_overdue_bill(self, customer_id: str, line_id: str, new_bill_id: str,
                                      contract_ended: bool) -> str:
        """Create last month's overdue bill (one month of the plan) and suspend the line for it."""
        line = self._line(line_id)
        if line["status"] != "Active":
            raise ValueError("Line must be active to suspend for unpaid bill")
        amount = self._plan(line["plan_id"])["price_per_month"]
        if amount <= 0:
            raise ValueError("Amount must be positive for overdue bill")
        customer = self._customer(customer_id)
        if any(self._bill(i)["status"] == "Overdue" for i in customer["bill_ids"]):
            raise ValueError("Customer already has an overdue bill")
        last_day = TODAY.replace(day=1) - dt.timedelta(days=1)
        first_day = last_day.replace(day=1)
        self.own("bills").append({
            "bill_id": new_bill_id, "customer_id": customer_id, "period_start": str(first_day),
            "period_end": str(last_day), "issue_date": str(first_day), "total_due": 0.0 + amount,
            "due_date": str(first_day + dt.timedelta(days=14)),
            "line_items": [{"description": f"Charge for line {line['line_id']}", "amount": _as_float(amount),
                            "date": str(TODAY), "item_type": "Charge" if amount > 0 else "Credit"}],
            "status": "Overdue",
        })
        self._customer(customer_id, write=True)["bill_ids"].append(new_bill_id)
        line = self._line(line_id, write=True)
        line["status"] = "Suspended"
        line["suspension_start_date"] = str(TODAY)
        if contract_ended:
            line["contract_end_date"] = str(last_day)
        return f"Line {line_id} suspended for unpaid bill {new_bill_id}. Contract ended: {contract_ended}"

    # -- env-assertion helpers (not tools) ------------------------------------------------------
    def assert_data_refueling_amount(self, customer_id: str, line_id: str, expected_amount: float) -> bool:
        """True when the line's refuelled data equals ``expected_amount`` (within 1e-6 GB)."""
        return abs(self._target_line(customer_id, line_id)["data_refueling_gb"] - expected_amount) < 1e-6

    def assert_line_status(self, customer_id: str, line_id: str, expected_status: str) -> bool:
        """True when the line's status equals ``expected_status`` (e.g. ``"Active"``)."""
        return self._target_line(customer_id, line_id)["status"] == expected_status

    def assert_overdue_bill_exists(self, customer_id: str, overdue_bill_id: str) -> bool:
        """True when the customer has this bill and it is ``Overdue``; ValueError otherwise."""
        customer = self._customer(customer_id)
        if overdue_bill_id not in customer["bill_ids"]:
            raise ValueError(f"Overdue bill {overdue_bill_id} not found")
        if self._bill(overdue_bill_id)["status"] != "Overdue":
            raise ValueError(f"Overdue bill {overdue_bill_id} is not overdue")
        return True

    def assert_no_overdue_bill(self, overdue_bill_id: str) -> bool:
        """True when the bill does not exist or is ``Paid``."""
        try:
            return self._bill(overdue_bill_id)["status"] == "Paid"
        except ValueError:
            return True
