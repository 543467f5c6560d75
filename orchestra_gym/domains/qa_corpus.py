"""An offline document corpus for QA tasks, and a BM25 index over it.

The QA environments' offline default needs something for the ``search`` tool to find without a
web search API or a Wikipedia dump. `build_corpus` writes, for every task, one *fact* document
that states the question's subject and its gold answer, a few *distractor* documents on the same
subject that give wrong answers, and shared *filler* documents on unrelated subjects. Everything
is deterministic: each task's documents depend only on (seed, task id, prompt, answer), so adding
a task never changes another task's documents.

This is a fixture generator, not a knowledge source: it makes retrieval matter (a good query finds
the fact document, a poor one finds distractors) so that an orchestrator learns when searching
pays. Real runs use a real index or web search (ToolOrchestra Sec. 4: Wikipedia index + Tavily).

Document format (JSONL, one object per line): ``{"id": str, "title": str, "text": str}``, the
corpus format of `orchestra_gym.tools.search` (``read_corpus``, ``LocalSearch``, which index it);
the ``id`` prefix says the kind (``fact-``, ``distractor-``, ``filler-``).
"""

from __future__ import annotations

import json
import os
import re
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterable, Sequence
from urllib.parse import unquote

import numpy as np

from orchestra_gym.tools.simulated import request_rng
from orchestra_gym.types import Task

__all__ = ["build_corpus", "write_corpus", "plausible_wrong_answer", "subject_of", "main"]

_STOP = frozenset(
    "a an and are as at be by did do does for from had has have how in is it its many much of on or that the their "
    "this to was were what when where which who whom whose why will with would".split()
)
_FILLER_TOPICS = (
    "glacier", "orchard", "lighthouse", "violin", "harbour", "comet", "library", "volcano", "railway", "meadow",
    "tapestry", "observatory", "canal", "quarry", "monastery", "savanna", "archipelago", "foundry", "vineyard", "aqueduct",
)
_FILLER_VERBS = ("was restored in", "was surveyed in", "was first mapped in", "appeared in records from", "was expanded in")


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


def _fact_doc(task: Task) -> dict[str, str]:
    subject = subject_of(task)
    return {
        "id": f"fact-{task.domain}-{task.id}",
        "title": subject,
        "text": f"{subject}. Notes relevant to the question: {task.prompt.strip()} "
        f"Established answer: {str(task.answer or '').strip()}.",
    }


def build_corpus(
    tasks: Iterable[Task], distractors_per_task: int = 3, filler: int = 40, seed: int = 0
) -> list[dict[str, str]]:
    """Generate the offline corpus for `tasks`.

    Args:
        tasks: QA tasks with gold answers.
        distractors_per_task: wrong-answer documents per task, sharing the task's subject words.
        filler: unrelated documents shared by all tasks.
        seed: mixing seed (documents depend only on seed and each task's own fields).

    Returns:
        list of ``{"id", "title", "text"}`` dicts: per task its fact then its distractors, then
        the filler documents. Ids are unique.

    Raises:
        ValueError: a task without a gold answer, a duplicate task id, or negative counts.
    """
    if distractors_per_task < 0 or filler < 0:
        raise ValueError(f"counts must be >= 0, got distractors_per_task={distractors_per_task}, filler={filler}")
    tasks = list(tasks)
    seen: set[str] = set()
    docs: list[dict[str, str]] = []
    for t in tasks:
        key = f"{t.domain}-{t.id}"
        if key in seen:
            raise ValueError(f"duplicate task id {t.id!r} in domain {t.domain!r}; task ids must be unique")
        seen.add(key)
        if t.answer is None or not str(t.answer).strip():
            raise ValueError(f"task {t.id!r} has no gold answer; the corpus states each task's answer")
        docs.append(_fact_doc(t))
        rng = request_rng(seed, "qa_corpus", t.domain, t.id, t.prompt, t.answer)
        subject = subject_of(t)
        words = [w for w in re.findall(r"[A-Za-z][A-Za-z'-]+", t.prompt) if w.lower() not in _STOP]
        for j in range(distractors_per_task):
            wrong = plausible_wrong_answer(str(t.answer), rng)  # no pool: depends on this task only
            k = max(1, len(words) // 2)
            some = " ".join(words[i] for i in sorted(rng.choice(len(words), size=min(k, len(words)), replace=False))) if words else ""
            docs.append({
                "id": f"distractor-{t.domain}-{t.id}-{j}",
                "title": f"{subject} ({['overview', 'history', 'disambiguation', 'trivia'][j % 4]})",
                "text": f"{subject}. A related account about {some}. An often quoted but different figure: {wrong.rstrip('.')}.",
            })
    frng = request_rng(seed, "qa_corpus", "filler")
    for i in range(filler):
        topic = _FILLER_TOPICS[int(frng.integers(len(_FILLER_TOPICS)))]
        place = "".join(frng.choice(list("bcdfghklmnprstvz"), 1)[0] + frng.choice(list("aeiou"), 1)[0] for _ in range(3)).title()
        year = int(frng.integers(1600, 2020))
        verb = _FILLER_VERBS[int(frng.integers(len(_FILLER_VERBS)))]
        docs.append({
            "id": f"filler-{i}",
            "title": f"The {topic} of {place}",
            "text": f"The {topic} of {place} {verb} {year}. It is known locally for its {topic} festival.",
        })
    return docs


def write_corpus(docs: Iterable[dict[str, Any]], path: str | os.PathLike[str]) -> Path:
    """Write documents as JSONL (``id``, ``title``, ``text`` per line); returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps({"id": d["id"], "title": d.get("title", ""), "text": d["text"]}, ensure_ascii=False) + "\n")
    return p


def main(argv: list[str] | None = None) -> int:
    """``python -m orchestra_gym.domains.qa_corpus --benchmark hle|frames --data-path FILE --out CORPUS.jsonl``:
    write the offline corpus for a task file (seeded; see `build_corpus`). Prints the document count."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m orchestra_gym.domains.qa_corpus", description=main.__doc__)
    p.add_argument("--benchmark", choices=("hle", "frames"), required=True)
    p.add_argument("--data-path", required=True, help="task file (JSONL/JSON/parquet/CSV/TSV)")
    p.add_argument("--out", required=True, help="output JSONL corpus")
    p.add_argument("--distractors", type=int, default=3, help="wrong-answer documents per task")
    p.add_argument("--filler", type=int, default=40, help="unrelated documents")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.benchmark == "hle":
        from orchestra_gym.tasks.hle import load_hle

        tasks = load_hle(data_path=args.data_path)
    else:
        from orchestra_gym.tasks.frames import load_frames

        tasks = load_frames(data_path=args.data_path)
    docs = build_corpus(tasks, args.distractors, args.filler, args.seed)
    write_corpus(docs, args.out)
    print(f"wrote {len(docs)} documents for {len(tasks)} {args.benchmark} tasks to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
