"""The booking archetype: customers book items, paying with payment methods.

Most ToolScale domains share one shape: a customer (passenger, patient, student, ...) holds
bookings (tickets, appointments, enrollments, ...) of catalogue items (trains, doctors' sessions,
courses, ...) paid with a payment method. `BookingConfig` names the nouns and the domain's
catalogue fields and numbers; `build_domain` turns it into a `DomainSpec` with four related
tables, 11 domain tools (+ `calculate`, `transfer_to_human_agents`), the business rules and
eight task templates. A new domain is one `BookingConfig` (about 30 lines).

Tables (names from the config nouns, e.g. railway): ``passengers`` (key ``passenger_id``),
``trains`` (``train_id``), ``tickets`` (``ticket_id``; foreign keys to the passenger, the train
and the payment method), ``payment_methods`` (``payment_method_id``; foreign key to the
passenger). Money is USD with two decimals.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from orchestra_gym.domains.synthetic.core import (
    Database,
    DomainSpec,
    Draft,
    Param,
    Rule,
    TableSpec,
    Tool,
    TrackedDB,
    money,
    pick,
    safe_calculate,
)

__all__ = ["Field", "BookingConfig", "build_domain", "choice", "TEMPLATE_KINDS", "FIRST_NAMES", "LAST_NAMES"]

TEMPLATE_KINDS = (
    "lookup", "compute", "conditional_write", "search_and_book", "several_writes", "change_item", "transfer",
)
"""Task categories (`Task.category`) of the booking templates."""

FIRST_NAMES = (
    "Ana", "Bruno", "Chen", "Dara", "Elif", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kavya", "Luca",
    "Maya", "Nikos", "Olga", "Priya", "Quinn", "Rosa", "Sami", "Tomas", "Uma", "Viktor", "Wen", "Yara",
)
LAST_NAMES = (
    "Silva", "Novak", "Okafor", "Tanaka", "Moreau", "Khan", "Larsen", "Rossi", "Garcia", "Meyer",
    "Nguyen", "Kowalski", "Haddad", "Ivanova", "Patel", "Berg", "Costa", "Yilmaz", "Murphy", "Sato",
)
PENDING, CONFIRMED, CANCELLED = "pending", "confirmed", "cancelled"
OPEN_STATUSES = (PENDING, CONFIRMED)


@dataclass(frozen=True)
class Field:
    """A generated field of a catalogue item or customer.

    Attributes:
        name: field name (snake_case).
        type: JSON type of the value (``"string"`` or ``"integer"``).
        gen: ``rng -> value`` (Python str / int).
        description: what the value is (tool schemas, policy).
    """

    name: str
    type: str
    gen: Callable[[np.random.Generator], Any]
    description: str


def choice(*values: Any) -> Callable[[np.random.Generator], Any]:
    """A field generator that picks one of ``values`` uniformly."""
    return lambda rng: pick(rng, values)


def plural(noun: str) -> str:
    """English plural of a snake_case noun (``class -> classes``, ``city -> cities``)."""
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


@dataclass(frozen=True)
class BookingConfig:
    """One booking-archetype domain.

    Attributes:
        name: domain name (``"railway"``).
        title: the agent's job, for the policy heading (``"railway ticketing"``).
        customer / item / booking: snake_case nouns (``"passenger"``, ``"train"``, ``"ticket"``).
        unit: plural noun of a booking's quantity (``"seats"``).
        item_fields: catalogue fields besides name, price, available, status.
        search_fields: item fields the search tool filters on (all required, exact match); a
            booking can only be changed to an item with the same values of these.
        item_name: ``(rng, index) -> name`` of a catalogue item.
        profile: the customer's updatable field (``"phone"``, ``"home_station"``, ...).
        done_status: status of a booking that has been used up (``"used"``, ``"delivered"``).
        price_range: unit price range in USD.
        max_quantity: most units one booking may hold; more must go to a human agent.
        cancel_fee: fraction of the total kept when a 'basic' tier customer cancels.
        payment_kinds: kinds of payment methods.
    """

    name: str
    title: str
    customer: str
    item: str
    booking: str
    unit: str
    item_fields: tuple[Field, ...]
    search_fields: tuple[str, ...]
    item_name: Callable[[np.random.Generator, int], str]
    profile: Field
    done_status: str = "completed"
    price_range: tuple[float, float] = (20.0, 400.0)
    max_quantity: int = 6
    cancel_fee: float = 0.1
    payment_kinds: tuple[str, ...] = ("credit_card", "gift_card", "debit_card")


class _Names:
    """Table, key and tool names derived from a config's nouns."""

    def __init__(self, cfg: BookingConfig):
        c, i, b = cfg.customer, cfg.item, cfg.booking
        self.C, self.I, self.B, self.P = plural(c), plural(i), plural(b), "payment_methods"
        self.ck, self.ik, self.bk, self.pk = f"{c}_id", f"{i}_id", f"{b}_id", "payment_method_id"
        self.cids, self.bids = "payment_method_ids", f"{b}_ids"
        self.find = f"find_{c}_id_by_email"
        self.get_c, self.get_i, self.get_b = f"get_{c}_details", f"get_{i}_details", f"get_{b}_details"
        self.get_p = "get_payment_method_details"
        self.search = f"search_{plural(i)}"
        self.book, self.cancel = f"book_{i}", f"cancel_{b}"
        self.modify, self.change = f"modify_{b}_quantity", f"change_{b}_{i}"
        self.update = f"update_{c}_{cfg.profile.name}"
        prefixes = [self.prefix(x) for x in (c, i, b, "payment")]
        assert len(set(prefixes)) == 4, f"{cfg.name}: id prefixes collide: {prefixes}"

    @staticmethod
    def prefix(noun: str) -> str:
        return noun.replace("_", "")[:3].upper() + "-"


