"""CallCache / CachedChatModel: record against a real local server, replay with it stopped."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import sqlite3
import threading

import pytest

from orchestra_gym.tools.cache import CacheError, CachedChatModel, CallCache, chat_request, request_key
from orchestra_gym.tools.llm import OpenAIChatModel, RetryPolicy
from orchestra_gym.types import Message, ToolSpec
from tests.servers import OpenAIServer

SECRET = "sk-cache-test-SECRET-987654321"
KEY_ENV = "ORCHESTRA_TEST_CACHE_KEY"
TOOL = ToolSpec("lookup", "Look something up.", {"type": "object", "properties": {"q": {"type": "string"}}})


def _model(url: str) -> OpenAIChatModel:
    return OpenAIChatModel("gpt-5-mini", url, api_key_env=KEY_ENV,
                           retry=RetryPolicy(max_retries=0, timeout_s=2.0))


def _conversation() -> list[list[Message]]:
    return [[Message("system", "sys"), Message("user", f"question {i}")] for i in range(3)]


def test_record_then_replay_with_server_stopped(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    db = tmp_path / "calls.sqlite"
    recorded = []
    with OpenAIServer(api_key=SECRET) as srv:
        srv.queue_reply("", tool_calls=[{"name": "lookup", "arguments": {"q": "x"}, "id": "c1"}], usage=(321, 45))
        m = CachedChatModel(_model(srv.base_url), CallCache(db, mode="record"))
        for msgs in _conversation():
            recorded.append(m.complete(msgs, tools=[TOOL], temperature=0.0))
        assert srv.count == 3 and all(r.ok for r in recorded)
    assert recorded[0].message.tool_calls[0].arguments == {"q": "x"}
    assert SECRET.encode() not in db.read_bytes()
    # replay: the server is gone, a different key is set; every call still answers from the cache
    monkeypatch.setenv(KEY_ENV, "sk-another-key")
    replay = CachedChatModel(_model("http://127.0.0.1:9/v1"), CallCache(db, mode="replay"))
    for msgs, rec in zip(_conversation(), recorded):
        r = replay.complete(msgs, tools=[TOOL], temperature=0.0)
        assert r.ok and r.raw["cache"] == "hit"
        assert r.message == rec.message and r.usage == rec.usage  # same tokens, cost and latency
        assert r.usage.latency_s == rec.usage.latency_s > 0
    # a counting server sees zero requests in replay mode, also through the async path
    with OpenAIServer() as srv2:
        replay2 = CachedChatModel(_model(srv2.base_url), CallCache(db, mode="replay"))
        r = asyncio.run(replay2.acomplete(_conversation()[1], tools=[TOOL], temperature=0.0))
        assert r.ok and r.message == recorded[1].message and srv2.count == 0


def test_replay_miss_is_error_result_naming_key(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    cache = CallCache(tmp_path / "c.sqlite", mode="replay")
    with OpenAIServer() as srv:
        m = CachedChatModel(_model(srv.base_url), cache)
        msgs = [Message("user", "never recorded")]
        r = m.complete(msgs, temperature=0.5)
        key = request_key("chat", chat_request("gpt-5-mini", msgs, None, {"temperature": 0.5}))
        assert not r.ok and "cache miss in replay mode" in r.error and key in r.error and "fix:" in r.error
        assert srv.count == 0 and r.to_tool_result().error


def test_record_missing_calls_once_and_skips_errors(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    with OpenAIServer() as srv:
        m = CachedChatModel(_model(srv.base_url), CallCache(tmp_path / "c.sqlite", mode="record-missing"))
        srv.queue_fault("500")
        bad = m.complete([Message("user", "a")])
        assert not bad.ok and len(m.cache) == 0  # failures are not stored
        first = m.complete([Message("user", "a")])
        again = m.complete([Message("user", "a")])
        assert srv.count == 2 and first.ok and again.raw["cache"] == "hit" and again.message == first.message
        other = m.complete([Message("user", "a")], seed=1)  # sampling is part of the key
        assert srv.count == 3 and "cache" not in other.raw
        off = CachedChatModel(_model(srv.base_url), CallCache(tmp_path / "c.sqlite", mode="off"))
        off.complete([Message("user", "a")])
        assert srv.count == 4 and len(m.cache) == 2


def test_generic_get_put_for_search(tmp_path):
    cache = CallCache(tmp_path / "s.sqlite", mode="record")
    req = {"query": "capital of France", "max_results": 3}
    assert cache.get("web_search", req) is None
    key = cache.put("web_search", req, {"results": [{"url": "u", "content": "Paris"}], "usage": {"cost_usd": 0.01}})
    assert key == request_key("web_search", {"max_results": 3, "query": "capital of France"})  # key order free
    assert cache.get("web_search", req)["results"][0]["content"] == "Paris"
    assert cache.get("chat", req) is None  # kind is part of the key
    assert CallCache(tmp_path / "s.sqlite", mode="replay").get("web_search", req) is not None


def test_corrupt_and_foreign_files_are_clear_errors(tmp_path):
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(CacheError, match=r"junk.sqlite is not a SQLite database.*fix:"):
        CallCache(junk)
    foreign = tmp_path / "foreign.sqlite"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE users (id INTEGER)")
    con.commit()
    con.close()
    with pytest.raises(CacheError, match=r"another application.*users"):
        CallCache(foreign, mode="replay")
    other_app = tmp_path / "app.sqlite"
    con = sqlite3.connect(other_app)
    con.execute("PRAGMA application_id = 1234")
    con.commit()
    con.close()
    with pytest.raises(CacheError, match="application_id=1234"):
        CallCache(other_app)
    with pytest.raises(ValueError, match="unknown cache mode 'replya'"):
        CallCache(tmp_path / "x.sqlite", mode="replya")
    # a damaged page inside a real cache file
    good = tmp_path / "good.sqlite"
    c = CallCache(good, mode="record")
    for i in range(200):
        c.put("k", {"i": i}, {"v": "x" * 200})
    c.close()
    data = bytearray(good.read_bytes()) if good.stat().st_size > 8192 else None
    if data is None:  # everything still in the WAL: checkpoint first
        con = sqlite3.connect(good)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()
        data = bytearray(good.read_bytes())
    data[100:4096 * 3] = b"\xff" * (4096 * 3 - 100)
    good.write_bytes(bytes(data))
    for p in (tmp_path / "good.sqlite-wal", tmp_path / "good.sqlite-shm"):
        p.unlink(missing_ok=True)
    with pytest.raises(CacheError, match="good.sqlite"):
        CallCache(good, mode="replay").get("k", {"i": 5})


def _writer(path: str, worker: int, n: int) -> None:
    cache = CallCache(path, mode="record", busy_timeout_s=60)
    for i in range(n):
        cache.put("w", {"worker": worker, "i": i}, {"value": worker * 1000 + i})


def test_concurrent_writers_lose_nothing(tmp_path):
    path = str(tmp_path / "conc.sqlite")
    CallCache(path, mode="record")
    threads = [threading.Thread(target=_writer, args=(path, w, 40)) for w in range(6)]
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(path, 100 + w, 60)) for w in range(3)]
    for p in procs:
        p.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    cache = CallCache(path, mode="replay")
    assert len(cache) == 6 * 40 + 3 * 60
    for w, n in [(0, 40), (5, 40), (100, 60), (102, 60)]:
        assert [cache.get("w", {"worker": w, "i": i})["value"] for i in range(n)] == [w * 1000 + i for i in range(n)]


def test_cache_pickles(tmp_path):
    import pickle

    c = CallCache(tmp_path / "p.sqlite", mode="record")
    c.put("k", {"a": 1}, {"b": 2})
    c2 = pickle.loads(pickle.dumps(c))
    assert c2.get("k", {"a": 1}) == {"b": 2} and c2.mode == "record"


def test_empty_cache_file_is_an_error_in_replay_and_a_warning_in_record(tmp_path, caplog):
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    with pytest.raises(CacheError, match=r"is empty \(0 bytes\).*fix: point the cache at the file the run recorded"):
        CallCache(empty, mode="replay")
    for mode in ("record", "record-missing"):
        empty.write_bytes(b"")
        with caplog.at_level("WARNING", logger="orchestra_gym.tools.cache"):
            cache = CallCache(empty, mode=mode)
        assert f"cache file {empty} is empty (0 bytes); starting a new cache" in caplog.text
        cache.put("search", {"q": mode}, {"content": "x"})
        assert cache.get("search", {"q": mode}) == {"content": "x"}
        cache.close()
        caplog.clear()
    assert CallCache(empty, mode="replay").get("search", {"q": "record-missing"}) == {"content": "x"}


def test_lone_surrogate_in_a_cached_request_costs_nothing_more(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    with OpenAIServer(api_key=SECRET) as srv:
        m = CachedChatModel(_model(srv.base_url), CallCache(tmp_path / "c.sqlite", mode="record-missing"))
        bad = [Message("user", "order \ud800 please")]
        first, again = m.complete(bad), m.complete(bad)
        assert first.ok and again.ok and again.raw["cache"] == "hit" and srv.count == 1
        assert m.complete([Message("user", "next")]).ok and srv.count == 2
