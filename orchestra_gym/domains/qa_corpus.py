"""An offline evidence-chain corpus for QA tasks, and what the simulated QA models know of it.

The QA environments' offline default needs something for the ``search`` tool to find without a
web search API or a Wikipedia dump, and it must make the orchestration matter: the answer is
never written in any one document, retrieval depends on the query, and a question needs several
documents found in order. `evidence_chain` makes, for every task, a seeded chain of fictional
facts (deterministic in (seed, domain, task id, prompt, answer); adding a task never changes
another task's documents):

* hop 0 (``ev-<domain>-<id>-0``) is about the question's subject (`subject_of`) and names the
  entity of hop 1 through a relation ("Records of Vornstad name its founder as Kelbrin."); hop i
  names hop i+1's entity; a question needs 2 hops (easy/medium FRAMES, HLE) or 3 (hard FRAMES);
* the last hop holds the answer's *pieces*, never the answer: a number as a register figure and
  the part struck off it (answer = figure - part, so code or careful arithmetic is needed), a
  name as its first and last parts (``"Ada Lind"``: given name Ada, family name Lind; one word:
  its beginning and its ending);
* every hop has near-identical *distractor* entities (``dx-...``: "Vornstadt", "Vornsted"), with
  the same wording, other successors and other figures; shared *filler* documents use the same
  words about unrelated names, so only the entity name tells documents apart under BM25.

A query naming the hop's entity finds its document first; a query naming a near-identical
entity finds the distractor (`orchestra_gym.envs.qa_tools` has the simulated search model confuse
entities on its weak kinds of question). Document format (JSONL, one object per line):
``{"id": str, "title": str, "text": str}``, the corpus format of `orchestra_gym.tools.search`.

This is a fixture generator, not a knowledge source. Real runs use a real index or web search
(ToolOrchestra Sec. 4: Wikipedia index + Tavily). The corpus of a task file from the command line:
``python -m orchestra_gym.tasks.corpus`` (the task loaders sit a layer above this module).
"""

from __future__ import annotations

import json
import os
import re
from fractions import Fraction
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence
from urllib.parse import unquote

import numpy as np

from orchestra_gym.errors import ConfigError
from orchestra_gym.tools.simulated import request_rng
from orchestra_gym.types import Task

__all__ = ["build_corpus", "write_corpus", "plausible_wrong_answer", "subject_of", "anchor_of", "EvidenceChain", "evidence_chain",
           "chain_documents"]

_STOP = frozenset(
    "a an and are as at be by did do does for from had has have how in is it its many much of on or that the their "
    "this to was were what when where which who whom whose why will with would".split()
)
_FILLER_TOPICS = (
    "glacier", "orchard", "lighthouse", "violin", "harbour", "comet", "library", "volcano", "railway", "meadow",
    "tapestry", "observatory", "canal", "quarry", "monastery", "savanna", "archipelago", "foundry", "vineyard", "aqueduct",
)


def subject_of(task: Task, max_words: int = 6) -> str:
    """A short subject line for a task: the first linked page title (FRAMES), else the prompt's
    first content words (stop words dropped)."""
    links = task.metadata.get("links") or task.metadata.get("wiki_links") or []
    if links:
        title = unquote(str(links[0]).rstrip("/").rsplit("/", 1)[-1].split("#")[0]).replace("_", " ").strip()
        if title:
            return title
    words = [w for w in re.findall(r"[A-Za-z0-9][A-Za-z0-9'-]*", task.prompt) if w.lower() not in _STOP]
    return " ".join(words[:max_words]) or f"task {task.id}"


def anchor_of(task: Task) -> str:
    """The entity a question starts its evidence chain from (hop 0): the first linked page title
    (FRAMES), else the first capitalised word after the prompt's first word that is not a stop
    word (a name: ``"Kelbrin"`` in "What does the Kelbrin archive list?"), else `subject_of`."""
    if task.metadata.get("links") or task.metadata.get("wiki_links"):
        return subject_of(task)
    words = re.findall(r"[A-Za-z][A-Za-z'-]*", task.prompt)
    for w in words[1:]:
        if w[0].isupper() and w.lower() not in _STOP and len(w) > 2:
            return w
    return subject_of(task)


