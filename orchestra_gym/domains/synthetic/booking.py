"""The booking archetype: customers book items, paying with payment methods.

Most ToolScale domains share one shape: a customer (passenger, patient, student, ...) holds
bookings (tickets, appointments, enrollments, ...) of catalogue items (trains, doctors' sessions,
courses, ...) paid with a payment method. `BookingConfig` names the nouns and the domain's
catalogue fields and numbers; `build_domain` turns it into a `DomainSpec` with four related
tables, 11 domain tools (+ `calculate`, `transfer_to_human_agents`), the business rules and
eight task templates. A new domain is one `BookingConfig` (about 30 lines).

The tools and the templates are written once for every booking domain, as module-level functions
of a `BookingNames` (the domain's table, key and tool names, derived from its nouns): each tool
function is registered with `booking_tool` (its kind, description, parameters and business
rules) in `BOOKING_TOOLS`, each template with `booking_template` in `BOOKING_TEMPLATES`;
`build_domain` binds them to one domain. Descriptions, rules and task texts are templates such as
``"Cancel a {booking} and refund it to its payment method."`` filled in by `BookingNames.text`.

Tables (names from the config nouns, e.g. railway): ``passengers`` (key ``passenger_id``),
``trains`` (``train_id``), ``tickets`` (``ticket_id``; foreign keys to the passenger, the train
and the payment method), ``payment_methods`` (``payment_method_id``; foreign key to the
passenger). Money is USD with two decimals.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
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
from orchestra_gym.errors import ConfigError

__all__ = [
    "Field",
    "BookingConfig",
    "BookingNames",
    "BookingRule",
    "BookingTool",
    "BOOKING_TOOLS",
    "BOOKING_TEMPLATES",
    "booking_tool",
    "booking_template",
    "build_tools",
    "build_domain",
    "choice",
    "refund_amount",
    "TEMPLATE_KINDS",
    "FIRST_NAMES",
    "LAST_NAMES",
]

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


class BookingNames:
    """The names and words of one booking domain, derived from its config's nouns.

    Attributes (railway values in brackets):
        config: the `BookingConfig`.
        customers, items, bookings, payments: table names (``passengers``, ``trains``,
            ``tickets``, ``payment_methods``).
        customer_id, item_id, booking_id, payment_id: their key fields (``passenger_id``, ...).
        payment_ids, booking_ids: the customer's list fields (``payment_method_ids``, ``ticket_ids``).
        new_item_id: the argument naming the item a booking moves to (``new_train_id``).
        find_customer, get_customer, get_item, search_items, get_booking, get_payment, book_item,
            cancel_booking, modify_quantity, change_item, update_profile: the tool names
            (``find_passenger_id_by_email``, ..., ``update_passenger_home_station``); each is also
            the name of the module-level function that implements the tool.
        words: the nouns as text for descriptions, rules and task texts (see `text`).

    Raises:
        ConfigError: two nouns give the same id prefix (`prefix`), so ids would collide.
    """

    def __init__(self, config: BookingConfig):
        customer, item, booking = config.customer, config.item, config.booking
        self.config = config
        self.customers, self.items, self.bookings = plural(customer), plural(item), plural(booking)
        self.payments = "payment_methods"
        self.customer_id, self.item_id, self.booking_id = f"{customer}_id", f"{item}_id", f"{booking}_id"
        self.payment_id = "payment_method_id"
        self.payment_ids, self.booking_ids = "payment_method_ids", f"{booking}_ids"
        self.new_item_id = f"new_{item}_id"
        self.find_customer = f"find_{customer}_id_by_email"
        self.get_customer, self.get_item = f"get_{customer}_details", f"get_{item}_details"
        self.get_booking, self.get_payment = f"get_{booking}_details", "get_payment_method_details"
        self.search_items = f"search_{plural(item)}"
        self.book_item, self.cancel_booking = f"book_{item}", f"cancel_{booking}"
        self.modify_quantity, self.change_item = f"modify_{booking}_quantity", f"change_{booking}_{item}"
        self.update_profile = f"update_{customer}_{config.profile.name}"
        self.words: dict[str, Any] = {
            "customer": _text(customer), "customers": _text(plural(customer)),
            "item": _text(item), "items": _text(self.items),
            "booking": _text(booking), "bookings": _text(self.bookings),
            "unit": config.unit, "max_quantity": config.max_quantity, "done": config.done_status,
            "profile": _text(config.profile.name), "profile_field": config.profile.name,
            "search": " and ".join(_text(f) for f in config.search_fields),
            "item_fields": ", ".join(f.name for f in config.item_fields),
        }
        prefixes = [self.prefix(x) for x in (customer, item, booking, "payment")]
        if len(set(prefixes)) != 4:
            raise ConfigError(f"BookingConfig {config.name!r}: id prefixes collide: {prefixes}; rename a noun")

    @staticmethod
    def prefix(noun: str) -> str:
        """Id prefix of a noun: its first three letters, upper case (``passenger -> "PAS-"``)."""
        return noun.replace("_", "")[:3].upper() + "-"

    def text(self, template: str, **values: Any) -> str:
        """`template` with ``{customer}``, ``{item}``, ``{booking}``... (`words`) and `values` filled in."""
        return template.format(**self.words, **values)


def _text(noun: str) -> str:
    return noun.replace("_", " ")


# ---------------------------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------------------------


def _tables(d: BookingNames) -> tuple[TableSpec, ...]:
    cfg = d.config
    item_fields = {"name": "string", "price": "number", "available": "integer", "status": "string"}
    item_fields.update({f.name: f.type for f in cfg.item_fields})
    return (
        TableSpec(
            d.customers,
            d.customer_id,
            {d.customer_id: "string", "first_name": "string", "last_name": "string", "email": "string",
             "tier": "string", cfg.profile.name: cfg.profile.type, d.payment_ids: "array", d.booking_ids: "array"},
            {d.payment_ids: d.payments, d.booking_ids: d.bookings},
        ),
        TableSpec(d.items, d.item_id, {d.item_id: "string", **item_fields}),
        TableSpec(
            d.bookings,
            d.booking_id,
            {d.booking_id: "string", d.customer_id: "string", d.item_id: "string", "quantity": "integer",
             "status": "string", "total": "number", d.payment_id: "string", "date": "string"},
            {d.customer_id: d.customers, d.item_id: d.items, d.payment_id: d.payments},
        ),
        TableSpec(d.payments, d.payment_id,
                  {d.payment_id: "string", d.customer_id: "string", "kind": "string", "balance": "number"},
                  {d.customer_id: d.customers}),
    )


def _keys(rng: np.random.Generator, prefix: str, count: int) -> list[str]:
    nums = rng.choice(np.arange(1001, 10000), size=count, replace=False)
    return [f"{prefix}{int(x)}" for x in nums]


def _generate(d: BookingNames, rng: np.random.Generator) -> Database:
    cfg = d.config
    n_customers, n_items, n_bookings = int(rng.integers(5, 9)), int(rng.integers(8, 13)), int(rng.integers(10, 17))
    customers: dict[str, dict[str, Any]] = {}
    payments: dict[str, dict[str, Any]] = {}
    payment_keys = iter(_keys(rng, d.prefix("payment"), 3 * n_customers))
    used_names: set[tuple[str, str]] = set()
    for key in _keys(rng, d.prefix(cfg.customer), n_customers):
        first, last = pick(rng, FIRST_NAMES), pick(rng, LAST_NAMES)
        while (first, last) in used_names:
            first, last = pick(rng, FIRST_NAMES), pick(rng, LAST_NAMES)
        used_names.add((first, last))
        n_kinds = int(rng.integers(1, min(3, len(cfg.payment_kinds)) + 1))
        payment_ids = []
        for j in sorted(rng.choice(len(cfg.payment_kinds), n_kinds, replace=False)):
            payment_id = next(payment_keys)
            balance = float(rng.integers(50, 3000)) + 0.5 * int(rng.integers(2))
            payments[payment_id] = {d.payment_id: payment_id, d.customer_id: key, "kind": cfg.payment_kinds[int(j)],
                                    "balance": balance}
            payment_ids.append(payment_id)
        customers[key] = {
            d.customer_id: key, "first_name": first, "last_name": last,
            "email": f"{first.lower()}.{last.lower()}{int(rng.integers(10, 99))}@example.com",
            "tier": pick(rng, ("basic", "basic", "premium")), cfg.profile.name: cfg.profile.gen(rng),
            d.payment_ids: payment_ids, d.booking_ids: [],
        }
    items: dict[str, dict[str, Any]] = {}
    lo, hi = cfg.price_range
    for j, key in enumerate(_keys(rng, d.prefix(cfg.item), n_items)):
        record = {d.item_id: key, "name": cfg.item_name(rng, j), "price": round(float(rng.uniform(lo, hi)), 2),
                  "available": int(rng.integers(0, 3 * cfg.max_quantity)),
                  "status": "open" if rng.random() < 0.85 else "closed"}
        record.update({f.name: f.gen(rng) for f in cfg.item_fields})
        items[key] = record
    bookings: dict[str, dict[str, Any]] = {}
    statuses = (PENDING, CONFIRMED, cfg.done_status, CANCELLED)
    item_keys, customer_keys = list(items), list(customers)
    for key in sorted(_keys(rng, d.prefix(cfg.booking), n_bookings)):
        customer_id, item_id = pick(rng, customer_keys), pick(rng, item_keys)
        quantity = int(rng.integers(1, min(4, cfg.max_quantity) + 1))
        bookings[key] = {
            d.booking_id: key, d.customer_id: customer_id, d.item_id: item_id, "quantity": quantity,
            "status": statuses[int(rng.choice(4, p=[0.3, 0.3, 0.25, 0.15]))],
            "total": round(items[item_id]["price"] * quantity, 2),
            d.payment_id: pick(rng, customers[customer_id][d.payment_ids]),
            "date": f"2026-{int(rng.integers(1, 13)):02d}-{int(rng.integers(1, 29)):02d}",
        }
        customers[customer_id][d.booking_ids].append(key)
    return {d.customers: customers, d.items: items, d.bookings: bookings, d.payments: payments}


# ---------------------------------------------------------------------------------------------
# Tools and rules: module-level functions of (names, db, args), registered in BOOKING_TOOLS
# ---------------------------------------------------------------------------------------------


def refund_amount(cfg: BookingConfig, total: float, tier: str) -> float:
    """Refund (USD) of a cancelled booking: the total, minus ``cancel_fee`` of it for 'basic' tier."""
    return round(total if tier == "premium" else total * (1.0 - cfg.cancel_fee), 2)


Args = dict[str, Any]


@dataclass(frozen=True)
class BookingRule:
    """A business rule of the booking tools, for any booking domain.

    Attributes:
        text: the policy sentence as a `BookingNames.text` template.
        violated: ``(names, db, args) -> bool``; True when the call breaks the rule.
        transfer: the policy sends such a request to a human agent.
    """

    text: str
    violated: Callable[[BookingNames, TrackedDB, Args], bool]
    transfer: bool = False


@dataclass(frozen=True)
class BookingTool:
    """A registered booking tool (see `booking_tool`)."""

    function: Callable[[BookingNames, TrackedDB, Args], Any]
    kind: str
    description: str
    params: tuple[str, ...]
    rules: tuple[BookingRule, ...]


BOOKING_TOOLS: dict[str, BookingTool] = {}
"""Every booking tool, by function name (= its `BookingNames` attribute), in the order the policy
sees them."""

BOOKING_TEMPLATES: dict[str, Callable[[BookingNames, np.random.Generator, Database], "Draft | None"]] = {}
"""Every booking task template, by function name, in draw order."""


def booking_tool(kind: str, description: str, params: tuple[str, ...], rules: tuple[BookingRule, ...] = ()) -> Callable:
    """Register the decorated ``(names, db, args) -> result`` function in `BOOKING_TOOLS`.

    Args:
        kind: ``"read"`` or ``"write"`` (tau2 tool kinds).
        description: the description shown to the policy, a `BookingNames.text` template.
        params: parameter keys, in order (see `_param`).
        rules: rules checked, in order, before the function runs (write tools).

    The function is called only after every rule passed, and raises `ToolError` on failure. The
    registry follows the pattern of tau2-bench's ``@is_tool`` (tools as plain functions gathered
    into a table by a decorator).
    """

    def register(function: Callable[[BookingNames, TrackedDB, Args], Any]) -> Callable:
        BOOKING_TOOLS[function.__name__] = BookingTool(function, kind, description, params, rules)
        return function

    return register


def booking_template(function: Callable[[BookingNames, np.random.Generator, Database], "Draft | None"]) -> Callable:
    """Register the decorated ``(names, rng, db) -> Draft | None`` task template in `BOOKING_TEMPLATES`."""
    BOOKING_TEMPLATES[function.__name__] = function
    return function


def _param(d: BookingNames, key: str) -> tuple[Param, ...]:
    """The parameter(s) a key of `BookingTool.params` stands for."""
    cfg = d.config
    if key == "email":
        return (Param("email", "string", "The email address."),)
    if key == "quantity":
        return (Param("quantity", "integer", f"Number of {cfg.unit}."),)
    if key == "search_fields":
        about = {f.name: f.description for f in cfg.item_fields}
        return tuple(Param(f, "string", about.get(f, f)) for f in cfg.search_fields)
    if key == "new_item_id":
        return (Param(d.new_item_id, "string", d.text("The id of the new {item}.")),)
    if key == "profile":
        return (Param(cfg.profile.name, cfg.profile.type, cfg.profile.description),)
    noun = {"customer_id": cfg.customer, "item_id": cfg.item, "booking_id": cfg.booking, "payment_id": "payment"}[key]
    what = "payment method" if noun == "payment" else _text(noun)
    return (Param(getattr(d, key), "string", f"The {what} id, e.g. '{d.prefix(noun)}1234'."),)


def build_tools(d: BookingNames) -> tuple[Tool, ...]:
    """The domain's `Tool`s from `BOOKING_TOOLS`: names, texts and parameters from `d`."""
    tools = []
    for name, entry in BOOKING_TOOLS.items():
        rules = tuple(Rule(d.text(r.text), partial(r.violated, d), r.transfer) for r in entry.rules)
        params = tuple(p for key in entry.params for p in _param(d, key))
        tools.append(Tool(getattr(d, name), d.text(entry.description), entry.kind, params,
                          partial(entry.function, d), rules))
    return tuple(tools)