def _text(noun: str) -> str:
    return noun.replace("_", " ")


# ---------------------------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------------------------


def _tables(cfg: BookingConfig, n: _Names) -> tuple[TableSpec, ...]:
    item_fields = {"name": "string", "price": "number", "available": "integer", "status": "string"}
    item_fields.update({f.name: f.type for f in cfg.item_fields})
    return (
        TableSpec(
            n.C,
            n.ck,
            {n.ck: "string", "first_name": "string", "last_name": "string", "email": "string", "tier": "string",
             cfg.profile.name: cfg.profile.type, n.cids: "array", n.bids: "array"},
            {n.cids: n.P, n.bids: n.B},
        ),
        TableSpec(n.I, n.ik, {n.ik: "string", **item_fields}),
        TableSpec(
            n.B,
            n.bk,
            {n.bk: "string", n.ck: "string", n.ik: "string", "quantity": "integer", "status": "string",
             "total": "number", n.pk: "string", "date": "string"},
            {n.ck: n.C, n.ik: n.I, n.pk: n.P},
        ),
        TableSpec(n.P, n.pk, {n.pk: "string", n.ck: "string", "kind": "string", "balance": "number"}, {n.ck: n.C}),
    )


def _keys(rng: np.random.Generator, prefix: str, count: int) -> list[str]:
    nums = rng.choice(np.arange(1001, 10000), size=count, replace=False)
    return [f"{prefix}{int(x)}" for x in nums]


