"""`orchestra eval` run folders from the command line: --output-dir, --trials, --max-concurrency,
--resume (also after a `kill -9`), `orchestra regrade` and `orchestra report`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import orchestra_gym.agents as agents
from orchestra_gym.agents import make_agent
from orchestra_gym.cli import main
from tests.gym.tasks.test_frames import synthetic_rows as frames_rows
from tests.gym.tasks.test_frames import write as write_frames

TOOLSCALE = "ToolOrchestra-ToolScale-v0"
ROOT = Path(__file__).resolve().parents[2]

# `orchestra eval` whose oracle sleeps 0.1 s per action: slow enough to be killed mid-run
SLOW_EVAL = """
import sys, time
import orchestra_gym.agents as agents
from orchestra_gym.agents import OracleAgent

class SlowOracle(OracleAgent):
    def act(self, observation, info):
        time.sleep(0.1)
        return super().act(observation, info)

agents.make_agent = lambda name, seed=0: SlowOracle()
from orchestra_gym.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_kill_9_then_resume_gives_the_uninterrupted_summary(tmp_path, monkeypatch, capsys):
    run = tmp_path / "killed"
    args = ["eval", "--env", TOOLSCALE, "--agent", "oracle", "--episodes", "24", "--seed", "5", "--max-concurrency", "2",
            "--output-dir", str(run), "--no-progress"]
    proc = subprocess.Popen([sys.executable, "-c", SLOW_EVAL, *args], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while len(_lines(run / "trajectories.jsonl")) < 4 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    kept = _lines(run / "trajectories.jsonl")
    assert proc.returncode == -signal.SIGKILL and 4 <= len(kept) < 24, proc.stderr.read().decode()[-2000:]
    assert not (run / "summary.json").exists()
    finished = {json.loads(line)["seed"] for line in kept if line.endswith("}")}
    played = []

    def counting(name, seed=0):
        played.append(seed)
        return make_agent(name, seed)

    monkeypatch.setattr(agents, "make_agent", counting)
    assert main(["eval", "--resume", str(run), "--max-concurrency", "3", "--no-progress"]) == 0
    assert not set(played) & finished and sorted(set(played) | finished) == list(range(5, 29))
    assert len(played) == 24 - len(finished)  # each missing episode once
    monkeypatch.undo()
    whole = tmp_path / "whole"
    assert main(["eval", "--env", TOOLSCALE, "--agent", "oracle", "--episodes", "24", "--seed", "5",
                 "--output-dir", str(whole), "--no-progress"]) == 0
    assert json.loads((run / "summary.json").read_text()) == json.loads((whole / "summary.json").read_text())
    assert len(_lines(run / "trajectories.jsonl")) == 24
    assert "success" in capsys.readouterr().out


def test_eval_trials_concurrency_regrade_and_report(tmp_path, capsys):
    frames = write_frames(tmp_path / "frames.csv", frames_rows())
    a, b = tmp_path / "a", tmp_path / "b"
    for run, agent in ((a, "oracle"), (b, "random")):
        assert main(["eval", "--env", "ToolOrchestra-FRAMES-v0", "--agent", agent, "--data-path", str(frames), "--all-tasks",
                     "--episodes", "0", "--trials", "2", "--max-concurrency", "2", "--output-dir", str(run),
                     "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "pass^k: pass^1 " in out and "pass^2 " in out and "accuracy %" in out
    cfg = json.loads((a / "run.json").read_text())
    assert (cfg["env"], cfg["agent"], cfg["trials"], cfg["env_kwargs"]) == (
        "ToolOrchestra-FRAMES-v0", "oracle", 2, {"data_path": str(frames)})
    assert len(_lines(a / "trajectories.jsonl")) == 4
    summary = json.loads((a / "summary.json").read_text())
    assert main(["regrade", str(a)]) == 0 and json.loads((a / "summary.json").read_text()) == summary
    assert main(["report", str(a), str(b), "--baseline", str(b), "--out", str(tmp_path / "rep")]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert capsys.readouterr().out.endswith(md) and md.startswith("## Table 1")
    assert "## Table 15" in md and "Preference score (App. L) against random" in md and "AIQ over" in md
    assert (tmp_path / "rep" / "frontier.png").stat().st_size > 1000


def test_resume_of_another_env_or_agent_is_one_line(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["eval", "--env", TOOLSCALE, "--agent", "oracle", "--episodes", "1", "--output-dir", str(run),
                 "--no-progress"]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        main(["eval", "--resume", str(run), "--env", TOOLSCALE, "--agent", "random", "--no-progress"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert f"is a run of env '{TOOLSCALE}' with agent 'oracle', not env '{TOOLSCALE}' with agent 'random'" in err
    with pytest.raises(SystemExit):
        main(["eval", "--agent", "oracle", "--no-progress"])
    assert "--env is required for agent 'oracle' (e.g. --env ToolOrchestra-ToolScale-v0)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["eval", "--env", TOOLSCALE, "--no-progress"])
    assert "--agent is required (or --resume RUN_DIR to continue a run)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["report", str(tmp_path / "nope")])
    assert "is not a run folder" in capsys.readouterr().err