def _booking_and_item(d: BookingNames, db: TrackedDB, args: Args) -> tuple[dict, dict]:
    booking = db.get(d.bookings, args[d.booking_id])
    return booking, db.get(d.items, booking[d.item_id])


def _payment_of(d: BookingNames, db: TrackedDB, booking: dict) -> dict:
    return db.get(d.payments, booking[d.payment_id])


# --- rule predicates (True = violated) ---


def item_closed(d: BookingNames, db: TrackedDB, args: Args) -> bool:
    return db.get(d.items, args[d.item_id])["status"] != "open"


def too_few(d: BookingNames, db: TrackedDB, args: Args) -> bool:
    return args["quantity"] < 1


def too_many(d: BookingNames, db: TrackedDB, args: Args) -> bool:
    return args["quantity"] > d.config.max_quantity


def not_available(d: BookingNames, db: TrackedDB, args: Args) -> bool:
    return db.get(d.items, args[d.item_id])["available"] < args["quantity"]


def foreign_payment(d: BookingNames, db: TrackedDB, args: Args) -> bool:
    return db.get(d.payments, args[d.payment_id])[d.customer_id] != db.get(d.customers, args[d.customer_id])[d.customer_id]


def book_unaffordable(d: BookingNames, db: TrackedDB, args: Args) -> bool:
    balance = db.get(d.payments, args[d.payment_id])["balance"]
    return balance < round(db.get(d.items, args[d.item_id])["price"] * args["quantity"], 2)


