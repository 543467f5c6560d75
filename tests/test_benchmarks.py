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
    assert "setting: ToolOrchestra-ToolScale-v0, env kwargs {}, reset options {} (the env's defaults)\n" in out.stderr
    out = _run(["benchmarks/bench_env.py", "--episodes", "1", "--envs", "ToolOrchestra-ToolScale-v0"], tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert _digests() == before


def _load_bench(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_preference_headroom_bounds_the_adherence_check():
    """`benchmarks/bench_preference_headroom.py`: the ceiling of a held-out set is the smallest margin of the kind
    oracle of each member over the best fixed rule, over the default's routing and over the other members' routing,
    all scored under that member in the group form; a member that asks what the default asks has ceiling <= 0; an
    expert profile override slows that expert's episodes; --expert items merge cell by cell."""
    import pytest

    from orchestra_gym.evaluation import group_preference_score, summarize
    from orchestra_jax.train_config import TrainConfig

    from orchestra_gym.evaluation import adherence

    hr = _load_bench("bench_preference_headroom")
    cfg = TrainConfig.preset("tiny-toolscale")
    played = hr.play_fixed(cfg, 12)
    assert set(played) == set(hr.FIXED) and all(len(v) == 12 for v in played.values())
    prefs = {"default": dict(cfg.env.preference), "cost": {"outcome": 1.0, "cost": 5.0, "latency": 0.0},
             "latency": {"outcome": 1.0, "cost": 0.0, "latency": 5.0}, "same": dict(cfg.env.preference)}
    table, ranked = hr.ceilings(played, prefs, "default", [("cost", "latency"), ("cost", "same")])
    experts = {e: played[e] for e in ("expert-1", "expert-2", "expert-3")}
    refs = list(experts.values())

    def under(p: str, q: str) -> float:  # the routes fitted to q, scored under p, per task
        return adherence.routed_score(adherence.kind_oracle_routes(experts, refs, prefs[q]), experts, refs, prefs[p])

    for p in ("cost", "latency"):
        fixed = {f: group_preference_score(played[f], refs, prefs[p]) / 12 for f in hr.FIXED}
        assert table[p]["oracle"] == pytest.approx(under(p, p), abs=1e-12)
        assert table[p]["over_best_fixed"] == pytest.approx(under(p, p) - max(fixed.values()), abs=1e-12)
        assert table[p]["over_default"] == pytest.approx(under(p, p) - under(p, "default"), abs=1e-12)
    want = min(min(table["cost"]["over_best_fixed"], table["cost"]["over_default"], under("cost", "cost") - under("cost", "latency")),
               min(table["latency"]["over_best_fixed"], table["latency"]["over_default"],
                   under("latency", "latency") - under("latency", "cost")))
    got = dict((s, c) for c, s in ranked)
    assert got[("cost", "latency")] == pytest.approx(want, abs=1e-12)
    assert table["same"]["over_default"] == 0.0 and got[("cost", "same")] <= 0.0
    assert [c for c, _ in ranked] == sorted((c for c, _ in ranked), reverse=True)
    # the comparison that sets the ceiling, recomputed per task: the same margin, with its standard error
    b = hr.binding(played, prefs, "default", table, ("cost", "latency"))
    assert b["preference"] in ("cost", "latency") and b["margin"] == pytest.approx(want, abs=1e-9) and b["se"] >= 0.0
    # a slower expert-3 (decoding at 15 tokens/s instead of 150): its episodes take more than twice as long
    slow_cfg = cfg.replace(env={"kwargs": {**cfg.env.kwargs, "expert_profiles": hr.expert_profiles(["expert-3.decode_tok_s=15"])}})
    slow = hr.play_fixed(slow_cfg, 12)
    assert summarize(slow["expert-3"])["mean_latency_s"] > 2 * summarize(played["expert-3"])["mean_latency_s"]
    # --expert items merge into a setting's own profiles, one cell at a time
    merged = hr.expert_profiles(["expert-3.accuracy.compute.hard=0.95", "expert-2.ttft_s=2"],
                                {"expert-3": {"decode_tok_s": 20.0, "accuracy": {"compute": {"medium": 0.9}}}})
    assert merged == {"expert-3": {"decode_tok_s": 20.0, "accuracy": {"compute": {"medium": 0.9, "hard": 0.95}}},
                      "expert-2": {"ttft_s": 2.0}}
    for bad in ("expert-9.ttft_s=1", "expert-3.accuracy=1", "expert-3.ttft_s=-1", "expert-3.ttft_s",
                "expert-3.accuracy.compute.hard=2", "expert-3.accuracy.compute.extreme=0.5", "expert-3.model_id=x"):
        with pytest.raises(ValueError, match="--expert"):
            hr.expert_profiles([bad])


def test_bench_tau2_banking_rows_run_without_tau2(tmp_path):
    """`bench_tau2.py --domain banking_knowledge --ours-only`: our rows only (tau2's code is not imported), each with
    positive times, the evaluation row grading every shared gold replay as the reference recorded; nothing written."""
    import pytest

    data = Path(os.environ["ORCHESTRA_DATA_DIR"])
    if not (data / "tau2_v1" / "domains" / "banking_knowledge" / "db.json").is_file() or \
            not (data / "tau2_v1_reference" / "banking_knowledge" / "gold_replay.json").is_file():
        pytest.skip(f"tau2 v1.0.1 data or its reference not under {data} (README: Data)")
    before = _digests()
    out = _run(["benchmarks/bench_tau2.py", "--domain", "banking_knowledge", "--repeats", "5", "--ours-only"], tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [line for line in out.stdout.splitlines() if line.startswith("| ") and not line.startswith("| measurement")]
    assert [r.split(" | ")[0][2:].split(" (")[0] for r in rows] == [
        "first env of a process", "build/reset with a task's initial state", "read call", "KB_search", "write call",
        "database hash after those writes",
        "end-of-episode evaluation of a gold replay, first of the task in the process"]
    assert all(r.split(" | ")[2:4] == ["-", "-"] for r in rows)
    assert "73 reference tasks, tau2 on 0" in rows[-1] and rows[-1].endswith("| 73 / 0 |")  # 5 repeats: one pass
    assert "tau2 rows skipped: tau2's code not asked for (--ours-only)" in out.stdout
    assert _digests() == before
