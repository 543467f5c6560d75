"""The knowledge base of tau2's ``banking_knowledge`` domain and its retrieval variants.

Source followed: tau2-bench v1.0.1 ``domains/banking_knowledge/retrieval.py``,
``retrieval_mixins.py`` and ``knowledge/`` (``bm25_indexer``, ``bm25_retriever``,
``grep_retriever``), as recorded in ``tau2_v1_reference/banking_knowledge`` (its README).

Variants (tau2's names; a variant picks the agent's retrieval tools and the policy template):

============================  =====================  ================================================
variant                       retrieval tools        policy template (``prompts/``)
============================  =====================  ================================================
``bm25_grep`` (reference)     ``KB_search``, grep    ``classic_rag_bm25.md``
``bm25``                      ``KB_search``          ``classic_rag_bm25_no_grep.md``
``grep_only``                 ``grep``               ``grep_only.md``
``full_kb``                   none                   ``full_kb.md`` with all 698 documents inlined
``golden_retrieval``          none                   ``required_docs.md`` with the task's documents
``no_knowledge``              none                   ``no_knowledge.md``
``minilm_embeddings_grep``    ``KB_search``, grep    ``classic_rag_bm25.md`` (ours, see below)
``minilm_embeddings``         ``KB_search``          ``classic_rag_bm25_no_grep.md`` (ours)
============================  =====================  ================================================

- ``KB_search`` (BM25): tau2 uses ``rank_bm25.BM25Okapi`` over each document's ``content``,
  lower-cased and split on whitespace (queries too), top 10, ties in document load order.
  `BM25Okapi` below implements the same formula in NumPy float64 (k1 = 1.5, b = 0.75,
  idf = ln(N - n + 0.5) - ln(n + 0.5), a negative idf replaced by 0.25 x the mean idf, every
  query token counted, also repeated ones). ``bm25s`` (the project's BM25 library) is not used
  here: its idf has no epsilon floor for negative values and it de-duplicates query tokens, so its
  scores differ from tau2's printed 4-decimal scores.
- ``grep``: Python ``re`` over each document's content, case-insensitive; a pattern that does not
  compile is searched literally; documents ranked by the number of matches (stable), top 10.
- Output of both as tau2 prints it; ``KB_search`` ends with tau2's timing trailer. tau2 writes
  wall-clock milliseconds there; here it is always ``[Timing: retrieval=0ms, total=0ms]`` so that
  episodes stay deterministic (the reference does not record these numbers either).
- Load order: tau2 loads documents in ``Path.glob`` order (file-system dependent); here sorted by
  file name, so score ties are broken the same way on every machine.
- Embeddings: tau2's embedding variants (``openai_embeddings*``, ``qwen_embeddings*``,
  ``alltools``) call OpenAI / OpenRouter embedding APIs and the reranker variants an LLM; they are
  not offered. ``minilm_embeddings*`` use the project's offline dense search
  (`orchestra_gym.tools.search.LocalSearch`, all-MiniLM-L6-v2, cosine) under a distinct name: same
  tool name and output format as tau2's ``KB_search``, other scores and rankings.
"""

from __future__ import annotations

import json
import math
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from orchestra_gym.errors import ConfigError, did_you_mean

__all__ = [
    "KBDocument", "KnowledgeBase", "BM25Okapi", "Variant", "VARIANTS", "TAU2_API_VARIANTS",
    "get_variant", "load_knowledge_base", "build_policy", "format_results", "timing_trailer",
]


@dataclass(frozen=True)
class KBDocument:
    """One knowledge-base document (``documents/<id>.json``: ``id``, ``title``, ``content``)."""

    id: str
    title: str
    content: str


class BM25Okapi:
    """BM25 Okapi scores with ``rank_bm25`` 0.2.2's formula (the library tau2 v1.0.1 uses).

    Args:
        corpus: tokenised documents, list of token lists.
        k1, b, epsilon: rank_bm25's defaults (1.5, 0.75, 0.25).
    """

    def __init__(self, corpus: list[list[str]], k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25):
        self.k1, self.b = k1, b
        self.doc_len = np.array([len(d) for d in corpus], dtype=np.float64)
        self.avgdl = float(sum(len(d) for d in corpus)) / len(corpus)
        self.doc_freqs: list[dict[str, int]] = []
        df: dict[str, int] = {}
        for doc in corpus:
            freqs: dict[str, int] = {}
            for tok in doc:
                freqs[tok] = freqs.get(tok, 0) + 1
            self.doc_freqs.append(freqs)
            for tok in freqs:
                df[tok] = df.get(tok, 0) + 1
        n = len(corpus)
        self.idf: dict[str, float] = {}
        idf_sum, negative = 0.0, []
        for tok, freq in df.items():
            idf = math.log(n - freq + 0.5) - math.log(freq + 0.5)
            self.idf[tok] = idf
            idf_sum += idf
            if idf < 0:
                negative.append(tok)
        floor = epsilon * (idf_sum / len(self.idf))
        for tok in negative:
            self.idf[tok] = floor
        self._norm = self.k1 * (1 - self.b + self.b * self.doc_len / self.avgdl)
        # postings: token -> (indices of the documents that hold it, int64 [m]; its counts there, float64 [m])
        rows: dict[str, tuple[list[int], list[int]]] = {}
        for i, freqs in enumerate(self.doc_freqs):
            for tok, f in freqs.items():
                ids, counts = rows.setdefault(tok, ([], []))
                ids.append(i)
                counts.append(f)
        self._postings = {tok: (np.array(ids, dtype=np.int64), np.array(counts, dtype=np.float64))
                          for tok, (ids, counts) in rows.items()}

    def get_scores(self, query: list[str]) -> np.ndarray:
        """Scores of every document for the query tokens, float64 [n_docs], in corpus order.

        Bit-identical to rank_bm25's dense loop: a document without the token gets ``idf * 0.0`` there,
        which leaves its score unchanged, so only the documents in the token's postings are updated,
        with the same float64 expression in the same order.
        """
        score = np.zeros(len(self.doc_freqs))
        for q in query:
            hit = self._postings.get(q)
            if hit is not None:
                ids, counts = hit
                score[ids] += self.idf[q] * (counts * (self.k1 + 1) / (counts + self._norm[ids]))
        return score


