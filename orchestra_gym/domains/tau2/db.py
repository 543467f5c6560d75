"""A tau2 domain database: a shared, read-only snapshot plus a cheap copy-on-write view per episode.

tau2-bench re-reads and re-validates the whole database (2.8 MB for retail, about 250 ms) for every
fresh environment and hashes all of it (about 75 ms) to compare two states. Here the database file
is parsed once per process (`Snapshot`, cached by path and modification time) and each episode gets
a `CowDB`: reads go to the snapshot, the first write to a record copies just that record into the
episode's overlay. Two views of one snapshot are compared record by record over their overlays only.

Layout: the database is a JSON object whose top-level values are *tables* (``{key: record}``
objects, e.g. retail ``products`` / ``users`` / ``orders``, mock ``tasks`` / ``users``). Records are
plain JSON values (dict / list / str / int / float / bool / None), normalised at load time to the
field order and defaults of tau2's pydantic models (see `Schema`), so that rendering a record with
`json.dumps` gives tau2's tool output and hashing gives tau2's hash.

Hash (tau2 v0.2.0 ``get_db_hash``, as defined in the reference README):
``sha256(json.dumps(db.model_dump(), sort_keys=True, default=str).encode("utf-8")).hexdigest()``.
`CowDB.hash` feeds SHA-256 exactly those bytes: the snapshot's tables are cached as canonical bytes
with each record's span, and only the records this episode wrote are re-serialised and spliced in,
so a hash costs one SHA-256 pass instead of a full re-serialisation (an untouched view reuses the
snapshot's hash).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Schema", "Snapshot", "CowDB", "load_snapshot", "canonical_json", "render_json", "deep_update", "copy_json"]

_MISSING = object()


_CANONICAL = json.JSONEncoder(sort_keys=True, default=str).encode
_RENDER = json.JSONEncoder(default=str).encode


def canonical_json(value: Any) -> str:
    """tau2's hashed form of a value: ``json.dumps(value, sort_keys=True, default=str)``."""
    return _CANONICAL(value)


def render_json(value: Any) -> str:
    """tau2's rendering of a tool result: ``json.dumps(value, default=str)`` (one shared encoder)."""
    return _RENDER(value)


def copy_json(value: Any) -> Any:
    """Deep copy of a JSON-like value (dicts and lists copied, scalars shared); ~10x faster than deepcopy."""
    t = type(value)
    if t is dict:
        return {k: copy_json(v) for k, v in value.items()}
    if t is list:
        return [copy_json(v) for v in value]
    return value