def is_done(d: BookingNames, db: TrackedDB, args: Args) -> bool:
    return db.get(d.bookings, args[d.booking_id])["status"] == d.config.done_status


def is_cancelled(d: BookingNames, db: TrackedDB, args: Args) -> bool:
    return db.get(d.bookings, args[d.booking_id])["status"] == CANCELLED


def not_open(d: BookingNames, db: TrackedDB, args: Args) -> bool:
    return db.get(d.bookings, args[d.booking_id])["status"] not in OPEN_STATUSES


def same_quantity(d: BookingNames, db: TrackedDB, args: Args) -> bool:
    return db.get(d.bookings, args[d.booking_id])["quantity"] == args["quantity"]


def increase_unavailable(d: BookingNames, db: TrackedDB, args: Args) -> bool:
    booking, item = _booking_and_item(d, db, args)
    return args["quantity"] - booking["quantity"] > item["available"]


def increase_unaffordable(d: BookingNames, db: TrackedDB, args: Args) -> bool:
    booking, item = _booking_and_item(d, db, args)
    extra = round(item["price"] * args["quantity"] - booking["total"], 2)
    return extra > 0 and _payment_of(d, db, booking)["balance"] < extra


def not_pending(d: BookingNames, db: TrackedDB, args: Args) -> bool:
    return db.get(d.bookings, args[d.booking_id])["status"] != PENDING