def plausible_wrong_answer(answer: str, rng: np.random.Generator, pool: Sequence[str] = ()) -> str:
    """A wrong answer that looks like `answer` (deterministic under `rng`).

    Numbers are shifted (integers by 1-9, decimals by 5-50%); a multiple-choice letter becomes
    another letter; other text becomes a different answer from `pool` when it has one, else the
    answer's words in another order with a suffix. Never returns `answer` itself.
    """
    a = str(answer).strip()
    if re.fullmatch(r"[A-Z]", a):
        letters = [c for c in "ABCDE" if c != a]
        return str(letters[int(rng.integers(len(letters)))])
    num = re.fullmatch(r"-?\d+(?:\.\d+)?", a.replace(",", ""))
    if num:
        v = Fraction(num.group(0))
        if v.denominator == 1 and "." not in a:
            return str(int(v) + int(rng.choice([-1, 1])) * int(rng.integers(1, 10)))
        out = float(v) * (1 + float(rng.choice([-1, 1])) * float(rng.uniform(0.05, 0.5)))
        return f"{out:.{max(1, len(a.split('.')[-1]) if '.' in a else 2)}f}"
    others = sorted({p.strip() for p in pool if p and p.strip() and p.strip().lower() != a.lower()})
    if others:
        return others[int(rng.integers(len(others)))]
    words = a.split()
    if len(words) > 1:
        perm = list(rng.permutation(len(words)))
        if perm == list(range(len(words))):
            perm = perm[::-1]
        return " ".join(words[i] for i in perm)
    return f"{a} {['II', 'Jr.', 'Minor', 'North'][int(rng.integers(4))]}"


_RELATIONS = ("founder", "architect", "patron", "successor", "namesake", "mentor", "sponsor", "archivist",
              "cartographer", "steward")
_MEASURES = ("holdings", "tally", "census count", "ledger total", "survey figure")
_ONSETS = tuple("b c d f g h k l m n p r s t v z br dr gr kl pr st tr".split())
_VOWELS = ("a", "e", "i", "o", "u", "ae", "ou")
_CODAS = ("", "", "n", "r", "s", "l", "m", "nd", "rk", "st")
# a question's number of hops by its difficulty (FRAMES: easy/medium 2, hard 3; HLE rows are all "hard"
# but reasoning-bound, so 2: see `evidence_chain`)
_HOPS = {"easy": 2, "medium": 2, "hard": 3}


@dataclass(frozen=True)
class EvidenceChain:
    """The facts a task's answer follows from (see the module docstring).

    Attributes:
        entities: hop i's entity name (hop 0: the question's subject), one per hop.
        relations: hop i's relation word (what hop i's document says about its entity).
        doc_ids: hop i's evidence document id (``ev-<domain>-<id>-<i>``), in chain order.
        variants: hop i's near-identical entity names (its distractors' subjects).
        distractor_ids: hop i's distractor document ids, parallel to ``variants``.
        needs_code: the answer is arithmetic on the last hop's figures (a number); False for a
            name assembled from its parts.
        wrong: plausible wrong answers (what the distractors' figures or parts give).
    """

    entities: tuple[str, ...]
    relations: tuple[str, ...]
    doc_ids: tuple[str, ...]
    variants: tuple[tuple[str, ...], ...]
    distractor_ids: tuple[tuple[str, ...], ...]
    needs_code: bool
    wrong: tuple[str, ...]

    def query_for(self, hop: int) -> str:
        """The query that names hop `hop`'s entity and relation (what the oracle writes)."""
        return f"{self.entities[hop]} {self.relations[hop]}"


def _name(rng: np.random.Generator, syllables: int = 2) -> str:
    parts = [str(rng.choice(_ONSETS)) + str(rng.choice(_VOWELS)) for _ in range(syllables)]
    return ("".join(parts) + str(rng.choice(_CODAS))).title()


