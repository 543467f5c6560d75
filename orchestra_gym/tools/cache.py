"""Record/replay cache of model and search calls in SQLite (stdlib ``sqlite3``, WAL journal).

A training or evaluation run with ``mode="record"`` stores every successful call; a later run
with ``mode="replay"`` returns the recorded content, tool calls, usage (tokens, cost in USD) and
latency (s) without contacting any endpoint, so the run repeats exactly at zero real cost.

Modes:
    ``"off"``: pass through, store nothing.
    ``"record"``: always call, store (overwrite) the result.
    ``"replay"``: never call; a miss is an error result naming the key (never an exception).
    ``"record-missing"``: return a recorded result when there is one, else call and store.

Key: sha256 of the canonical JSON (sorted keys, no whitespace) of ``{"kind", "request"}``, where a
chat request is ``{model, messages, tools, sampling}`` in OpenAI form. The key never includes
API keys or endpoint URLs (a moved endpoint still replays). Failed calls are not stored.

Files: a database carries ``PRAGMA application_id = 0x4F524348`` ("ORCH") and a ``meta`` table with
``schema = orchestra-call-cache`` and ``version``; any other SQLite file or a non-SQLite file gives a
`CacheError` naming the file and the fix. A 0-byte file (a truncated copy, a ``touch``) is a
`CacheError` in ``replay`` mode (a replay against an empty cache is never what was meant) and a
logged warning in the recording modes, which then initialise it. Each thread and process uses its own connection; writes
are single statements under WAL with a busy timeout, so concurrent writers (threads or
processes) lose nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Callable

from orchestra_gym.errors import ConfigError, OrchestraError, did_you_mean
from orchestra_gym.parsing import scrub_text
from orchestra_gym.tools.llm import ChatModel, ChatResponse, messages_to_openai, tools_to_openai
from orchestra_gym.types import Message, ToolResult, ToolSpec

__all__ = ["CallCache", "CachedChatModel", "cached_tool_call", "CacheError", "MODES", "canonical_json", "request_key", "chat_request"]

log = logging.getLogger(__name__)

MODES = ("off", "record", "replay", "record-missing")
APPLICATION_ID = 0x4F524348  # "ORCH"
SCHEMA_NAME = "orchestra-call-cache"
SCHEMA_VERSION = 1


class CacheError(OrchestraError, RuntimeError):
    """The cache file cannot be used (corrupt, foreign, newer version); the message says which and how to fix."""


def canonical_json(obj: Any) -> str:
    """Canonical JSON text: sorted keys, compact separators, UTF-8 kept (``ensure_ascii=False``)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def request_key(kind: str, request: dict[str, Any]) -> str:
    """Hex sha256 of the canonical JSON of ``{"kind": kind, "request": request}``."""
    return hashlib.sha256(canonical_json({"kind": kind, "request": request}).encode("utf-8")).hexdigest()


