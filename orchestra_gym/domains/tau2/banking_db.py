"""The transactional database of tau2's ``banking_knowledge`` domain and its constraint queries.

Source followed: tau2-bench v1.0.1 ``domains/banking_knowledge/data_model.py`` (``TransactionalDB``:
23 tables, each ``{"data": {record id: record}, "notes": str}``, records plain dicts) and
``db_query.py`` (``query_db``, ``add_to_db``, ``update_record_in_db``, ``query_database_tool``), as
recorded in ``tau2_v1_reference/banking_knowledge``.

- Records keep their JSON types (``250.0`` stays a float, ``"3400"`` a string) and insertion
  order (file order, new records appended); query output follows that order.
- The hash is tau2's: sha256 of ``json.dumps(model_dump, sort_keys=True, default=str)``, the
  tables missing from ``db.json`` dumping as ``{"data": {}, "notes": ""}``.
- ``db.json`` is parsed once per process; an environment copies a table the first time it uses it.
"""

from __future__ import annotations

import hashlib
import json
import operator
import threading
from pathlib import Path
from typing import Any, Callable

from orchestra_gym.domains.tau2.db import canonical_json, copy_json, deep_update

__all__ = ["BankingDB", "TABLES", "QUERY_TABLES", "query_records", "query_text", "load_banking_db"]

#: ``TransactionalDB``'s tables in model field order.
TABLES = (
    "users", "accounts", "debit_cards", "referrals", "credit_card_applications", "user_discoverable_tools",
    "user_discoverable_tool_calls", "verification_history", "credit_card_transaction_history", "cash_back_disputes",
    "bank_account_transaction_history", "credit_card_accounts", "agent_discoverable_tools", "task_config",
    "human_transfer_requests", "transaction_disputes", "credit_card_orders", "debit_card_orders",
    "credit_card_closure_reasons", "credit_card_account_flags", "credit_limit_increase_requests", "payment_history",
    "debit_card_disputes",
)

#: The tables ``query_database_tool`` knows, in the order its "Available" list prints them.
QUERY_TABLES = (
    "users", "accounts", "referrals", "credit_card_applications", "user_discoverable_tools",
    "user_discoverable_tool_calls", "agent_discoverable_tools", "task_config", "verification_history",
    "credit_card_transaction_history", "cash_back_disputes", "bank_account_transaction_history",
    "credit_card_accounts", "human_transfer_requests", "transaction_disputes", "credit_card_orders",
    "credit_card_closure_reasons", "credit_card_account_flags", "debit_cards", "debit_card_orders",
    "debit_card_disputes", "credit_limit_increase_requests", "payment_history",
)


class BankingDB:
    """A mutable ``TransactionalDB``: 23 tables, each ``{"data": {id: record}, "notes": str}``.

    Copy on access per table: a table is deep-copied from the shared parsed snapshot the first time
    this database hands it out (`table` / `data`), so a fresh environment costs microseconds and
    the hash reuses the snapshot's JSON of every table not handed out.
    """

    def __init__(self, snapshot: dict[str, dict[str, Any]], own: dict[str, dict[str, Any]] | None = None,
                 fragments: dict[str, str] | None = None):
        self._snapshot = snapshot
        self._own: dict[str, dict[str, Any]] = own or {}
        self._fragments = fragments if fragments is not None else {}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> "BankingDB":
        """Validate ``db.json`` content as the model does (unknown top-level keys dropped).

        Raises:
            ValueError: a table that is not ``{"data": {...}, "notes": str}``.
        """
        tables = {}
        for name in TABLES:
            t = raw.get(name) or {}
            if not isinstance(t, dict) or not isinstance(t.get("data", {}), dict):
                raise ValueError(f"banking_knowledge db: table {name!r} must be {{'data': {{id: record}}, 'notes': str}}")
            tables[name] = {"data": copy_json(t.get("data") or {}), "notes": str(t.get("notes", ""))}
        return cls(tables)

    def table(self, name: str) -> dict[str, Any] | None:
        """This database's own (mutable) ``{"data", "notes"}`` of a model table; None for another name."""
        t = self._own.get(name)
        if t is None:
            base = self._snapshot.get(name)
            if base is None:
                return None
            t = self._own[name] = copy_json(base)
        return t

    def data(self, table: str) -> dict[str, Any] | None:
        """The ``data`` dict (record id -> record) of a model table; None for a name that is not a table."""
        t = self.table(table)
        return None if t is None else t["data"]

    def add(self, table: str, record_id: str, record: dict[str, Any]) -> bool:
        """tau2 ``add_to_db``: False when the table is not in the model or the id exists."""
        d = self.data(table)
        if d is None or record_id in d:
            return False
        d[record_id] = record
        return True

    def update(self, table: str, record_id: Any, updates: dict[str, Any]) -> bool:
        """tau2 ``update_record_in_db``: set fields of an existing record; False if absent."""
        d = self.data(table)
        if d is None or record_id not in d:
            return False
        d[record_id].update(updates)
        return True

    def merge(self, update: dict[str, Any]) -> None:
        """tau2 ``update_db`` (``initialization_data.agent_data``): deep merge, then re-validate the tables."""
        for name, value in update.items():
            if name in TABLES:  # the model ignores other keys
                merged = BankingDB.from_json({name: deep_update(self.table(name), value)})
                self._own[name] = merged.table(name)

    def dump(self) -> dict[str, Any]:
        """The model dump: every table in field order (not copied; do not modify)."""
        return {name: self._own.get(name) or self._snapshot[name] for name in TABLES}

    def hash(self) -> str:
        """tau2's DB hash: sha256 of ``json.dumps(dump, sort_keys=True, default=str)``, hex (composed per table)."""
        parts = []
        for name in sorted(TABLES):
            own = self._own.get(name)
            if own is not None:
                frag = canonical_json(own)
            else:
                frag = self._fragments.get(name)
                if frag is None:
                    frag = self._fragments[name] = canonical_json(self._snapshot[name])
            parts.append(f"{json.dumps(name)}: {frag}")
        return hashlib.sha256(("{" + ", ".join(parts) + "}").encode()).hexdigest()

    def copy(self) -> "BankingDB":
        """An independent database (shares the read-only snapshot)."""
        return BankingDB(self._snapshot, {k: copy_json(v) for k, v in self._own.items()}, self._fragments)


