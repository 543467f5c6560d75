"""Speed of the tools of issue 3: sandbox call overhead, BM25 / dense / hybrid query latency.

Run from the repository root:

    PYTHONPATH=$PWD python benchmarks/bench_tools.py [--docs 10000] [--queries 200] [--record]

Appends a ``## Tools (issue 3)`` section (command, machine, date, numbers) to
``benchmarks/RESULTS.md`` with ``--record`` only. The corpus is generated (tests/gym/tools/test_search.py's
`make_corpus`: planted documents among seeded filler), so the numbers are reproducible offline.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]

from orchestra_gym.tools.sandbox import run_python  # noqa: E402
from orchestra_gym.tools.search import LocalSearch  # noqa: E402
from tests.test_search import PLANTED, make_corpus  # noqa: E402


def _stats(xs: list[float]) -> str:
    a = np.asarray(xs) * 1000.0
    return f"median {np.median(a):.1f} ms, p90 {np.percentile(a, 90):.1f} ms (n={len(a)})"


def _time(fn, n: int) -> list[float]:
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        fn(i)
        out.append(time.perf_counter() - t0)
    return out


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=10000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--sandbox-runs", type=int, default=30)
    ap.add_argument("--record", action="store_true", help="write into the repository: append the section to benchmarks/RESULTS.md (default: print only)")
    ap.add_argument("--no-write", action="store_true", help=argparse.SUPPRESS)  # the default now
    args = ap.parse_args()

    rows: list[tuple[str, str]] = []
    run_python("pass", timeout_s=10)  # warm the page cache
    rows.append(("sandbox `run_python('pass')`, isolation full",
                 _stats(_time(lambda i: run_python("pass", timeout_s=10), args.sandbox_runs))))
    rows.append(("sandbox `run_python('pass')`, isolation none",
                 _stats(_time(lambda i: run_python("pass", timeout_s=10, isolation="none"), args.sandbox_runs))))

    docs = make_corpus(args.docs, seed=0)
    rng = np.random.default_rng(0)
    queries = []
    for i in range(args.queries):
        if i % 4 == 0:
            queries.append(PLANTED[(i // 4) % len(PLANTED)][3 + (i // 4) % 2])
        else:
            d = docs[int(rng.integers(len(docs)))]
            words = d["text"].rstrip(".").split()
            queries.append(" ".join(words[:5]))

    t0 = time.perf_counter()
    bm25 = LocalSearch(docs, "bm25")
    rows.append((f"BM25 (bm25s) index build, {args.docs} docs", f"{time.perf_counter() - t0:.2f} s"))
    rows.append((f"BM25 query, k=5, {args.docs} docs", _stats(_time(lambda i: bm25.search(queries[i], 5), len(queries)))))

    try:
        t0 = time.perf_counter()
        hybrid = LocalSearch(docs, "hybrid")
        build = time.perf_counter() - t0
        dense = LocalSearch(docs, "dense", _build=False, model_path=hybrid.model_path)
        dense._faiss, dense._encoder = hybrid._faiss, hybrid._encoder
        rows.append((f"dense (MiniLM-L6 + faiss IndexFlatIP) + BM25 build, {args.docs} docs, CPU",
                     f"{build:.1f} s"))
        nq = min(len(queries), 100)
        rows.append((f"dense query (encode + search), k=5, {args.docs} docs",
                     _stats(_time(lambda i: dense.search(queries[i], 5), nq))))
        rows.append((f"hybrid (RRF) query, k=5, {args.docs} docs",
                     _stats(_time(lambda i: hybrid.search(queries[i], 5), nq))))
    except Exception as e:  # dense extra not installed
        rows.append(("dense / hybrid", f"skipped: {e}"))

    cmd = "PYTHONPATH=$PWD python benchmarks/bench_tools.py " + " ".join(sys.argv[1:])
    lines = [
        "## Tools (issue 3)",
        "",
        f"Command: `{cmd.strip()}`  ",
        f"Machine: {_cpu_model()}, {os.cpu_count()} logical CPUs (shared with other jobs), "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}, "
        f"load average at the end {os.getloadavg()[0]:.1f}  ",
        f"Date: {_dt.datetime.now(_dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        "",
        "| measurement | result |",
        "|---|---|",
        *[f"| {k} | {v} |" for k, v in rows],
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.record:
        out = REPO / "benchmarks" / "RESULTS.md"
        prev = out.read_text() if out.exists() else "# Benchmark results\n\n"
        out.write_text(prev.rstrip("\n") + "\n\n" + text)


if __name__ == "__main__":
    main()