class KnowledgeBase:
    """The 698 documents of ``documents/*.json`` and the indexes built over them (once per process).

    Attributes:
        documents: `KBDocument` list in load order (file names sorted).
    """

    def __init__(self, documents: list[KBDocument]):
        if not documents:
            raise ValueError("banking_knowledge knowledge base is empty; expected documents/*.json in the domain folder")
        self.documents = documents
        self.by_id = {d.id: d for d in documents}
        self._bm25: BM25Okapi | None = None
        self._dense: Any = None
        self._lock = threading.Lock()

    def bm25(self) -> BM25Okapi:
        """The BM25 index over the documents' content (built on first use)."""
        with self._lock:
            if self._bm25 is None:
                self._bm25 = BM25Okapi([d.content.lower().split() for d in self.documents])
            return self._bm25

    def bm25_search(self, query: str, top_k: int = 10) -> list[tuple[str, float]]:
        """tau2's ``BM25Retriever.retrieve``: ``(doc id, score)`` best first; [] for a blank query."""
        if not query or not query.strip():
            return []
        scores = self.bm25().get_scores(query.lower().split())
        order = np.argsort(-scores, kind="stable")[:min(top_k, len(scores))]  # ties in corpus order, as sorted()
        return [(self.documents[i].id, float(scores[i])) for i in order]

    def dense_search(self, query: str, top_k: int = 10) -> list[tuple[str, float]]:
        """Cosine similarity with the project's offline MiniLM encoder (`LocalSearch`, method ``dense``).

        Raises:
            orchestra_gym.tools.search.SearchError: the ``search`` extra is not installed (names it).
        """
        if not query or not query.strip():
            return []
        with self._lock:
            if self._dense is None:
                from orchestra_gym.tools.search import LocalSearch

                self._dense = LocalSearch([{"id": d.id, "title": d.title, "text": d.content} for d in self.documents],
                                          method="dense", name="KB_search")
        return [(h.id, h.score) for h in self._dense.search(query, k=top_k)]

    def grep(self, pattern: str, top_k: int = 10, case_sensitive: bool = False) -> list[tuple[str, float]]:
        """tau2's ``GrepRetriever.retrieve`` (see the module docstring).

        Raises:
            AttributeError: a non-string pattern (``.strip`` on it), as in tau2.
        """
        if not pattern.strip():
            return []
        flags = 0 if case_sensitive else re.IGNORECASE
        try:
            rx = re.compile(pattern, flags)
        except re.error:
            rx = re.compile(re.escape(pattern), flags)
        hits = []
        for d in self.documents:
            n = len(rx.findall(d.content))
            if n:
                hits.append((d.id, float(n)))
        hits.sort(key=lambda h: h[1], reverse=True)
        return hits[:top_k]

    def full_text(self) -> str:
        """Every document as ``## <title>\\n\\n<content>``, joined by ``\\n\\n---\\n\\n`` (tau2's full-KB prompt)."""
        return "\n\n---\n\n".join(f"## {d.title}\n\n{d.content}" for d in self.documents)


_KBS: dict[str, KnowledgeBase] = {}
_KB_LOCK = threading.Lock()


def load_knowledge_base(domain_dir: str | Path) -> KnowledgeBase:
    """The knowledge base of a ``banking_knowledge`` folder, parsed once per process.

    Raises:
        FileNotFoundError: no ``documents/`` folder (the message names it).
    """
    folder = Path(domain_dir) / "documents"
    key = str(folder.resolve())
    with _KB_LOCK:
        kb = _KBS.get(key)
        if kb is None:
            if not folder.is_dir():
                raise FileNotFoundError(f"banking_knowledge knowledge base not found: {folder} (expected documents/*.json)")
            docs = []
            for p in sorted(folder.glob("*.json")):
                raw = json.loads(p.read_text(encoding="utf-8"))
                docs.append(KBDocument(str(raw["id"]), str(raw["title"]), str(raw["content"])))
            kb = _KBS[key] = KnowledgeBase(docs)
        return kb