def _generate(cfg: BookingConfig, n: _Names, rng: np.random.Generator) -> Database:
    n_c, n_i, n_b = int(rng.integers(5, 9)), int(rng.integers(8, 13)), int(rng.integers(10, 17))
    customers: dict[str, dict[str, Any]] = {}
    payments: dict[str, dict[str, Any]] = {}
    pay_keys = iter(_keys(rng, n.prefix("payment"), 3 * n_c))
    used_names: set[tuple[str, str]] = set()
    for k in _keys(rng, n.prefix(cfg.customer), n_c):
        first, last = pick(rng, FIRST_NAMES), pick(rng, LAST_NAMES)
        while (first, last) in used_names:
            first, last = pick(rng, FIRST_NAMES), pick(rng, LAST_NAMES)
        used_names.add((first, last))
        n_kinds = int(rng.integers(1, min(3, len(cfg.payment_kinds)) + 1))
        pids = []
        for j in sorted(rng.choice(len(cfg.payment_kinds), n_kinds, replace=False)):
            pid = next(pay_keys)
            balance = float(rng.integers(50, 3000)) + 0.5 * int(rng.integers(2))
            payments[pid] = {n.pk: pid, n.ck: k, "kind": cfg.payment_kinds[int(j)], "balance": balance}
            pids.append(pid)
        customers[k] = {
            n.ck: k, "first_name": first, "last_name": last,
            "email": f"{first.lower()}.{last.lower()}{int(rng.integers(10, 99))}@example.com",
            "tier": pick(rng, ("basic", "basic", "premium")), cfg.profile.name: cfg.profile.gen(rng),
            n.cids: pids, n.bids: [],
        }
    items: dict[str, dict[str, Any]] = {}
    lo, hi = cfg.price_range
    for j, k in enumerate(_keys(rng, n.prefix(cfg.item), n_i)):
        rec = {n.ik: k, "name": cfg.item_name(rng, j), "price": round(float(rng.uniform(lo, hi)), 2),
               "available": int(rng.integers(0, 3 * cfg.max_quantity)),
               "status": "open" if rng.random() < 0.85 else "closed"}
        rec.update({f.name: f.gen(rng) for f in cfg.item_fields})
        items[k] = rec
    bookings: dict[str, dict[str, Any]] = {}
    statuses = (PENDING, CONFIRMED, cfg.done_status, CANCELLED)
    item_keys, cust_keys = list(items), list(customers)
    for k in sorted(_keys(rng, n.prefix(cfg.booking), n_b)):
        cid, iid = pick(rng, cust_keys), pick(rng, item_keys)
        q = int(rng.integers(1, min(4, cfg.max_quantity) + 1))
        bookings[k] = {
            n.bk: k, n.ck: cid, n.ik: iid, "quantity": q,
            "status": statuses[int(rng.choice(4, p=[0.3, 0.3, 0.25, 0.15]))],
            "total": round(items[iid]["price"] * q, 2), n.pk: pick(rng, customers[cid][n.cids]),
            "date": f"2026-{int(rng.integers(1, 13)):02d}-{int(rng.integers(1, 29)):02d}",
        }
        customers[cid][n.bids].append(k)
    return {n.C: customers, n.I: items, n.B: bookings, n.P: payments}


# ---------------------------------------------------------------------------------------------
# Tools and rules
# ---------------------------------------------------------------------------------------------


def refund_amount(cfg: BookingConfig, total: float, tier: str) -> float:
    """Refund (USD) of a cancelled booking: the total, minus ``cancel_fee`` of it for 'basic' tier."""
    return round(total if tier == "premium" else total * (1.0 - cfg.cancel_fee), 2)