def bad_new_item(d: BookingNames, db: TrackedDB, args: Args) -> bool:
    booking, item = _booking_and_item(d, db, args)
    new = db.get(d.items, args[d.new_item_id])
    return (new[d.item_id] == item[d.item_id] or new["status"] != "open"
            or any(new[f] != item[f] for f in d.config.search_fields))


def new_unavailable(d: BookingNames, db: TrackedDB, args: Args) -> bool:
    booking = db.get(d.bookings, args[d.booking_id])
    return db.get(d.items, args[d.new_item_id])["available"] < booking["quantity"]


def change_unaffordable(d: BookingNames, db: TrackedDB, args: Args) -> bool:
    booking = db.get(d.bookings, args[d.booking_id])
    extra = round(db.get(d.items, args[d.new_item_id])["price"] * booking["quantity"] - booking["total"], 2)
    return extra > 0 and _payment_of(d, db, booking)["balance"] < extra


def same_profile(d: BookingNames, db: TrackedDB, args: Args) -> bool:
    value = args[d.config.profile.name]
    return (isinstance(value, str) and not value.strip()) or db.get(d.customers, args[d.customer_id])[d.config.profile.name] == value


AT_LEAST_ONE = BookingRule("A {booking} holds at least 1 of its {unit}.", too_few)
GROUP_REQUEST = BookingRule(
    "A single {booking} holds at most {max_quantity} {unit}; a request for more than {max_quantity} {unit} is a "
    "group request that must be transferred to a human agent.", too_many, transfer=True)
ENOUGH_BALANCE = "The payment method's balance must cover any extra charge."

# --- tools (they run after every rule passed), in the order the policy lists them ---


@booking_tool("read", "Find a {customer}'s id by their email address.", ("email",))
def find_customer(d: BookingNames, db: TrackedDB, args: Args) -> str:
    return db.find_one(d.customers, "email", args["email"].strip().lower())[d.customer_id]


@booking_tool("read", "Get a {customer}'s profile: name, email, tier, {profile_field}, payment method ids and {booking} ids.",
              ("customer_id",))
