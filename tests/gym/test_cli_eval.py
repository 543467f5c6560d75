"""`orchestra eval` run folders from the command line: --output-dir, --trials, --max-concurrency,
--resume (also after a `kill -9`, and after SIGINT / SIGTERM), `orchestra regrade` and `orchestra report`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import orchestra_gym.agents.registry as agents
from orchestra_gym.agents import make_agent
from orchestra_gym.cli import main
from tests.gym.tasks.test_frames import synthetic_rows as frames_rows
from tests.gym.tasks.test_frames import write as write_frames

TOOLSCALE = "ToolOrchestra-ToolScale-v0"
ROOT = Path(__file__).resolve().parents[2]

# `orchestra eval` whose oracle sleeps 0.1 s per action: slow enough to be killed mid-run
SLOW_EVAL = """
import sys, time
import orchestra_gym.agents.registry as agents
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


@pytest.mark.parametrize("sig,concurrency", [(signal.SIGINT, 2), (signal.SIGTERM, 1)])
def test_a_signal_stops_eval_in_one_line_then_resume_completes(tmp_path, sig, concurrency):
    """SIGINT / SIGTERM of a real `orchestra eval --output-dir` once its first episodes are written: exit 130,
    one line on stderr naming what is kept and the --resume command, summary.json over the kept episodes;
    --resume then plays the rest, each episode once."""
    run = tmp_path / "stopped"
    args = ["eval", "--env", TOOLSCALE, "--agent", "oracle", "--episodes", "20", "--seed", "5", "--max-concurrency",
            str(concurrency), "--output-dir", str(run), "--no-progress"]
    proc = subprocess.Popen([sys.executable, "-c", SLOW_EVAL, *args], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while len(_lines(run / "trajectories.jsonl")) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    kept = _lines(run / "trajectories.jsonl")
    assert proc.returncode == 130, err[-2000:]
    setting, stopped = err.splitlines()  # the setting it played in, then the one line of the stop
    assert out == "" and "Traceback" not in err and setting.startswith(f"orchestra eval: setting: {TOOLSCALE}, ")
    name = signal.Signals(sig).name
    assert stopped.startswith(f"orchestra eval: stopped by {name}; kept {len(kept)} of 20 episodes")
    assert stopped.endswith(f"; continue with: orchestra eval --resume {run}")
    assert f"{run / 'summary.json'}" in stopped and 2 <= len(kept) < 20
    summary = json.loads((run / "summary.json").read_text())
    assert summary["episodes"] == len(kept) and summary["success_rate"] == 1.0
    assert main(["eval", "--resume", str(run), "--no-progress"]) == 0
    seeds = [json.loads(line)["seed"] for line in _lines(run / "trajectories.jsonl")]
    assert sorted(seeds) == list(range(5, 25))  # 20 unique episodes, none twice
    assert json.loads((run / "summary.json").read_text())["episodes"] == 20


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


def test_setting_of_plays_any_agent_in_a_trained_runs_setting(tmp_path, capsys):
    """``--setting-of RUN``: the env id, env kwargs and reset options of RUN/orchestra_setting.json (what
    `orchestra train` writes), printed as one line; the same episodes as a hand-made env in that setting."""
    import gymnasium as gym

    from orchestra_gym.setting import SETTING_FILE, Setting

    trained = tmp_path / "trained"
    trained.mkdir()
    pref = {"outcome": 1.0, "cost": 1.0, "latency": 0.0}
    setting = Setting(TOOLSCALE, {"system_prompt": "compact", "max_turns": 3, "preference": pref},
                      {"preference": pref, "tools": ["call_expert"]})
    assert setting.write(trained) == trained / SETTING_FILE and Setting.read(trained) == setting
    run = tmp_path / "run"
    assert main(["eval", "--agent", "expert-1", "--setting-of", str(trained), "--episodes", "3", "--seed", "4",
                 "--output-dir", str(run), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert err == f"orchestra eval: setting: {setting.describe()} (--setting-of {trained})\n"
    assert setting.describe() == (f'{TOOLSCALE}, env kwargs {{"max_turns": 3, "preference": {{"cost": 1.0, "latency": '
                                  f'0.0, "outcome": 1.0}}, "system_prompt": "compact"}}, reset options {{"preference": '
                                  f'{{"cost": 1.0, "latency": 0.0, "outcome": 1.0}}, "tools": ["call_expert"]}}')
    cfg = json.loads((run / "run.json").read_text())
    assert (cfg["env"], cfg["env_kwargs"], cfg["options"]) == (TOOLSCALE, setting.env_kwargs, setting.reset_options)
    recs = [json.loads(line) for line in _lines(run / "trajectories.jsonl")]
    env = gym.make(TOOLSCALE, **setting.env_kwargs)
    for i, rec in enumerate(recs):
        env.reset(seed=4 + i, options=setting.reset_options)
        assert rec["messages"][0] == env.unwrapped.messages[0].to_dict()  # the compact prompt, call_expert only
        assert rec["turns"] <= 3 and rec["tool_calls"]["call_expert"] == rec["tool_calls"]["expert-1"] == rec["turns"]
    assert [r["end_reason"] for r in recs] == ["turn_limit", "transfer", "turn_limit"]  # max_turns 3 of the setting
    # --reset-options applies over the setting; the default setting is printed too
    assert main(["eval", "--agent", "expert-1", "--setting-of", str(trained), "--episodes", "1", "--no-progress",
                 "--reset-options", '{"tools": ["call_expert", "calculate"]}']) == 0
    err = capsys.readouterr().err
    assert '"tools": ["call_expert", "calculate"]' in err and err.endswith(f"(--setting-of {trained} and --reset-options)\n")
    assert main(["eval", "--env", TOOLSCALE, "--agent", "random", "--episodes", "1", "--no-progress"]) == 0
    assert capsys.readouterr().err == (f"orchestra eval: setting: {TOOLSCALE}, env kwargs {{}}, reset options {{}} "
                                       "(the env's defaults)\n")
    # errors are one line, before any agent is built
    for argv, msg in ((["--setting-of", str(tmp_path / "nope")], f"{tmp_path / 'nope' / SETTING_FILE} not found"),
                      (["--setting-of", str(trained), "--env", "ToolOrchestra-FRAMES-v0"],
                       f"is a setting of {TOOLSCALE}, not of --env ToolOrchestra-FRAMES-v0")):
        with pytest.raises(SystemExit) as e:
            main(["eval", "--agent", "random", "--episodes", "1", "--no-progress", *argv])
        err = capsys.readouterr().err
        assert e.value.code == 2 and err.count("\n") == 1 and msg in err, err
    (trained / SETTING_FILE).write_text('{"env": "x"}')
    with pytest.raises(SystemExit):
        main(["eval", "--agent", "random", "--setting-of", str(trained), "--no-progress"])
    assert "expected an object with a string env_id" in capsys.readouterr().err