def _tools(cfg: BookingConfig, n: _Names) -> tuple[Tool, ...]:
    B, I, unit, mx = _text(cfg.booking), _text(cfg.item), cfg.unit, cfg.max_quantity
    Bs, Is = _text(n.B), _text(n.I)
    search_desc = " and ".join(_text(f) for f in cfg.search_fields)
    fdesc = {f.name: f.description for f in cfg.item_fields}

    def get(table: str, key_field: str) -> Callable[[TrackedDB, dict[str, Any]], Any]:
        return lambda db, a: db.get(table, a[key_field])

    def booking_item(db: TrackedDB, a: dict[str, Any]) -> tuple[dict, dict]:
        b = db.get(n.B, a[n.bk])
        return b, db.get(n.I, b[n.ik])

    def payment_of(db: TrackedDB, b: dict) -> dict:
        return db.get(n.P, b[n.pk])

    # --- rule predicates (True = violated) ---
    def item_closed(db, a):
        return db.get(n.I, a[n.ik])["status"] != "open"

    def too_few(db, a):
        return a["quantity"] < 1

    def too_many(db, a):
        return a["quantity"] > mx

    def not_available(db, a):
        return db.get(n.I, a[n.ik])["available"] < a["quantity"]

    def foreign_payment(db, a):
        return db.get(n.P, a[n.pk])[n.ck] != db.get(n.C, a[n.ck])[n.ck]

    def book_unaffordable(db, a):
        return db.get(n.P, a[n.pk])["balance"] < round(db.get(n.I, a[n.ik])["price"] * a["quantity"], 2)

    def is_done(db, a):
        return db.get(n.B, a[n.bk])["status"] == cfg.done_status

    def is_cancelled(db, a):
        return db.get(n.B, a[n.bk])["status"] == CANCELLED

    def not_open(db, a):
        return db.get(n.B, a[n.bk])["status"] not in OPEN_STATUSES

    def same_quantity(db, a):
        return db.get(n.B, a[n.bk])["quantity"] == a["quantity"]

    def increase_unavailable(db, a):
        b, it = booking_item(db, a)
        return a["quantity"] - b["quantity"] > it["available"]

    def increase_unaffordable(db, a):
        b, it = booking_item(db, a)
        extra = round(it["price"] * a["quantity"] - b["total"], 2)
        return extra > 0 and payment_of(db, b)["balance"] < extra

    def not_pending(db, a):
        return db.get(n.B, a[n.bk])["status"] != PENDING

    def bad_new_item(db, a):
        b, it = booking_item(db, a)
        new = db.get(n.I, a[f"new_{n.ik}"])
        return (new[n.ik] == it[n.ik] or new["status"] != "open"
                or any(new[f] != it[f] for f in cfg.search_fields))

    def new_unavailable(db, a):
        b = db.get(n.B, a[n.bk])
        return db.get(n.I, a[f"new_{n.ik}"])["available"] < b["quantity"]

    def change_unaffordable(db, a):
        b = db.get(n.B, a[n.bk])
        extra = round(db.get(n.I, a[f"new_{n.ik}"])["price"] * b["quantity"] - b["total"], 2)
        return extra > 0 and payment_of(db, b)["balance"] < extra

    def same_profile(db, a):
        v = a[cfg.profile.name]
        return (isinstance(v, str) and not v.strip()) or db.get(n.C, a[n.ck])[cfg.profile.name] == v

    group_rule = Rule(
        f"A single {B} holds at most {mx} {unit}; a request for more than {mx} {unit} is a group request "
        f"that must be transferred to a human agent.", too_many, transfer=True)
    min_rule = Rule(f"A {B} holds at least 1 of its {unit}.", too_few)

    # --- implementations (they run after every rule passed) ---
    def find(db, a):
        return db.find_one(n.C, "email", a["email"].strip().lower())[n.ck]

    def search(db, a):
        return db.select(n.I, lambda r: all(r[f] == a[f] for f in cfg.search_fields))

    def book(db, a):
        c, it, p = db.get(n.C, a[n.ck]), db.get(n.I, a[n.ik]), db.get(n.P, a[n.pk])
        total = round(it["price"] * a["quantity"], 2)
        key = db.new_key(n.B, n.prefix(cfg.booking))
        rec = {n.bk: key, n.ck: c[n.ck], n.ik: it[n.ik], "quantity": a["quantity"], "status": CONFIRMED,
               "total": total, n.pk: p[n.pk], "date": "2026-06-01"}
        it["available"] -= a["quantity"]
        p["balance"] = round(p["balance"] - total, 2)
        c[n.bids].append(key)
        db.insert(n.B, rec)
        return {**rec, "charged": money(total)}

    def cancel(db, a):
        b, it = booking_item(db, a)
        refund = refund_amount(cfg, b["total"], db.get(n.C, b[n.ck])["tier"])
        p = payment_of(db, b)
        b["status"] = CANCELLED
        it["available"] += b["quantity"]
        p["balance"] = round(p["balance"] + refund, 2)
        return {**b, "refund": money(refund)}

    def modify(db, a):
        b, it = booking_item(db, a)
        p = payment_of(db, b)
        new_total = round(it["price"] * a["quantity"], 2)
        delta = round(new_total - b["total"], 2)
        it["available"] -= a["quantity"] - b["quantity"]
        p["balance"] = round(p["balance"] - delta, 2)
        b["quantity"], b["total"] = a["quantity"], new_total
        return {**b, ("charged" if delta > 0 else "refund"): money(abs(delta))}

    def change(db, a):
        b, old = booking_item(db, a)
        new = db.get(n.I, a[f"new_{n.ik}"])
        p = payment_of(db, b)
        new_total = round(new["price"] * b["quantity"], 2)
        delta = round(new_total - b["total"], 2)
        old["available"] += b["quantity"]
        new["available"] -= b["quantity"]
        p["balance"] = round(p["balance"] - delta, 2)
        b[n.ik], b["total"] = new[n.ik], new_total
        return {**b, ("charged" if delta > 0 else "refund"): money(abs(delta))}

    def update(db, a):
        c = db.get(n.C, a[n.ck])
        c[cfg.profile.name] = a[cfg.profile.name]
        return c

    cid = Param(n.ck, "string", f"The {_text(cfg.customer)} id, e.g. '{n.prefix(cfg.customer)}1234'.")
    iid = Param(n.ik, "string", f"The {I} id, e.g. '{n.prefix(cfg.item)}1234'.")
    bid = Param(n.bk, "string", f"The {B} id, e.g. '{n.prefix(cfg.booking)}1234'.")
    pid = Param(n.pk, "string", f"The payment method id, e.g. '{n.prefix('payment')}1234'.")
    qty = Param("quantity", "integer", f"Number of {unit}.")
    return (
        Tool(n.find, f"Find a {_text(cfg.customer)}'s id by their email address.", "read",
             (Param("email", "string", "The email address."),), find),
        Tool(n.get_c, f"Get a {_text(cfg.customer)}'s profile: name, email, tier, {cfg.profile.name}, "
             f"payment method ids and {B} ids.", "read", (cid,), get(n.C, n.ck)),
        Tool(n.get_i, f"Get a {I}'s details: name, price per unit (USD), {unit} available, status, "
             + ", ".join(f.name for f in cfg.item_fields) + ".", "read", (iid,), get(n.I, n.ik)),
        Tool(n.search, f"List every {I} with the given {search_desc} (exact match), open or closed.", "read",
             tuple(Param(f, "string", fdesc.get(f, f)) for f in cfg.search_fields), search),
        Tool(n.get_b, f"Get a {B}'s details: {_text(cfg.customer)}, {I}, quantity, status, total (USD), payment "
             "method, date.", "read", (bid,), get(n.B, n.bk)),
        Tool(n.get_p, "Get a payment method's details: owner, kind, balance (USD).", "read", (pid,),
             get(n.P, n.pk)),
        Tool(n.book, f"Book a {I} for a {_text(cfg.customer)}: creates a 'confirmed' {B} and charges price x "
             "quantity to the payment method.", "write", (cid, iid, qty, pid), book,
             (Rule(f"Only {Is} with status 'open' can be booked.", item_closed), min_rule, group_rule,
              Rule(f"The {I} must have at least the requested number of {unit} available.", not_available),
              Rule(f"The payment method must belong to the {_text(cfg.customer)} making the {B}.", foreign_payment),
              Rule("The payment method's balance must cover the total (price x quantity).", book_unaffordable))),
        Tool(n.cancel, f"Cancel a {B} and refund it to its payment method.", "write", (bid,), cancel,
             (Rule(f"A {B} that is already '{cfg.done_status}' cannot be cancelled or refunded by the agent; a "
                   f"user who wants a refund for a '{cfg.done_status}' {B} must be transferred to a human agent.",
                   is_done, transfer=True),
              Rule(f"A {B} that is already '{CANCELLED}' cannot be cancelled again.", is_cancelled))),
        Tool(n.modify, f"Change the number of {unit} of a {B}; the price difference is charged to or refunded "
             "to its payment method.", "write", (bid, qty), modify,
             (Rule(f"Only {Bs} with status 'pending' or 'confirmed' can be modified.", not_open),
              min_rule, group_rule,
              Rule("The new quantity must differ from the current one.", same_quantity),
              Rule(f"Extra {unit} must be available on the {I}.", increase_unavailable),
              Rule("The payment method's balance must cover any extra charge.", increase_unaffordable))),
        Tool(n.change, f"Move a {B} to another {I} with the same {search_desc}; the price difference is charged "
             "to or refunded to its payment method.", "write",
             (bid, Param(f"new_{n.ik}", "string", f"The id of the new {I}.")), change,
             (Rule(f"Only {Bs} with status 'pending' can be moved to another {I}.", not_pending),
              Rule(f"The new {I} must be a different {I} with status 'open' and the same {search_desc}.",
                   bad_new_item),
              Rule(f"The new {I} must have as many {unit} available as the {B} holds.", new_unavailable),
              Rule("The payment method's balance must cover any extra charge.", change_unaffordable))),
        Tool(n.update, f"Update a {_text(cfg.customer)}'s {_text(cfg.profile.name)}.", "write",
             (cid, Param(cfg.profile.name, cfg.profile.type, cfg.profile.description)), update,
             (Rule(f"The new {_text(cfg.profile.name)} must be non-empty and differ from the current one.",
                   same_profile),)),
    )