def _variants(name: str, rng: np.random.Generator, n: int) -> tuple[str, ...]:
    """`n` names that differ from `name` in one letter of its last word (distinct BM25 tokens)."""
    head, _, last = name.rpartition(" ")
    out: list[str] = []
    suffixes = iter(("t", "e", "s", "a", "n", "o", "r", "i"))
    while len(out) < n:
        word = last
        vowels = [i for i, c in enumerate(word) if c.lower() in "aeiou" and i > 0]
        if vowels and len(out) % 2 == 0:
            i = vowels[int(rng.integers(len(vowels)))]
            swap = [v for v in "aeiou" if v != word[i].lower()]
            word = word[:i] + swap[int(rng.integers(len(swap)))] + word[i + 1:]
        else:
            word = word + next(suffixes)
        cand = f"{head} {word}".strip()
        if cand.lower() != name.lower() and cand.lower() not in {o.lower() for o in out}:
            out.append(cand)
    return tuple(out)


def _number(answer: str) -> tuple[Fraction, int] | None:
    """(value, decimal places) of a numeric answer (commas allowed), else None."""
    m = re.fullmatch(r"-?\d+(?:\.\d+)?", answer.replace(",", ""))
    if not m:
        return None
    s = m.group(0)
    return Fraction(s), (len(s.split(".")[1]) if "." in s else 0)


def _fmt(v: Fraction, places: int) -> str:
    return str(int(v)) if places == 0 else f"{float(v):.{places}f}"