def timing_trailer() -> str:
    """tau2's ``KB_search`` trailer with a zero logical clock (see the module docstring)."""
    return "\n\n[Timing: retrieval=0ms, total=0ms]"


def format_results(kb: KnowledgeBase, results: list[tuple[str, float]]) -> str:
    """Numbered ``title / ID / Score (4 decimals) / Content`` blocks as tau2's retrieval tools print them."""
    blocks = []
    for i, (doc_id, score) in enumerate(results, 1):
        d = kb.by_id.get(doc_id)
        title = (d.title if d else "") or "Untitled"
        content = (d.content if d else "") or ""
        blocks.append(f"{i}. {title}\n   ID: {doc_id}\n   Score: {score:.4f}\n   Content: {content}\n")
    return "\n".join(blocks)


@dataclass(frozen=True)
class Variant:
    """A retrieval variant: ``kb_search`` (``"bm25"``, ``"dense"`` or None), ``grep``, the policy template."""

    name: str
    kb_search: str | None
    grep: bool
    template: str
    inline: str | None = None  # "full_kb" or "required_docs": what the template inlines


VARIANTS: dict[str, Variant] = {v.name: v for v in (
    Variant("bm25_grep", "bm25", True, "classic_rag_bm25.md"),
    Variant("bm25", "bm25", False, "classic_rag_bm25_no_grep.md"),
    Variant("grep_only", None, True, "grep_only.md"),
    Variant("full_kb", None, False, "full_kb.md", inline="full_kb"),
    Variant("golden_retrieval", None, False, "required_docs.md", inline="required_docs"),
    Variant("no_knowledge", None, False, "no_knowledge.md"),
    Variant("minilm_embeddings_grep", "dense", True, "classic_rag_bm25.md"),
    Variant("minilm_embeddings", "dense", False, "classic_rag_bm25_no_grep.md"),
)}

#: tau2 variants that need a network API (embeddings, LLM reranker) or a shell sandbox; not offered.
TAU2_API_VARIANTS = (
    "alltools", "alltools-qwen", "openai_embeddings", "openai_embeddings_grep", "openai_embeddings_reranker",
    "openai_embeddings_reranker_grep", "qwen_embeddings", "qwen_embeddings_grep", "qwen_embeddings_reranker",
    "qwen_embeddings_reranker_grep", "bm25_reranker", "bm25_reranker_grep", "terminal_use", "terminal_use_write",
)


def get_variant(name: str) -> Variant:
    """The `Variant` named ``name``.

    Raises:
        ConfigError: unknown name, or a tau2 variant that needs an API (the message says which to use).
    """
    v = VARIANTS.get(name)
    if v is not None:
        return v
    if name in TAU2_API_VARIANTS:
        raise ConfigError(f"retrieval={name!r}: tau2's variant needs an embedding/reranker API or a shell sandbox and "
                          f"is not available offline; use 'bm25_grep' (tau2's offline configuration), 'full_kb', or "
                          f"'minilm_embeddings_grep' (offline dense search); known: {sorted(VARIANTS)}")
    raise ConfigError(f"unknown retrieval variant {name!r}{did_you_mean(name, list(VARIANTS))}; known: {sorted(VARIANTS)}")


def build_policy(variant: Variant, domain_dir: str | Path, kb: KnowledgeBase,
                 required_documents: list[str] | None = None) -> str:
    """The agent policy of a variant: its template with ``{{component:NAME}}`` replaced by
    ``prompts/components/NAME.md`` and the knowledge base (``full_kb``) or the task's required
    documents (``golden_retrieval``, by title or id) inlined, as tau2's ``build_policy`` does.

    Raises:
        FileNotFoundError: a template or component file is missing.
    """
    prompts = Path(domain_dir) / "prompts"
    path = prompts / variant.template
    if not path.is_file():
        raise FileNotFoundError(f"banking_knowledge prompt template not found: {path}")

    def component(m: re.Match[str]) -> str:
        p = prompts / "components" / f"{m.group(1)}.md"
        if not p.is_file():
            raise FileNotFoundError(f"banking_knowledge prompt component not found: {p}")
        return p.read_text(encoding="utf-8")

    text = re.sub(r"\{\{component:(\w+)\}\}", component, path.read_text(encoding="utf-8"))
    if variant.inline == "full_kb":
        full = kb.full_text()
        text = re.sub(r"\{\{full_knowledge_base\}\}", lambda _m: full, text)
    elif variant.inline == "required_docs":
        by_title = {d.title: d for d in kb.documents}
        docs = [by_title.get(r) or kb.by_id.get(r) for r in (required_documents or [])]
        parts = [f"## {d.title}\n\n{d.content}" for d in docs if d is not None]
        text = text.replace("{{required_documents}}", "\n\n---\n\n".join(parts) if parts else "(No documents provided)")
    return text