# ---------------------------------------------------------------------------------------------
# Task templates
# ---------------------------------------------------------------------------------------------


def _templates(cfg: BookingConfig, n: _Names) -> tuple[Callable[[np.random.Generator, Database], Draft | None], ...]:
    B, I, unit = _text(cfg.booking), _text(cfg.item), cfg.unit
    str_fields = [f.name for f in cfg.item_fields if f.type == "string"]

    def who(db: Database, cid: str, **extra: str) -> dict[str, str]:
        c = db[n.C][cid]
        return {"name": f"{c['first_name']} {c['last_name']}", "email": c["email"], **extra}

    unknown = f"You do not know your {_text(cfg.customer)} id."

    def customer_bookings(db: Database, statuses: tuple[str, ...]) -> list[tuple[str, str]]:
        return [(b[n.ck], k) for k, b in db[n.B].items() if b["status"] in statuses]

    def lookup(rng, db):
        cands = customer_bookings(db, (PENDING, CONFIRMED, cfg.done_status, CANCELLED))
        cid, bid = pick(rng, cands)
        b = db[n.B][bid]
        it = db[n.I][b[n.ik]]
        attr = pick(rng, str_fields)
        return Draft(
            "lookup",
            [(n.find, {"email": db[n.C][cid]["email"]}), (n.get_b, {n.bk: bid}), (n.get_i, {n.ik: it[n.ik]})],
            [str(it[attr]), money(b["total"])],
            f"You want to know the {_text(attr)} of the {I} on your {B} {bid}, and how much that {B} cost in total.",
            who(db, cid, **{n.bk: bid}), unknown)

    def total_active(rng, db):
        cid = pick(rng, sorted(db[n.C]))
        bids = db[n.C][cid][n.bids]
        active = [db[n.B][k]["total"] for k in bids if db[n.B][k]["status"] in OPEN_STATUSES]
        if len(active) < 2:
            return None
        expr = " + ".join(money(x) for x in active)
        return Draft(
            "compute",
            [(n.find, {"email": db[n.C][cid]["email"]}), (n.get_c, {n.ck: cid})]
            + [(n.get_b, {n.bk: k}) for k in bids] + [("calculate", {"expression": expr})],
            [money(round(safe_calculate(expr), 2))],
            f"You want to know the combined total (USD) of all your {n.B.replace('_', ' ')} that are still "
            f"'{PENDING}' or '{CONFIRMED}'.",
            who(db, cid), unknown + f" You do not remember your {B} ids.")

    def conditional_cancel(rng, db):
        cands = customer_bookings(db, OPEN_STATUSES)
        if not cands:
            return None
        cid, bid = pick(rng, cands)
        b = db[n.B][bid]
        threshold = round(b["total"] * float(rng.uniform(0.5, 1.5)), 0)
        if abs(threshold - b["total"]) < 1.0:
            return None
        golden = [(n.find, {"email": db[n.C][cid]["email"]}), (n.get_b, {n.bk: bid})]
        if b["total"] > threshold:
            golden.append((n.cancel, {n.bk: bid}))
            amount = refund_amount(cfg, b["total"], db[n.C][cid]["tier"])
        else:
            if b["quantity"] < 2:
                return None
            golden.append((n.modify, {n.bk: bid, "quantity": b["quantity"] - 1}))
            amount = abs(round(round(db[n.I][b[n.ik]]["price"] * (b["quantity"] - 1), 2) - b["total"], 2))
        return Draft(
            "conditional_write", golden, [money(amount)],
            f"About your {B} {bid}: if its total is more than {threshold:.0f} USD, cancel it; otherwise remove "
            f"one of its {unit}. Either way, ask how much money you get back.",
            who(db, cid, **{n.bk: bid}), unknown)

    def search_and_book(rng, db):
        cid = pick(rng, sorted(db[n.C]))
        c = db[n.C][cid]
        target = db[n.I][pick(rng, sorted(db[n.I]))]
        crit = {f: target[f] for f in cfg.search_fields}
        q = int(rng.integers(1, min(3, cfg.max_quantity) + 1))
        matches = [r for _, r in sorted(db[n.I].items()) if all(r[f] == v for f, v in crit.items())]
        ok = sorted((r for r in matches if r["status"] == "open" and r["available"] >= q), key=lambda r: r["price"])
        if not ok or (len(ok) > 1 and ok[0]["price"] == ok[1]["price"]):
            return None
        best = ok[0]
        total = round(best["price"] * q, 2)
        pm = pick(rng, c[n.cids])
        kind = db[n.P][pm]["kind"]
        golden = [(n.find, {"email": c["email"]}), (n.get_c, {n.ck: cid}), (n.get_p, {n.pk: pm}),
                  (n.search, crit), (n.book, {n.ck: cid, n.ik: best[n.ik], "quantity": q, n.pk: pm})]
        crit_text = ", ".join(f"{_text(f)} {v}" for f, v in crit.items())
        return Draft(
            "search_and_book", golden, [money(total)],
            f"You want {q} {unit} on the cheapest open {I} with {crit_text} that has enough {unit} available, "
            f"paid with your {_text(kind)}. You want to know the total charged.",
            who(db, cid, payment=_text(kind)), unknown + f" You do not know the {I} ids.")

    def several_writes(rng, db):
        opens = customer_bookings(db, OPEN_STATUSES)
        if not opens:
            return None
        cid, bid_a = pick(rng, opens)
        others = [k for c2, k in opens if c2 == cid and k != bid_a]
        if not others:
            return None
        bid_b = pick(rng, others)
        b = db[n.B][bid_b]
        new_q = b["quantity"] - 1 if b["quantity"] >= 2 else b["quantity"] + 1
        new_v = cfg.profile.gen(rng)
        c = db[n.C][cid]
        refund = refund_amount(cfg, db[n.B][bid_a]["total"], c["tier"])
        golden = [(n.find, {"email": c["email"]}), (n.update, {n.ck: cid, cfg.profile.name: new_v}),
                  (n.get_b, {n.bk: bid_a}), (n.cancel, {n.bk: bid_a}),
                  (n.get_b, {n.bk: bid_b}), (n.modify, {n.bk: bid_b, "quantity": new_q})]
        return Draft(
            "several_writes", golden, [money(refund)],
            f"You have three requests: set your {_text(cfg.profile.name)} to {new_v}; cancel your {B} {bid_a} "
            f"(ask how much is refunded); and change your {B} {bid_b} to {new_q} {unit}.",
            who(db, cid, **{n.bk: bid_a, f"other_{n.bk}": bid_b, f"new_{cfg.profile.name}": str(new_v)}), unknown)

    def change_item(rng, db):
        cands = customer_bookings(db, (PENDING,))
        if not cands:
            return None
        cid, bid = pick(rng, cands)
        b = db[n.B][bid]
        old = db[n.I][b[n.ik]]
        crit = {f: old[f] for f in cfg.search_fields}
        ok = sorted((r for _, r in sorted(db[n.I].items())
                     if r[n.ik] != old[n.ik] and r["status"] == "open" and r["available"] >= b["quantity"]
                     and all(r[f] == v for f, v in crit.items())), key=lambda r: r["price"])
        if not ok or (len(ok) > 1 and ok[0]["price"] == ok[1]["price"]):
            return None
        new_total = round(ok[0]["price"] * b["quantity"], 2)
        golden = [(n.find, {"email": db[n.C][cid]["email"]}), (n.get_b, {n.bk: bid}), (n.get_i, {n.ik: old[n.ik]}),
                  (n.search, crit), (n.change, {n.bk: bid, f"new_{n.ik}": ok[0][n.ik]})]
        same = " and ".join(_text(f) for f in cfg.search_fields)
        return Draft(
            "change_item", golden, [money(new_total)],
            f"You want to move your {B} {bid} to the cheapest other open {I} with the same {same}, and to know "
            "the new total.",
            who(db, cid, **{n.bk: bid}), unknown)

    def refund_done(rng, db):
        cands = customer_bookings(db, (cfg.done_status,))
        if not cands:
            return None
        cid, bid = pick(rng, cands)
        return Draft(
            "transfer",
            [(n.find, {"email": db[n.C][cid]["email"]}), (n.get_b, {n.bk: bid}),
             ("transfer_to_human_agents",
              {"summary": f"User asks for a refund of {cfg.done_status} {B} {bid}, which policy does not allow."})],
            [],
            f"You want your money back for your {B} {bid}, which is already {cfg.done_status}. Insist if refused; "
            "accept being transferred to a human agent.",
            who(db, cid, **{n.bk: bid}), unknown)

    def group_request(rng, db):
        cid = pick(rng, sorted(db[n.C]))
        iid = pick(rng, sorted(db[n.I]))
        q = cfg.max_quantity + int(rng.integers(2, 10))
        return Draft(
            "transfer",
            [(n.find, {"email": db[n.C][cid]["email"]}), (n.get_i, {n.ik: iid}),
             ("transfer_to_human_agents", {"summary": f"Group request: {q} {unit} on {I} {iid}."})],
            [],
            f"You want to book {q} {unit} on {I} {iid} in a single {B}. Accept being transferred to a human agent.",
            who(db, cid, **{n.ik: iid}), unknown)

    return (lookup, total_active, conditional_cancel, search_and_book, several_writes, change_item,
            refund_done, group_request)