def get_customer(d: BookingNames, db: TrackedDB, args: Args) -> dict:
    return db.get(d.customers, args[d.customer_id])


@booking_tool("read", "Get a {item}'s details: name, price per unit (USD), {unit} available, status, {item_fields}.",
              ("item_id",))
def get_item(d: BookingNames, db: TrackedDB, args: Args) -> dict:
    return db.get(d.items, args[d.item_id])


@booking_tool("read", "List every {item} with the given {search} (exact match), open or closed.", ("search_fields",))
def search_items(d: BookingNames, db: TrackedDB, args: Args) -> list:
    return db.select(d.items, lambda record: all(record[f] == args[f] for f in d.config.search_fields))


@booking_tool("read", "Get a {booking}'s details: {customer}, {item}, quantity, status, total (USD), payment method, date.",
              ("booking_id",))
def get_booking(d: BookingNames, db: TrackedDB, args: Args) -> dict:
    return db.get(d.bookings, args[d.booking_id])


@booking_tool("read", "Get a payment method's details: owner, kind, balance (USD).", ("payment_id",))
def get_payment(d: BookingNames, db: TrackedDB, args: Args) -> dict:
    return db.get(d.payments, args[d.payment_id])


@booking_tool(
    "write",
    "Book a {item} for a {customer}: creates a 'confirmed' {booking} and charges price x quantity to the payment method.",
    ("customer_id", "item_id", "quantity", "payment_id"),
    (BookingRule("Only {items} with status 'open' can be booked.", item_closed),
     AT_LEAST_ONE,
     GROUP_REQUEST,
     BookingRule("The {item} must have at least the requested number of {unit} available.", not_available),
     BookingRule("The payment method must belong to the {customer} making the {booking}.", foreign_payment),
     BookingRule("The payment method's balance must cover the total (price x quantity).", book_unaffordable)),
)
def book_item(d: BookingNames, db: TrackedDB, args: Args) -> dict:
    customer = db.get(d.customers, args[d.customer_id])
    item, payment = db.get(d.items, args[d.item_id]), db.get(d.payments, args[d.payment_id])
    total = round(item["price"] * args["quantity"], 2)
    key = db.new_key(d.bookings, d.prefix(d.config.booking))
    record = {d.booking_id: key, d.customer_id: customer[d.customer_id], d.item_id: item[d.item_id],
              "quantity": args["quantity"], "status": CONFIRMED, "total": total, d.payment_id: payment[d.payment_id],
              "date": "2026-06-01"}
    item["available"] -= args["quantity"]
    payment["balance"] = round(payment["balance"] - total, 2)
    customer[d.booking_ids].append(key)
    db.insert(d.bookings, record)
    return {**record, "charged": money(total)}


@booking_tool(
    "write", "Cancel a {booking} and refund it to its payment method.", ("booking_id",),
    (BookingRule("A {booking} that is already '{done}' cannot be cancelled or refunded by the agent; a user who wants "
                 "a refund for a '{done}' {booking} must be transferred to a human agent.", is_done, transfer=True),
     BookingRule("A {booking} that is already 'cancelled' cannot be cancelled again.", is_cancelled)),
)
def cancel_booking(d: BookingNames, db: TrackedDB, args: Args) -> dict:
    booking, item = _booking_and_item(d, db, args)
    refund = refund_amount(d.config, booking["total"], db.get(d.customers, booking[d.customer_id])["tier"])
    payment = _payment_of(d, db, booking)
    booking["status"] = CANCELLED
    item["available"] += booking["quantity"]
    payment["balance"] = round(payment["balance"] + refund, 2)
    return {**booking, "refund": money(refund)}


@booking_tool(
    "write",
    "Change the number of {unit} of a {booking}; the price difference is charged to or refunded to its payment method.",
    ("booking_id", "quantity"),
    (BookingRule("Only {bookings} with status 'pending' or 'confirmed' can be modified.", not_open),
     AT_LEAST_ONE,
     GROUP_REQUEST,
     BookingRule("The new quantity must differ from the current one.", same_quantity),
     BookingRule("Extra {unit} must be available on the {item}.", increase_unavailable),
     BookingRule(ENOUGH_BALANCE, increase_unaffordable)),
)
def modify_quantity(d: BookingNames, db: TrackedDB, args: Args) -> dict:
    booking, item = _booking_and_item(d, db, args)
    payment = _payment_of(d, db, booking)
    new_total = round(item["price"] * args["quantity"], 2)
    delta = round(new_total - booking["total"], 2)
    item["available"] -= args["quantity"] - booking["quantity"]
    payment["balance"] = round(payment["balance"] - delta, 2)
    booking["quantity"], booking["total"] = args["quantity"], new_total
    return {**booking, ("charged" if delta > 0 else "refund"): money(abs(delta))}


