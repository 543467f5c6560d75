"""Benchmarks write into the repository only when asked (--record)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRACKED = [REPO / "benchmarks" / "RESULTS.md", REPO / "benchmarks" / "agents_pareto.png"]


def _digests() -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else "" for p in TRACKED]


def _run(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp_path), "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


def test_benchmarks_do_not_touch_tracked_files_without_record(tmp_path):
    before = _digests()
    out = _run(["benchmarks/bench_agents.py", "--episodes", "1", "--tau2-dir", str(tmp_path / "no-tau2")], tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "| accuracy % (95% CI) |" in out.stdout and (tmp_path / "orchestra_agents_pareto.png").is_file()
    out = _run(["benchmarks/bench_env.py", "--episodes", "1", "--envs", "ToolOrchestra-ToolScale-v0"], tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert _digests() == before