_SNAPSHOTS: dict[tuple[str, int, int], BankingDB] = {}
_LOCK = threading.Lock()


def load_banking_db(path: str | Path) -> BankingDB:
    """A fresh copy of the database in ``path`` (``db.json``), parsed once per process.

    Raises:
        FileNotFoundError: no such file.
    """
    p = Path(path).resolve()
    if not p.is_file():
        raise FileNotFoundError(f"banking_knowledge database not found: {p} (expected domains/banking_knowledge/db.json)")
    st = p.stat()
    key = (str(p), st.st_mtime_ns, st.st_size)
    with _LOCK:
        snap = _SNAPSHOTS.get(key)
        if snap is None:
            snap = _SNAPSHOTS[key] = BankingDB.from_json(json.loads(p.read_text(encoding="utf-8")))
    return BankingDB(snap._snapshot, None, snap._fragments)


def _contains(a: Any, b: Any) -> bool:
    return b in a if a is not None else False


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": operator.eq, "ne": operator.ne, "gt": operator.gt, "gte": operator.ge, "lt": operator.lt,
    "lte": operator.le, "contains": _contains,
    "startswith": lambda a, b: str(a).startswith(str(b)) if a is not None else False,
    "endswith": lambda a, b: str(a).endswith(str(b)) if a is not None else False,
    "in": lambda a, b: a in b, "nin": lambda a, b: a not in b,
}


def _matches(record: dict[str, Any], constraints: dict[str, Any]) -> bool:
    """tau2 ``_record_matches``: ``field`` or ``field__op`` (unknown ops compare equal); a failing comparison is no match."""
    for key, expected in constraints.items():
        field, op = key.rsplit("__", 1) if "__" in key else (key, "eq")
        try:
            if not _OPS.get(op, operator.eq)(record.get(field), expected):
                return False
        except (TypeError, ValueError):
            return False
    return True


def query_records(db: BankingDB, table: str, constraints: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """tau2 ``query_db(..., return_ids=True)``: ``(record id, record)`` pairs in table order; [] for an unknown table."""
    d = db.data(table) if table in QUERY_TABLES else None
    if d is None:
        return []
    return [(rid, rec) for rid, rec in d.items() if _matches(rec, constraints)]


def format_records(table: str, rows: list[tuple[str, dict[str, Any]]]) -> str:
    """``Found N record(s) in '<table>':`` then each record's fields as ``   field: value`` (Python ``str``)."""
    lines = [f"Found {len(rows)} record(s) in '{table}':\n"]
    for i, (rid, rec) in enumerate(rows, 1):
        lines.append(f"{i}. Record ID: {rid}")
        lines.extend(f"   {k}: {v}" for k, v in rec.items())
        lines.append("")
    return "\n".join(lines)


def query_text(db: BankingDB, table: str, constraints: str = "{}") -> str:
    """tau2 ``query_database_tool``: the tools' text answer for a JSON constraint string.

    Never raises: an unknown table, bad JSON or a failing query become ``Error: ...`` strings.
    """
    try:
        if table not in QUERY_TABLES:
            return f"Error: Database '{table}' not found. Available: {list(QUERY_TABLES)}"
        try:
            parsed = json.loads(constraints) if constraints else {}
        except json.JSONDecodeError as e:
            return f"Error: Invalid JSON: {e}"
        if not isinstance(parsed, dict):
            raise TypeError(f"tau2.domains.banking_knowledge.db_query.query_db() argument after ** must be a mapping, "
                            f"not {type(parsed).__name__}")
        rows = query_records(db, table, parsed)
        if not rows:
            return f"No records found in '{table}'."
        return format_records(table, rows)
    except Exception as e:  # noqa: BLE001 - tau2 reports any query failure as text
        return f"Error querying database: {e}"