@booking_tool(
    "write",
    "Move a {booking} to another {item} with the same {search}; the price difference is charged to or refunded to "
    "its payment method.",
    ("booking_id", "new_item_id"),
    (BookingRule("Only {bookings} with status 'pending' can be moved to another {item}.", not_pending),
     BookingRule("The new {item} must be a different {item} with status 'open' and the same {search}.", bad_new_item),
     BookingRule("The new {item} must have as many {unit} available as the {booking} holds.", new_unavailable),
     BookingRule(ENOUGH_BALANCE, change_unaffordable)),
)
def change_item(d: BookingNames, db: TrackedDB, args: Args) -> dict:
    booking, old = _booking_and_item(d, db, args)
    new = db.get(d.items, args[d.new_item_id])
    payment = _payment_of(d, db, booking)
    new_total = round(new["price"] * booking["quantity"], 2)
    delta = round(new_total - booking["total"], 2)
    old["available"] += booking["quantity"]
    new["available"] -= booking["quantity"]
    payment["balance"] = round(payment["balance"] - delta, 2)
    booking[d.item_id], booking["total"] = new[d.item_id], new_total
    return {**booking, ("charged" if delta > 0 else "refund"): money(abs(delta))}


@booking_tool(
    "write", "Update a {customer}'s {profile}.", ("customer_id", "profile"),
    (BookingRule("The new {profile} must be non-empty and differ from the current one.", same_profile),),
)
def update_profile(d: BookingNames, db: TrackedDB, args: Args) -> dict:
    customer = db.get(d.customers, args[d.customer_id])
    customer[d.config.profile.name] = args[d.config.profile.name]
    return customer


# ---------------------------------------------------------------------------------------------
# Task templates: module-level functions of (names, rng, db), registered in BOOKING_TEMPLATES
# ---------------------------------------------------------------------------------------------


def _who(d: BookingNames, db: Database, customer_id: str, **extra: str) -> dict[str, str]:
    """What the user knows about themselves: name, email and `extra`."""
    customer = db[d.customers][customer_id]
    return {"name": f"{customer['first_name']} {customer['last_name']}", "email": customer["email"], **extra}


def _unknown(d: BookingNames) -> str:
    return d.text("You do not know your {customer} id.")


def _customer_bookings(d: BookingNames, db: Database, statuses: tuple[str, ...]) -> list[tuple[str, str]]:
    """(customer id, booking id) of every booking with one of `statuses`, in key order."""
    return [(b[d.customer_id], k) for k, b in db[d.bookings].items() if b["status"] in statuses]


def _find(d: BookingNames, db: Database, customer_id: str) -> tuple[str, dict[str, Any]]:
    """The golden first action: find the customer's id by their email."""
    return (d.find_customer, {"email": db[d.customers][customer_id]["email"]})


