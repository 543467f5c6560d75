"""`orchestra eval` / `orchestra envs`: table, JSONL trajectories, JSON summary, errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from orchestra_gym.cli import main


def test_eval_writes_summary_and_trajectories(tmp_path, capsys):
    out, traj = tmp_path / "s.json", tmp_path / "t.jsonl"
    rc = main(["eval", "--env", "ToolOrchestra-ToolScale-v0", "--agent", "oracle", "--episodes", "5", "--seed", "3",
               "--output-json", str(out), "--trajectories", str(traj), "--no-progress"])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "success" in printed and "ToolOrchestra-ToolScale-v0" in printed and "tool calls per episode" in printed
    s = json.loads(out.read_text())
    assert {"success_rate", "mean_cost_usd", "mean_latency_s", "tool_calls"} <= set(s)
    assert s["success_rate"] == 1.0 and s["episodes"] == 5
    lines = [json.loads(l) for l in traj.read_text().splitlines()]
    assert len(lines) == 5 and lines[0]["messages"][0]["role"] == "system" and lines[0]["seed"] == 3


def test_console_entry_point_lists_envs():
    out = subprocess.run([sys.executable, "-m", "orchestra_jax.cli", "envs"], capture_output=True, text=True, check=True)
    assert "ToolOrchestra-ToolScale-v0" in out.stdout and "ToolOrchestra-Tau2-Retail-v0" in out.stdout
    assert "ToolOrchestra-Tau2-Airline-v0" in out.stdout and "ToolOrchestra-Tau2-Telecom-v0" in out.stdout
    assert "jax" not in out.stderr.lower()


def test_user_errors_are_one_line_not_a_traceback(capsys):
    with pytest.raises(SystemExit) as e:
        main(["eval", "--env", "ToolOrchestra-ToolScale-v0", "--agent", "orcale", "--episodes", "1", "--no-progress"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "orchestra eval: error: unknown agent 'orcale'" in err and "Traceback" not in err
    with pytest.raises(SystemExit):
        main(["eval", "--env", "ToolOrchestra-Nope-v0", "--agent", "oracle", "--no-progress"])
    assert "error:" in capsys.readouterr().err


def test_data_path_works_for_tau2_and_is_refused_for_toolscale(capsys, tmp_path, monkeypatch):
    from orchestra_gym.domains.tau2.data import data_dir

    with pytest.raises(SystemExit) as e:
        main(["eval", "--env", "ToolOrchestra-ToolScale-v0", "--agent", "oracle", "--data-path", "x.jsonl", "--no-progress"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "--data-path: ToolOrchestra-ToolScale-v0 takes no data file or folder" in err
    assert "Traceback" not in err and "TypeError" not in err
    with pytest.raises(SystemExit) as e:  # a tau2 folder that is not there: the env's own one-line error
        main(["eval", "--env", "ToolOrchestra-Tau2-Mock-v0", "--agent", "oracle", "--data-path", str(tmp_path / "none"),
              "--episodes", "1", "--no-progress"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "TypeError" not in err and "unexpected keyword" not in err
    tau2 = data_dir(None)
    if not (tau2 / "domains" / "mock").is_dir():
        pytest.skip(f"tau2 data not found at {tau2}; set ORCHESTRA_DATA_DIR or TAU2_DATA_DIR")
    monkeypatch.delenv("TAU2_DATA_DIR", raising=False)
    rc = main(["eval", "--env", "ToolOrchestra-Tau2-Mock-v0", "--agent", "oracle", "--data-path", str(tau2),
               "--episodes", "1", "--no-progress"])
    assert rc == 0 and "ToolOrchestra-Tau2-Mock-v0" in capsys.readouterr().out


def test_a_bad_flag_value_of_eval_is_one_line_and_exit_code_2():
    """The command as a user runs it: the setting line, then one error line with the hint; no traceback."""
    done = subprocess.run([sys.executable, "-m", "orchestra_gym.cli", "eval", "--env", "ToolOrchestra-ToolScale-v0",
                           "--agent", "oracle", "--episodes", "1", "--no-progress", "--env-kwargs", '{"max_turnz": 3}'],
                          capture_output=True, text=True, timeout=300)
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert [line for line in lines if "error" in line] == lines[-1:]
    assert lines[-1].startswith("orchestra eval: error: gym.make('ToolOrchestra-ToolScale-v0'): unknown keyword "
                                "'max_turnz' (did you mean 'max_turns'?)")


def test_any_orchestra_error_is_one_line_and_exit_code_2(capsys):
    """Every member of the family, also those that are no ValueError or RuntimeError (a domain's ToolError)."""
    import argparse

    from orchestra_gym.cli import run_command
    from orchestra_gym.domains.synthetic.core import ToolError
    from orchestra_gym.errors import OrchestraError

    def fails(args):
        raise ToolError("order 'o-1' not found")

    assert issubclass(ToolError, OrchestraError)
    with pytest.raises(SystemExit) as e:
        run_command(argparse.Namespace(func=fails, command="eval"), argparse.ArgumentParser(prog="orchestra"))
    assert e.value.code == 2 and capsys.readouterr().err == "orchestra eval: error: order 'o-1' not found\n"
