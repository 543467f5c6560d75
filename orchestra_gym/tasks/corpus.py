"""``python -m orchestra_gym.tasks.corpus``: the offline evidence-chain corpus of a QA task file.

Reads the tasks with the task loaders (`orchestra_gym.tasks.hle.load_hle`, `orchestra_gym.tasks.frames.load_frames`)
and writes the corpus `orchestra_gym.domains.qa_corpus.build_corpus` makes for them (the domain layer builds
documents from tasks; loading a task file is this layer's job), one JSON object per line, the corpus format of
`orchestra_gym.tools.search`.
"""

from __future__ import annotations

import argparse

from orchestra_gym.domains.qa_corpus import build_corpus, write_corpus

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """``python -m orchestra_gym.tasks.corpus --benchmark hle|frames --data-path FILE --out CORPUS.jsonl``:
    write the offline corpus for a task file (seeded; see `build_corpus`). Prints the document count."""
    p = argparse.ArgumentParser(prog="python -m orchestra_gym.tasks.corpus", description=main.__doc__)
    p.add_argument("--benchmark", choices=("hle", "frames"), required=True)
    p.add_argument("--data-path", required=True, help="task file (JSONL/JSON/parquet/CSV/TSV)")
    p.add_argument("--out", required=True, help="output JSONL corpus")
    p.add_argument("--distractors", type=int, default=2, help="near-identical distractor entities per hop")
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