def _cheapest(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The cheapest record by price, or None when there is none or the cheapest is tied."""
    ranked = sorted(records, key=lambda r: r["price"])
    if not ranked or (len(ranked) > 1 and ranked[0]["price"] == ranked[1]["price"]):
        return None
    return ranked[0]


@booking_template
def lookup(d: BookingNames, rng: np.random.Generator, db: Database) -> Draft | None:
    """The user asks a field of the item on one of their bookings and the booking's total."""
    customer_id, booking_id = pick(rng, _customer_bookings(d, db, (PENDING, CONFIRMED, d.config.done_status, CANCELLED)))
    booking = db[d.bookings][booking_id]
    item = db[d.items][booking[d.item_id]]
    field_name = pick(rng, [f.name for f in d.config.item_fields if f.type == "string"])
    return Draft(
        "lookup",
        [_find(d, db, customer_id), (d.get_booking, {d.booking_id: booking_id}), (d.get_item, {d.item_id: item[d.item_id]})],
        [str(item[field_name]), money(booking["total"])],
        d.text("You want to know the {field} of the {item} on your {booking} {booking_id}, and how much that "
               "{booking} cost in total.", field=_text(field_name), booking_id=booking_id),
        _who(d, db, customer_id, **{d.booking_id: booking_id}), _unknown(d))


@booking_template
def total_active(d: BookingNames, rng: np.random.Generator, db: Database) -> Draft | None:
    """The user asks the combined total of their open bookings (needs ``calculate``)."""
    customer_id = pick(rng, sorted(db[d.customers]))
    booking_ids = db[d.customers][customer_id][d.booking_ids]
    active = [db[d.bookings][k]["total"] for k in booking_ids if db[d.bookings][k]["status"] in OPEN_STATUSES]
    if len(active) < 2:
        return None
    expression = " + ".join(money(x) for x in active)
    return Draft(
        "compute",
        [_find(d, db, customer_id), (d.get_customer, {d.customer_id: customer_id})]
        + [(d.get_booking, {d.booking_id: k}) for k in booking_ids] + [("calculate", {"expression": expression})],
        [money(round(safe_calculate(expression), 2))],
        d.text("You want to know the combined total (USD) of all your {bookings} that are still '{pending}' or "
               "'{confirmed}'.", pending=PENDING, confirmed=CONFIRMED),
        _who(d, db, customer_id), _unknown(d) + d.text(" You do not remember your {booking} ids."))


@booking_template
def conditional_cancel(d: BookingNames, rng: np.random.Generator, db: Database) -> Draft | None:
    """Cancel an open booking if its total is above a threshold, else remove one unit."""
    candidates = _customer_bookings(d, db, OPEN_STATUSES)
    if not candidates:
        return None
    customer_id, booking_id = pick(rng, candidates)
    booking = db[d.bookings][booking_id]
    threshold = round(booking["total"] * float(rng.uniform(0.5, 1.5)), 0)
    if abs(threshold - booking["total"]) < 1.0:
        return None
    golden = [_find(d, db, customer_id), (d.get_booking, {d.booking_id: booking_id})]
    if booking["total"] > threshold:
        golden.append((d.cancel_booking, {d.booking_id: booking_id}))
        amount = refund_amount(d.config, booking["total"], db[d.customers][customer_id]["tier"])
    else:
        if booking["quantity"] < 2:
            return None
        golden.append((d.modify_quantity, {d.booking_id: booking_id, "quantity": booking["quantity"] - 1}))
        price = db[d.items][booking[d.item_id]]["price"]
        amount = abs(round(round(price * (booking["quantity"] - 1), 2) - booking["total"], 2))
    return Draft(
        "conditional_write", golden, [money(amount)],
        d.text("About your {booking} {booking_id}: if its total is more than {threshold:.0f} USD, cancel it; otherwise "
               "remove one of its {unit}. Either way, ask how much money you get back.",
               booking_id=booking_id, threshold=threshold),
        _who(d, db, customer_id, **{d.booking_id: booking_id}), _unknown(d))


@booking_template
def search_and_book(d: BookingNames, rng: np.random.Generator, db: Database) -> Draft | None:
    """Book the cheapest open item matching the search fields of a random item."""
    customer_id = pick(rng, sorted(db[d.customers]))
    customer = db[d.customers][customer_id]
    target = db[d.items][pick(rng, sorted(db[d.items]))]
    criteria = {f: target[f] for f in d.config.search_fields}
    quantity = int(rng.integers(1, min(3, d.config.max_quantity) + 1))
    matches = [r for _, r in sorted(db[d.items].items()) if all(r[f] == v for f, v in criteria.items())]
    best = _cheapest([r for r in matches if r["status"] == "open" and r["available"] >= quantity])
    if best is None:
        return None
    total = round(best["price"] * quantity, 2)
    payment_id = pick(rng, customer[d.payment_ids])
    kind = db[d.payments][payment_id]["kind"]
    golden = [(d.find_customer, {"email": customer["email"]}), (d.get_customer, {d.customer_id: customer_id}),
              (d.get_payment, {d.payment_id: payment_id}), (d.search_items, criteria),
              (d.book_item, {d.customer_id: customer_id, d.item_id: best[d.item_id], "quantity": quantity,
                             d.payment_id: payment_id})]
    return Draft(
        "search_and_book", golden, [money(total)],
        d.text("You want {quantity} {unit} on the cheapest open {item} with {criteria} that has enough {unit} "
               "available, paid with your {kind}. You want to know the total charged.", quantity=quantity,
               criteria=", ".join(f"{_text(f)} {v}" for f, v in criteria.items()), kind=_text(kind)),
        _who(d, db, customer_id, payment=_text(kind)), _unknown(d) + d.text(" You do not know the {item} ids."))


@booking_template
def several_writes(d: BookingNames, rng: np.random.Generator, db: Database) -> Draft | None:
    """Three requests: update the profile, cancel one booking, change another's quantity."""
    open_bookings = _customer_bookings(d, db, OPEN_STATUSES)
    if not open_bookings:
        return None
    customer_id, cancelled_id = pick(rng, open_bookings)
    others = [k for c, k in open_bookings if c == customer_id and k != cancelled_id]
    if not others:
        return None
    modified_id = pick(rng, others)
    modified = db[d.bookings][modified_id]
    new_quantity = modified["quantity"] - 1 if modified["quantity"] >= 2 else modified["quantity"] + 1
    new_value = d.config.profile.gen(rng)
    customer = db[d.customers][customer_id]
    refund = refund_amount(d.config, db[d.bookings][cancelled_id]["total"], customer["tier"])
    golden = [(d.find_customer, {"email": customer["email"]}),
              (d.update_profile, {d.customer_id: customer_id, d.config.profile.name: new_value}),
              (d.get_booking, {d.booking_id: cancelled_id}), (d.cancel_booking, {d.booking_id: cancelled_id}),
              (d.get_booking, {d.booking_id: modified_id}),
              (d.modify_quantity, {d.booking_id: modified_id, "quantity": new_quantity})]
    return Draft(
        "several_writes", golden, [money(refund)],
        d.text("You have three requests: set your {profile} to {new_value}; cancel your {booking} {cancelled_id} "
               "(ask how much is refunded); and change your {booking} {modified_id} to {new_quantity} {unit}.",
               new_value=new_value, cancelled_id=cancelled_id, modified_id=modified_id, new_quantity=new_quantity),
        _who(d, db, customer_id, **{d.booking_id: cancelled_id, f"other_{d.booking_id}": modified_id,
                                    f"new_{d.config.profile.name}": str(new_value)}), _unknown(d))


@booking_template
def change_booking_item(d: BookingNames, rng: np.random.Generator, db: Database) -> Draft | None:
    """Move a pending booking to the cheapest other open item with the same search fields."""
    candidates = _customer_bookings(d, db, (PENDING,))
    if not candidates:
        return None
    customer_id, booking_id = pick(rng, candidates)
    booking = db[d.bookings][booking_id]
    old = db[d.items][booking[d.item_id]]
    criteria = {f: old[f] for f in d.config.search_fields}
    best = _cheapest([r for _, r in sorted(db[d.items].items())
                      if r[d.item_id] != old[d.item_id] and r["status"] == "open" and r["available"] >= booking["quantity"]
                      and all(r[f] == v for f, v in criteria.items())])
    if best is None:
        return None
    new_total = round(best["price"] * booking["quantity"], 2)
    golden = [_find(d, db, customer_id), (d.get_booking, {d.booking_id: booking_id}),
              (d.get_item, {d.item_id: old[d.item_id]}), (d.search_items, criteria),
              (d.change_item, {d.booking_id: booking_id, d.new_item_id: best[d.item_id]})]
    return Draft(
        "change_item", golden, [money(new_total)],
        d.text("You want to move your {booking} {booking_id} to the cheapest other open {item} with the same {search}, "
               "and to know the new total.", booking_id=booking_id),
        _who(d, db, customer_id, **{d.booking_id: booking_id}), _unknown(d))


@booking_template
def refund_done(d: BookingNames, rng: np.random.Generator, db: Database) -> Draft | None:
    """The user wants a refund for a used-up booking: the policy sends them to a human agent."""
    candidates = _customer_bookings(d, db, (d.config.done_status,))
    if not candidates:
        return None
    customer_id, booking_id = pick(rng, candidates)
    summary = d.text("User asks for a refund of {done} {booking} {booking_id}, which policy does not allow.",
                     booking_id=booking_id)
    return Draft(
        "transfer",
        [_find(d, db, customer_id), (d.get_booking, {d.booking_id: booking_id}),
         ("transfer_to_human_agents", {"summary": summary})],
        [],
        d.text("You want your money back for your {booking} {booking_id}, which is already {done}. Insist if refused; "
               "accept being transferred to a human agent.", booking_id=booking_id),
        _who(d, db, customer_id, **{d.booking_id: booking_id}), _unknown(d))


@booking_template
def group_request(d: BookingNames, rng: np.random.Generator, db: Database) -> Draft | None:
    """The user wants more units than one booking may hold: a group request for a human agent."""
    customer_id = pick(rng, sorted(db[d.customers]))
    item_id = pick(rng, sorted(db[d.items]))
    quantity = d.config.max_quantity + int(rng.integers(2, 10))
    return Draft(
        "transfer",
        [_find(d, db, customer_id), (d.get_item, {d.item_id: item_id}),
         ("transfer_to_human_agents",
          {"summary": d.text("Group request: {quantity} {unit} on {item} {item_id}.", quantity=quantity, item_id=item_id)})],
        [],
        d.text("You want to book {quantity} {unit} on {item} {item_id} in a single {booking}. Accept being transferred "
               "to a human agent.", quantity=quantity, item_id=item_id),
        _who(d, db, customer_id, **{d.item_id: item_id}), _unknown(d))


def build_domain(cfg: BookingConfig) -> DomainSpec:
    """The `DomainSpec` of a booking-archetype domain (4 tables, 11 domain tools, 8 templates)."""
    d = BookingNames(cfg)
    return DomainSpec(
        name=cfg.name,
        title=cfg.title,
        tables=_tables(d),
        generate=partial(_generate, d),
        tools=build_tools(d),
        templates=tuple(partial(template, d) for template in BOOKING_TEMPLATES.values()),
        policy_intro=(
            d.text("You help {customers} with their {bookings}: look up {items}, book, cancel, change quantities, move "
                   "a {booking} to another {item}, and update their {profile}."),
            d.text("First authenticate the {customer} by finding their id from their email address, even if they give "
                   "the id. Help only that person."),
            d.text("Cancelling a {booking} refunds its total to its payment method, minus a {fee:.0%} fee for "
                   "{customers} of tier 'basic' ('premium' tier: full refund). The refund is returned by the cancel "
                   "tool; tell the user the amount.", fee=cfg.cancel_fee),
            d.text("New {bookings} are 'confirmed'; prices are per {unit_one} in USD.", unit_one=cfg.unit.rstrip("s")),
        ),
    )