def chat_request(model: str, messages: list[Message | dict[str, Any]], tools: list[ToolSpec | dict[str, Any]] | None,
                 sampling: dict[str, Any]) -> dict[str, Any]:
    """The canonical chat request used for cache keys: model, OpenAI-form messages and tools, sampling
    (lone surrogates replaced by U+FFFD, as the request body has them: `parsing.scrub_text`)."""
    return scrub_text({"model": model, "messages": messages_to_openai(messages), "tools": tools_to_openai(tools) or [],
                       "sampling": dict(sampling)})


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL
);
"""


class CallCache:
    """A SQLite record/replay store (see the module docstring).

    Args:
        path: database file (created with its parent folders when missing); ``":memory:"`` is not
            supported (use a temporary file).
        mode: one of `MODES`.
        busy_timeout_s: how long a writer waits for a lock held by another connection, seconds.

    Raises:
        ConfigError: unknown mode.
        CacheError: the file is not a SQLite database, belongs to another application, has a
            newer schema version, or is empty (0 bytes) in ``replay`` mode.
    """

    def __init__(self, path: "str | os.PathLike[str]", mode: str = "record-missing", busy_timeout_s: float = 30.0):
        if mode not in MODES:
            raise ConfigError(f"unknown cache mode {mode!r}{did_you_mean(mode, MODES)}; known modes: {MODES}")
        self.path = Path(path)
        self.mode = mode
        self.busy_timeout_s = float(busy_timeout_s)
        self._local = threading.local()
        if mode != "off":
            self._check_not_empty()
            self._conn()  # validate / create now, not at the first call

    def __repr__(self) -> str:
        return f"CallCache(path={str(self.path)!r}, mode={self.mode!r})"

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_local", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._local = threading.local()

    # -- connection and schema ------------------------------------------------------------------
    def _bad(self, problem: str) -> CacheError:
        return CacheError(f"cache file {self.path} {problem}; fix: move or delete it, or point the cache at "
                          f"another path (mode={self.mode!r})")

    def _check_not_empty(self) -> None:
        try:
            empty = self.path.stat().st_size == 0
        except OSError:
            return  # missing: created (record modes) or every lookup a miss (replay)
        if not empty:
            return
        if self.mode == "replay":
            raise CacheError(f"cache file {self.path} is empty (0 bytes): replaying against it would miss every call; "
                             f"fix: point the cache at the file the run recorded, or record first "
                             f"(mode='record' or 'record-missing')")
        log.warning("cache file %s is empty (0 bytes); starting a new cache in it (mode=%r)", self.path, self.mode)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is not None and getattr(self._local, "pid", None) == os.getpid():
            return conn
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(self.path), timeout=self.busy_timeout_s, isolation_level=None,
                               check_same_thread=True)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.DatabaseError as e:
            conn.close()
            raise self._bad(f"is not a SQLite database ({e})") from None
        if app_id not in (0, APPLICATION_ID) or (app_id == 0 and tables):
            conn.close()
            raise self._bad(f"is a SQLite database of another application (application_id={app_id}, "
                            f"tables={sorted(tables)})")
        try:
            if app_id == 0:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    if conn.execute("PRAGMA application_id").fetchone()[0] == 0:  # nobody else initialised it
                        for stmt in filter(str.strip, _SCHEMA.split(";")):
                            conn.execute(stmt)
                        conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?), ('version', ?)",
                                     (SCHEMA_NAME, str(SCHEMA_VERSION)))
                        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError as e:
            conn.close()
            raise self._bad(f"is damaged or unreadable ({e})") from None
        if meta.get("schema") != SCHEMA_NAME:
            conn.close()
            raise self._bad(f"has meta schema {meta.get('schema')!r}, expected {SCHEMA_NAME!r}")
        if int(meta.get("version", "0")) > SCHEMA_VERSION:
            conn.close()
            raise CacheError(f"cache file {self.path} has schema version {meta.get('version')}, newer than this "
                             f"orchestra ({SCHEMA_VERSION}); fix: upgrade orchestra or use another path")
        self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def close(self) -> None:
        """Close this thread's connection."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # -- generic store --------------------------------------------------------------------------
    def key(self, kind: str, request: dict[str, Any]) -> str:
        """Cache key of a request (see `request_key`)."""
        return request_key(kind, request)

    def get(self, kind: str, request: dict[str, Any]) -> dict[str, Any] | None:
        """The stored response dict for `request`, or None (always None in mode ``"off"``).

        Raises:
            CacheError: unreadable database.
        """
        if self.mode == "off":
            return None
        try:
            row = self._conn().execute("SELECT response FROM calls WHERE key = ?",
                                       (request_key(kind, request),)).fetchone()
        except sqlite3.DatabaseError as e:
            raise self._bad(f"could not be read ({e})") from None
        return json.loads(row[0]) if row else None

    def put(self, kind: str, request: dict[str, Any], response: dict[str, Any]) -> str:
        """Store `response` (a JSON-able dict) for `request`; returns the key. No-op in modes ``off``
        and ``replay``.

        Raises:
            CacheError: unwritable database. TypeError/ValueError: response not JSON-able.
        """
        key = request_key(kind, request)
        if self.mode in ("off", "replay"):
            return key
        row = (key, kind, canonical_json(request), canonical_json(response), time.time())
        try:
            self._conn().execute("INSERT OR REPLACE INTO calls VALUES (?, ?, ?, ?, ?)", row)
        except sqlite3.DatabaseError as e:
            raise self._bad(f"could not be written ({e})") from None
        return key

    def __len__(self) -> int:
        return int(self._conn().execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    def keys(self) -> list[str]:
        """All stored keys, sorted."""
        return [r[0] for r in self._conn().execute("SELECT key FROM calls ORDER BY key")]


def cached_tool_call(cache: "CallCache | None", kind: str, request: dict[str, Any],
                     call: "Callable[[], ToolResult]") -> ToolResult:
    """Run a tool call through `cache` (any tool whose result is a `ToolResult`, e.g. web search).

    ``request`` is the canonical request (no secrets). Modes as in `CallCache`; replayed results
    carry the recorded usage and ``metadata["cache"] = "hit"``; failed results are not stored; a
    replay miss is an error `ToolResult` naming the key. Never raises for cache problems.
    """
    if cache is None or cache.mode == "off":
        return call()
    try:
        if cache.mode in ("replay", "record-missing"):
            hit = cache.get(kind, request)
            if hit is not None:
                res = ToolResult.from_dict(hit)
                res.metadata["cache"] = "hit"
                return res
            if cache.mode == "replay":
                return ToolResult(
                    content=f"cache miss in replay mode for {kind}, key {request_key(kind, request)} (cache "
                            f"{cache.path}); fix: record it first with mode='record' or 'record-missing'",
                    error=True, metadata={"cache": "miss"})
    except CacheError as e:
        return ToolResult(content=str(e), error=True, metadata={"cache": "error"})
    res = call()
    if not res.error:
        try:
            cache.put(kind, request, res.to_dict())
        except CacheError as e:
            res.metadata["cache_error"] = str(e)
    return res


class CachedChatModel:
    """Wrap any `ChatModel` with a `CallCache` (record / replay per the cache's mode).

    Replayed responses carry the recorded usage (tokens, cost USD, latency s) and ``raw["cache"] =
    "hit"``; a miss in replay mode returns an error `ChatResponse` naming the key and the fix.
    """

    kind = "chat"

    def __init__(self, inner: ChatModel, cache: CallCache) -> None:
        self.inner = inner
        self.cache = cache
        self.model = inner.model

    def __repr__(self) -> str:
        return f"CachedChatModel({self.inner!r}, {self.cache!r})"

    def __getattr__(self, name: str) -> Any:  # pricing, close, ... of the inner model
        if name in ("inner", "cache"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _lookup(self, messages: list[Message], tools: list[ToolSpec] | None,
                sampling: dict[str, Any]) -> tuple[dict[str, Any], ChatResponse | None]:
        req = chat_request(self.model, messages, tools, sampling)
        mode = self.cache.mode
        if mode in ("replay", "record-missing"):
            try:
                hit = self.cache.get(self.kind, req)
            except CacheError as e:
                return req, ChatResponse.failure(str(e), model=self.model, cache="error")
            if hit is not None:
                resp = ChatResponse.from_dict(hit)
                resp.raw["cache"] = "hit"
                return req, resp
            if mode == "replay":
                key = request_key(self.kind, req)
                return req, ChatResponse.failure(
                    f"cache miss in replay mode for model {self.model!r}, key {key} (cache {self.cache.path}); "
                    f"fix: record it first with mode='record' or 'record-missing'", model=self.model, cache="miss")
        return req, None

    def _store(self, req: dict[str, Any], resp: ChatResponse) -> ChatResponse:
        if resp.error is None and self.cache.mode in ("record", "record-missing"):
            try:
                self.cache.put(self.kind, req, resp.to_dict())
            except CacheError as e:
                resp.raw["cache_error"] = str(e)
        return resp

    def complete(self, messages: list[Message], tools: list[ToolSpec] | None = None, **sampling: Any) -> ChatResponse:
        """`ChatModel.complete` through the cache."""
        if self.cache.mode == "off":
            return self.inner.complete(messages, tools, **sampling)
        req, hit = self._lookup(messages, tools, sampling)
        if hit is not None:
            return hit
        return self._store(req, self.inner.complete(messages, tools, **sampling))

    async def acomplete(self, messages: list[Message], tools: list[ToolSpec] | None = None,
                        **sampling: Any) -> ChatResponse:
        """`ChatModel.acomplete` through the cache (SQLite access is synchronous and short)."""
        if self.cache.mode == "off":
            return await self.inner.acomplete(messages, tools, **sampling)
        req, hit = self._lookup(messages, tools, sampling)
        if hit is not None:
            return hit
        return self._store(req, await self.inner.acomplete(messages, tools, **sampling))

    def __call__(self, messages: list[Message], tools: list[ToolSpec] | None = None, **sampling: Any):
        """`complete` as a `ToolResult`."""
        return self.complete(messages, tools, **sampling).to_tool_result()