def build_domain(cfg: BookingConfig) -> DomainSpec:
    """The `DomainSpec` of a booking-archetype domain (4 tables, 11 domain tools, 8 templates)."""
    n = _Names(cfg)
    return DomainSpec(
        name=cfg.name,
        title=cfg.title,
        tables=_tables(cfg, n),
        generate=lambda rng: _generate(cfg, n, rng),
        tools=_tools(cfg, n),
        templates=_templates(cfg, n),
        policy_intro=(
            f"You help {_text(plural(cfg.customer))} with their {_text(n.B)}: look up {_text(n.I)}, book, cancel, "
            f"change quantities, move a {_text(cfg.booking)} to another {_text(cfg.item)}, and update their "
            f"{_text(cfg.profile.name)}.",
            f"First authenticate the {_text(cfg.customer)} by finding their id from their email address, even if "
            "they give the id. Help only that person.",
            f"Cancelling a {_text(cfg.booking)} refunds its total to its payment method, minus a "
            f"{cfg.cancel_fee:.0%} fee for {_text(plural(cfg.customer))} of tier 'basic' ('premium' tier: full "
            "refund). The refund is returned by the cancel tool; tell the user the amount.",
            f"New {_text(n.B)} are 'confirmed'; prices are per {cfg.unit.rstrip('s')} in USD.",
        ),
    )