def _pieces(answer: str, rng: np.random.Generator) -> tuple[str, bool]:
    """The last hop's sentence about its entity: the answer's pieces; and whether it needs arithmetic."""
    num = _number(answer)
    if num is not None:
        value, places = num
        step = Fraction(1, 10 ** places)
        while True:
            d = Fraction(int(rng.integers(3, 60))) * (Fraction(1) if places == 0 else step * int(rng.integers(7, 90)))
            a = value + d
            text = (f"lists a {rng.choice(_MEASURES)} of {_fmt(a, places)}, of which {_fmt(d, places)} "
                    f"was struck off in a later entry")
            if not _states(text, answer):
                return text, True
    words = answer.split()
    if len(words) > 1:
        k = max(1, len(words) // 2)
        return (f"gives the given name {' '.join(words[:k])} and, in a later entry, the family name "
                f"{' '.join(words[k:])}"), False
    if len(answer) == 1:
        return f"gives a single character, the one with Unicode code point {ord(answer)}", True
    k = max(1, len(answer) // 2)
    return f"gives a name that begins with {answer[:k]!r} and ends with {answer[k:]!r}", False


def _states(text: str, answer: str) -> bool:
    """Whether `text` holds `answer` as whole words after normalisation (`judges.normalize_answer`)."""
    from orchestra_gym.judges import normalize_answer

    gold = normalize_answer(answer)
    return bool(gold) and f" {gold} " in f" {normalize_answer(text)} "


def evidence_chain(task: Task, seed: int = 0, distractors_per_hop: int = 2) -> EvidenceChain:
    """The seeded evidence chain of `task` (see the module docstring); the same for the same
    (seed, domain, id, prompt, answer). HLE tasks get 2 hops, FRAMES tasks `_HOPS` of their difficulty.

    Raises:
        ConfigError: the task has no gold answer.
    """
    if task.answer is None or not str(task.answer).strip():
        raise ConfigError(f"task {task.id!r} has no gold answer; the corpus is built from each task's answer")
    rng = request_rng(seed, "qa_corpus", task.domain, task.id, task.prompt, task.answer)
    hops = 2 if task.domain == "hle" else _HOPS.get(task.difficulty, 2)
    entities = [anchor_of(task)] + [_name(rng, 2 + int(rng.integers(2))) for _ in range(hops - 1)]
    relations = tuple(str(r) for r in rng.choice(_RELATIONS, size=hops, replace=False))
    key = f"{task.domain}-{task.id}"
    variants = tuple(_variants(e, rng, distractors_per_hop) for e in entities)
    from orchestra_gym.judges import normalize_answer

    gold = normalize_answer(task.answer)
    wrong = []
    for j in range(distractors_per_hop):
        w = plausible_wrong_answer(str(task.answer).strip(), rng)
        if normalize_answer(w) == gold:  # e.g. "The Vorn" -> "Vorn The": the same once articles are dropped
            w = f"{str(task.answer).strip()} {['II', 'Minor', 'North', 'Jr.'][j % 4]}"
        wrong.append(w)
    return EvidenceChain(
        entities=tuple(entities),
        relations=relations,
        doc_ids=tuple(f"ev-{key}-{i}" for i in range(hops)),
        variants=variants,
        distractor_ids=tuple(tuple(f"dx-{key}-{i}-{j}" for j in range(distractors_per_hop)) for i in range(hops)),
        needs_code=_number(str(task.answer).strip()) is not None or len(str(task.answer).strip()) == 1,
        wrong=tuple(wrong),
    )


def _hop_text(entity: str, relation: str, rest: str) -> str:
    return f"{entity}. Records of {entity} name its {relation}: {rest}."


def chain_documents(task: Task, chain: EvidenceChain, seed: int = 0) -> list[dict[str, str]]:
    """The evidence and distractor documents of one task's chain (evidence hop by hop, then the
    distractors); no document states the gold answer (checked: a generated figure that would is redrawn)."""
    rng = request_rng(seed, "qa_corpus", "docs", task.domain, task.id, task.prompt, task.answer)
    answer = str(task.answer).strip()
    last_text, _ = _pieces(answer, rng)
    docs = []
    n = len(chain.entities)
    for i, (entity, rel) in enumerate(zip(chain.entities, chain.relations)):
        rest = f"the {rel} is {chain.entities[i + 1]}" if i + 1 < n else f"the {rel} register {last_text}"
        docs.append({"id": chain.doc_ids[i], "title": entity, "text": _hop_text(entity, rel, rest)})
    for i, (names, ids) in enumerate(zip(chain.variants, chain.distractor_ids)):
        for j, (name, did) in enumerate(zip(names, ids)):
            if i + 1 < n:
                rest = f"the {chain.relations[i]} is {_name(rng, 2 + int(rng.integers(2)))}"
            else:
                wrong = chain.wrong[j % len(chain.wrong)]
                text, _ = _pieces(wrong, rng)
                rest = f"the {chain.relations[i]} register {text}"
                if _states(rest, answer):
                    rest = f"the {chain.relations[i]} register was lost"
            docs.append({"id": did, "title": name, "text": _hop_text(name, chain.relations[i], rest)})
    return docs


def build_corpus(
    tasks: Iterable[Task], distractors_per_task: int = 2, filler: int = 40, seed: int = 0
) -> list[dict[str, str]]:
    """Generate the offline evidence-chain corpus for `tasks`.

    Args:
        tasks: QA tasks with gold answers.
        distractors_per_task: near-identical distractor entities per hop of each task's chain.
        filler: unrelated documents in the same wording, shared by all tasks.
        seed: mixing seed (documents depend only on seed and each task's own fields).

    Returns:
        list of ``{"id", "title", "text"}`` dicts: per task its evidence hops then its
        distractors (`chain_documents`), then the filler documents. Ids are unique.

    Raises:
        ConfigError: a task without a gold answer, a duplicate task id, or negative counts.
    """
    if distractors_per_task < 0 or filler < 0:
        raise ConfigError(f"counts must be >= 0, got distractors_per_task={distractors_per_task}, filler={filler}")
    seen: set[str] = set()
    docs: list[dict[str, str]] = []
    for t in tasks:
        key = f"{t.domain}-{t.id}"
        if key in seen:
            raise ConfigError(f"duplicate task id {t.id!r} in domain {t.domain!r}; task ids must be unique")
        seen.add(key)
        docs.extend(chain_documents(t, evidence_chain(t, seed, distractors_per_task), seed))
    frng = request_rng(seed, "qa_corpus", "filler")
    for i in range(filler):
        name = _name(frng, 2 + int(frng.integers(2)))
        rel = str(frng.choice(_RELATIONS))
        topic = _FILLER_TOPICS[int(frng.integers(len(_FILLER_TOPICS)))]
        docs.append({"id": f"filler-{i}", "title": name,
                     "text": _hop_text(name, rel, f"the {rel} is the {topic} of {_name(frng)}")})
    return docs


def write_corpus(docs: Iterable[dict[str, Any]], path: str | os.PathLike[str]) -> Path:
    """Write documents as JSONL (``id``, ``title``, ``text`` per line); returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps({"id": d["id"], "title": d.get("title", ""), "text": d["text"]}, ensure_ascii=False) + "\n")
    return p