def deep_update(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """Recursive dict merge as tau2 applies ``initialization_data``: nested dicts merge, anything else replaces.

    Returns a new dict; neither argument is modified.
    """
    out = dict(base)
    for k, v in update.items():
        if k in out and isinstance(out[k], dict) and isinstance(v, dict):
            out[k] = deep_update(out[k], v)
        else:
            out[k] = copy_json(v)
    return out


# ----------------------------------------------------------------------------------------------
# Schema: the subset of tau2's pydantic data models that decides field order, defaults and floats
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Schema:
    """Shape of a value in a tau2 database (a tiny stand-in for tau2's pydantic models).

    kind: ``"model"`` (ordered ``fields``: name -> (schema, default or _MISSING)), ``"dict"`` and
    ``"list"`` (``item``), ``"float"`` (ints become floats, as pydantic's lax float does),
    ``"any"`` (kept as is), ``"union"`` (``variants`` chosen by the value of ``tag``).
    """

    kind: str
    fields: tuple[tuple[str, "Schema", Any], ...] = ()
    item: "Schema | None" = None
    tag: str = ""
    variants: tuple[tuple[str, "Schema"], ...] = ()

    def normalise(self, value: Any) -> Any:
        """Return ``value`` in model form: fields in model order, defaults filled, floats coerced.

        Unknown keys of a model are dropped (pydantic's default ``extra="ignore"``). Raises
        ValueError naming the field when a required field is missing.
        """
        k = self.kind
        if k == "any" or value is None:
            return copy_json(value)
        if k == "float":
            return float(value) if type(value) is int else value
        if k == "dict":
            return {key: self.item.normalise(v) for key, v in value.items()}  # type: ignore[union-attr]
        if k == "list":
            return [self.item.normalise(v) for v in value]  # type: ignore[union-attr]
        if k == "union":
            chosen = dict(self.variants).get(value.get(self.tag))
            if chosen is None:
                raise ValueError(f"{self.tag}={value.get(self.tag)!r} is not one of {[v for v, _ in self.variants]}")
            return chosen.normalise(value)
        out = {}
        for name, sub, default in self.fields:
            if name in value:
                out[name] = sub.normalise(value[name])
            elif default is _MISSING:
                raise ValueError(f"database record is missing required field {name!r}: {str(value)[:200]}")
            else:
                out[name] = copy_json(default)
        return out


ANY = Schema("any")
FLOAT = Schema("float")


def model(*fields: tuple[str, Schema] | tuple[str, Schema, Any]) -> Schema:
    """A model schema from ``(name, schema)`` (required) or ``(name, schema, default)`` tuples."""
    return Schema("model", fields=tuple((f[0], f[1], f[2] if len(f) == 3 else _MISSING) for f in fields))


def dict_of(item: Schema) -> Schema:
    return Schema("dict", item=item)


def list_of(item: Schema) -> Schema:
    return Schema("list", item=item)


def union(tag: str, **variants: Schema) -> Schema:
    return Schema("union", tag=tag, variants=tuple(variants.items()))


# ----------------------------------------------------------------------------------------------
# Snapshot: parsed once per process
# ----------------------------------------------------------------------------------------------


class Snapshot:
    """An immutable, normalised database (never mutated after construction).

    Attributes:
        tables: table name -> {key: record} (or a list of records); the top-level values of the
            database object.
        path: file it was read from (or None).
    """

    def __init__(self, data: dict[str, Any], tables: dict[str, Schema] | None = None, path: Path | None = None):
        if not isinstance(data, dict):
            raise ValueError(f"a tau2 database must be a JSON object of tables, got {type(data).__name__}")
        tables = tables or {}
        self.path = path
        self.schemas = tables
        self.tables: dict[str, Any] = {}
        for name, value in data.items():
            sch = tables.get(name)
            if sch is not None and isinstance(value, list):  # a list of records (telecom)
                value = [sch.normalise(v) for v in value]
            elif sch is not None:
                value = {k: sch.normalise(v) for k, v in value.items()}
            self.tables[name] = value
        self._fragments: dict[str, dict[str, str]] = {}
        self._table_json: dict[str, str] = {}
        self._table_bytes: dict[str, tuple[bytes, dict[Any, tuple[int, int]]]] = {}
        self._lock = threading.Lock()
        self._record_ids: set[int] | None = None
        self._rendered: dict[int, str] = {}
        self._hash: str | None = None

    def rendered(self, record: Any) -> str | None:
        """``json.dumps(record, default=str)`` of a snapshot record, cached; None for other objects.

        Snapshot records never change and live as long as the snapshot, so their ``id`` is a safe key.
        """
        key = id(record)
        s = self._rendered.get(key)
        if s is not None:
            return s
        if self._record_ids is None:
            self._record_ids = {id(r) for t in self.tables.values() if isinstance(t, dict) for r in t.values()}
        if key not in self._record_ids:
            return None
        s = _RENDER(record)
        self._rendered[key] = s
        return s

    def pristine_hash(self) -> str:
        """tau2's hash of the snapshot itself (computed once)."""
        if self._hash is None:
            self._hash = CowDB(self).hash_uncached()
        return self._hash

    def is_table(self, name: str) -> bool:
        return isinstance(self.tables.get(name), dict)

    def fragment(self, table: str, key: str) -> str:
        """``'"key": <canonical json of the record>'`` for a snapshot record (cached)."""
        frags = self._fragments.get(table)
        if frags is None:
            with self._lock:
                frags = self._fragments.get(table)
                if frags is None:
                    frags = {k: f"{json.dumps(k)}: {canonical_json(v)}" for k, v in self.tables[table].items()}
                    self._fragments[table] = frags
        return frags[key]

    def table_json(self, table: str) -> str:
        """Canonical JSON of a whole snapshot table (cached)."""
        s = self._table_json.get(table)
        if s is None:
            value = self.tables[table]
            if isinstance(value, dict):
                s = "{" + ", ".join(self.fragment(table, k) for k in sorted(value)) + "}"
            else:
                s = canonical_json(value)
            self._table_json[table] = s
        return s

    def table_index(self, table: str) -> tuple[bytes, dict[Any, tuple[int, int]]]:
        """A table's canonical JSON as bytes and each record's ``(start, end)`` span in it (cached).

        The span covers the record's fragment (``'"key": <record>'``), so a hash can splice new
        fragments between untouched byte ranges without rebuilding the table.
        """
        hit = self._table_bytes.get(table)
        if hit is None:
            text = self.table_json(table)
            spans: dict[Any, tuple[int, int]] = {}
            pos = 1  # after "{"
            for k in sorted(self.tables[table]):
                n = len(self.fragment(table, k))  # ASCII (ensure_ascii), so characters == bytes
                spans[k] = (pos, pos + n)
                pos += n + 2  # ", "
            hit = (text.encode("ascii"), spans)
            self._table_bytes[table] = hit
        return hit


_CACHE: dict[tuple[str, int, int, str], Snapshot] = {}
_CACHE_LOCK = threading.Lock()


def load_snapshot(path: str | Path, tables: dict[str, Schema] | None = None, cache_key: str = "") -> Snapshot:
    """Parse a database file (``.json`` or ``.toml``) once per process; later calls reuse it.

    The cache key is (resolved path, mtime_ns, size, cache_key), so an edited file is re-read.

    Raises:
        FileNotFoundError: the file does not exist (the message names the path).
        ValueError: the file is not a JSON/TOML object of tables, or a record misses a field.
    """
    p = Path(path).resolve()
    if not p.is_file():
        raise FileNotFoundError(f"tau2 database file not found: {p} (set TAU2_DATA_DIR or pass data_dir=)")
    st = p.stat()
    key = (str(p), st.st_mtime_ns, st.st_size, cache_key)
    snap = _CACHE.get(key)
    if snap is not None:
        return snap
    with _CACHE_LOCK:
        snap = _CACHE.get(key)
        if snap is None:
            if p.suffix == ".toml":
                import tomllib

                data = tomllib.loads(p.read_text(encoding="utf-8"))
            else:
                data = json.loads(p.read_text(encoding="utf-8"))
            snap = Snapshot(data, tables, path=p)
            _CACHE[key] = snap
    return snap


# ----------------------------------------------------------------------------------------------
# CowDB: one episode's view
# ----------------------------------------------------------------------------------------------


class CowDB:
    """Copy-on-write view of a `Snapshot` for one episode.

    Reads (`get`, `values`, `items`, `__contains__`) return snapshot records directly: callers must
    treat them as read-only. `edit` returns the episode's private copy of a record (copied on the
    first write), `put` adds or replaces a record. `overlay` holds exactly the records this episode
    touched, so copies, comparisons and hashes cost O(touched records).
    """

    __slots__ = ("snapshot", "overlay", "scalars")

    def __init__(self, snapshot: Snapshot):
        self.snapshot = snapshot
        self.overlay: dict[str, dict[str, Any]] = {}
        self.scalars: dict[str, Any] = {}

    # -- reads ---------------------------------------------------------------------------------
    def get(self, table: str, key: Any, default: Any = None) -> Any:
        ov = self.overlay.get(table)
        if ov is not None:
            try:
                return ov[key]
            except (KeyError, TypeError):
                pass
        try:
            return self.snapshot.tables[table][key]
        except (KeyError, TypeError):
            return default

    def contains(self, table: str, key: Any) -> bool:
        """``key in db.<table>`` with Python semantics (an unhashable key raises TypeError, as in tau2)."""
        ov = self.overlay.get(table)
        if ov is not None and key in ov:
            return True
        return key in self.snapshot.tables[table]

    def keys(self, table: str) -> Iterator[str]:
        """Keys in dict order: snapshot order, then records added in this episode."""
        base = self.snapshot.tables[table]
        yield from base
        ov = self.overlay.get(table)
        if ov:
            for k in ov:
                if k not in base:
                    yield k

    def items(self, table: str) -> Iterator[tuple[str, Any]]:
        base = self.snapshot.tables[table]
        ov = self.overlay.get(table)
        if not ov:
            yield from base.items()
            return
        for k, v in base.items():
            yield k, ov.get(k, v)
        for k, v in ov.items():
            if k not in base:
                yield k, v

    def values(self, table: str) -> Iterator[Any]:
        for _, v in self.items(table):
            yield v

    def size(self, table: str) -> int:
        base = self.snapshot.tables[table]
        ov = self.overlay.get(table)
        return len(base) + (sum(1 for k in ov if k not in base) if ov else 0)

    # -- writes --------------------------------------------------------------------------------
    def edit(self, table: str, key: str) -> Any:
        """The episode's own (mutable) copy of an existing record; KeyError if absent."""
        ov = self.overlay.setdefault(table, {})
        rec = ov.get(key, _MISSING)
        if rec is _MISSING:
            rec = copy_json(self.snapshot.tables[table][key])
            ov[key] = rec
        return rec

    def put(self, table: str, key: str, record: Any) -> None:
        self.overlay.setdefault(table, {})[key] = record

    def set_scalar(self, name: str, value: Any) -> None:
        """Replace a non-table top-level value."""
        self.scalars[name] = value

    # -- whole-database operations -------------------------------------------------------------
    def fork(self) -> "CowDB":
        """An independent copy of this view (copies only the touched records)."""
        other = CowDB(self.snapshot)
        other.overlay = {t: {k: copy_json(v) for k, v in ov.items()} for t, ov in self.overlay.items()}
        other.scalars = copy_json(self.scalars)
        return other

    def to_dict(self) -> dict[str, Any]:
        """The full database as plain data (copies everything; for diffs and debugging only)."""
        out: dict[str, Any] = {}
        for name, value in self.snapshot.tables.items():
            if name in self.scalars:
                out[name] = copy_json(self.scalars[name])
            elif isinstance(value, dict):
                out[name] = {k: copy_json(v) for k, v in self.items(name)}
            else:
                out[name] = copy_json(value)
        return out

    def canonical(self) -> str:
        """``json.dumps(db, sort_keys=True, default=str)`` of the whole database, built from cached fragments."""
        snap = self.snapshot
        parts = []
        for name in sorted(snap.tables):
            if name in self.scalars:
                body = canonical_json(self.scalars[name])
            elif not snap.is_table(name):
                body = snap.table_json(name)
            else:
                ov = self.overlay.get(name)
                if not ov:
                    body = snap.table_json(name)
                else:
                    base = snap.tables[name]
                    keys = sorted(set(base).union(ov)) if any(k not in base for k in ov) else sorted(base)
                    frag = snap.fragment
                    body = "{" + ", ".join(
                        f"{json.dumps(k)}: {canonical_json(ov[k])}" if k in ov else frag(name, k) for k in keys
                    ) + "}"
            parts.append(f"{json.dumps(name)}: {body}")
        return "{" + ", ".join(parts) + "}"

    def hash(self) -> str:
        """tau2 v0.2.0's database hash (SHA-256 hex of the canonical JSON, UTF-8); cached for an untouched view."""
        if not self.scalars and not any(self.overlay.values()):
            return self.snapshot.pristine_hash()
        return self.hash_uncached()

    def hash_uncached(self) -> str:
        """`hash` computed every time: SHA-256 fed with the snapshot's cached table bytes, the touched
        records' new fragments spliced in between (equal to hashing `canonical`)."""
        snap = self.snapshot
        h = hashlib.sha256(b"{")
        for i, name in enumerate(sorted(snap.tables)):
            h.update(f"{', ' if i else ''}{json.dumps(name)}: ".encode("ascii"))
            ov = self.overlay.get(name)
            if name in self.scalars:
                h.update(canonical_json(self.scalars[name]).encode("ascii"))
            elif not snap.is_table(name):
                h.update(snap.table_json(name).encode("ascii"))
            elif not ov:
                h.update(snap.table_index(name)[0])
            else:
                data, spans = snap.table_index(name)
                if any(k not in spans for k in ov):  # records added: rebuild this table's text
                    base = snap.tables[name]
                    h.update(("{" + ", ".join(
                        f"{json.dumps(k)}: {canonical_json(ov[k])}" if k in ov else snap.fragment(name, k)
                        for k in sorted(set(base).union(ov))) + "}").encode("ascii"))
                    continue
                view, pos = memoryview(data), 0
                for key in sorted(ov, key=lambda k: spans[k][0]):
                    start, end = spans[key]
                    h.update(view[pos:start])
                    h.update(f"{json.dumps(key)}: {canonical_json(ov[key])}".encode("ascii"))
                    pos = end
                h.update(view[pos:])
        h.update(b"}")
        return h.hexdigest()

    def same_state(self, other: "CowDB") -> bool:
        """True iff ``self.hash() == other.hash()`` (without hashing when both share a snapshot).

        Records are compared by canonical JSON, so ``25`` and ``25.0`` differ exactly as in the hash.
        """
        if other.snapshot is not self.snapshot:
            return self.hash() == other.hash()
        for name in set(self.scalars) | set(other.scalars):
            a = self.scalars.get(name, self.snapshot.tables.get(name))
            b = other.scalars.get(name, self.snapshot.tables.get(name))
            if canonical_json(a) != canonical_json(b):
                return False
        tables = set(self.overlay) | set(other.overlay)
        for name in tables:
            a_ov = self.overlay.get(name, {})
            b_ov = other.overlay.get(name, {})
            base = self.snapshot.tables[name]
            for key in set(a_ov) | set(b_ov):
                a = a_ov.get(key, base.get(key, _MISSING))
                b = b_ov.get(key, base.get(key, _MISSING))
                if a is b:
                    continue
                if a is _MISSING or b is _MISSING:
                    return False
                if canonical_json(a) != canonical_json(b):
                    return False
        return True

    def touched(self) -> dict[str, list[str]]:
        """Table -> keys of the records this episode wrote (possibly unchanged in value)."""
        return {t: list(ov) for t, ov in self.overlay.items() if ov}
