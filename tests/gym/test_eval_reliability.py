"""`orchestra eval` run folders under careless use and damage (issue 48): damaged trajectories
files, resumes with another plan, two resumes at once, LLM runs resumed, strict JSON, episodes that
depend only on their own seed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestra_gym.cli import main

TOOLSCALE = "ToolOrchestra-ToolScale-v0"


def _eval(run: Path, *extra: str, agent: str = "oracle", episodes: int = 4) -> int:
    return main(["eval", "--env", TOOLSCALE, "--agent", agent, "--episodes", str(episodes), "--output-dir", str(run),
                 "--no-progress", *extra])


@pytest.fixture(scope="module")
def played(tmp_path_factory) -> Path:
    """A finished 4-episode oracle run folder (copied by the tests that change it)."""
    run = tmp_path_factory.mktemp("played") / "run"
    assert _eval(run) == 0
    return run


def _copy(run: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(run, to)
    return to


@pytest.mark.parametrize("damage,what", [
    (b"[1, 2]", "a JSON list"),
    (b"null", "a JSON null"),
    (b"\xff\xfe{}", "not UTF-8"),
    (b"{\"seed\": \"7\", \"trial\": 0, \"info\": {}, \"task_id\": 1}", "'seed' is '7', not an integer"),
    (b"{\"seed\": 1, \"trial\": 0, \"info\": [], \"task_id\": 1}", "'info' is [], not an object"),
    (b"{\"seed\": 1, \"trial\": 0, \"task_id\": 1}", "no 'info' key"),
    (b"{not json", "not JSON"),
])
def test_a_damaged_trajectories_line_is_rc_2_naming_file_and_line(played, tmp_path, capsys, damage, what):
    run = _copy(played, tmp_path / "run")
    path = run / "trajectories.jsonl"
    lines = path.read_bytes().split(b"\n")
    lines.insert(2, damage)
    path.write_bytes(b"\n".join(lines) + b"{\"torn")  # a torn last line too: that one alone is fine
    before = path.read_bytes()
    with pytest.raises(SystemExit) as e:
        main(["eval", "--resume", str(run), "--no-progress"])
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert f"{path}, line 3: " in err and what in err, err
    assert "Traceback" not in err
    assert path.read_bytes() == before  # nothing rewritten, not even the torn line cut


def test_a_torn_last_line_alone_is_dropped_and_replayed(played, tmp_path):
    run = _copy(played, tmp_path / "run")
    path = run / "trajectories.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:3]) + "\n" + lines[3][: len(lines[3]) // 2])
    assert main(["eval", "--resume", str(run), "--no-progress"]) == 0
    assert json.loads((run / "summary.json").read_text()) == json.loads((played / "summary.json").read_text())


def test_resume_with_more_episodes_or_trials_extends_the_run(played, tmp_path):
    run = _copy(played, tmp_path / "run")
    assert main(["eval", "--resume", str(run), "--episodes", "6", "--no-progress"]) == 0
    whole = tmp_path / "whole"
    assert _eval(whole, episodes=6) == 0
    assert json.loads((run / "summary.json").read_text()) == json.loads((whole / "summary.json").read_text())
    assert json.loads((run / "run.json").read_text())["episodes"] == 6
    assert main(["eval", "--resume", str(run), "--trials", "2", "--no-progress"]) == 0
    assert _eval(tmp_path / "two", "--trials", "2", episodes=6) == 0
    assert (json.loads((run / "summary.json").read_text())
            == json.loads((tmp_path / "two" / "summary.json").read_text()))
    assert len((run / "trajectories.jsonl").read_text().splitlines()) == 12


@pytest.mark.parametrize("flags,key", [(["--episodes", "2"], "episodes"), (["--seed", "3"], "seed"),
                                       (["--trials", "2", "--episodes", "6"], "episodes")])
def test_resume_with_a_plan_that_does_not_extend_the_run_is_refused(played, tmp_path, capsys, flags, key):
    run = _copy(played, tmp_path / "run")
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    with pytest.raises(SystemExit) as e:
        main(["eval", "--resume", str(run), *flags, "--no-progress"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and f"--{key} " in err and f"run's {key} " in err, err
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before


def test_a_second_resume_of_a_folder_being_written_is_refused_naming_the_holder(tmp_path, capsys):
    import os
    import subprocess
    import sys
    import time

    from tests.gym.test_cli_eval import ROOT, SLOW_EVAL

    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-c", SLOW_EVAL, "eval", "--env", TOOLSCALE, "--agent", "oracle",
                             "--episodes", "12", "--output-dir", str(run), "--no-progress"], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not (run / "trajectories.jsonl").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        for argv in (["eval", "--resume", str(run)], ["regrade", str(run)]):
            with pytest.raises(SystemExit) as e:
                main([*argv, "--no-progress"] if argv[0] == "eval" else argv)
            err = capsys.readouterr().err
            assert e.value.code == 2 and f"pid {proc.pid} on host " in err, err
    finally:
        proc.wait(timeout=120)
    assert proc.returncode == 0
    seeds = [json.loads(line)["seed"] for line in (run / "trajectories.jsonl").read_text().splitlines()]
    assert sorted(seeds) == list(range(12))  # each episode played once
    assert main(["eval", "--resume", str(run), "--no-progress"]) == 0  # the lock went with its holder


def _strict(text: str):
    def refuse(name: str):
        raise AssertionError(f"bare {name} in JSON")

    return json.loads(text, parse_constant=refuse)


def test_an_llm_eval_failing_for_infrastructure_says_why_exits_1_and_writes_strict_json(tmp_path, capsys, monkeypatch):
    from tests.servers import OpenAIServer

    monkeypatch.delenv("ORCHESTRA_TEST_UNSET_KEY", raising=False)
    with OpenAIServer(api_key="secret") as srv:
        models = tmp_path / "models.toml"
        models.write_text(f'[models.m]\nbase_url = "{srv.base_url}"\napi_key_env = "ORCHESTRA_TEST_UNSET_KEY"\n'
                          'input_per_m = 1.0\noutput_per_m = 2.0\nmax_retries = 0\n')
        run, out = tmp_path / "run", tmp_path / "summary.json"
        rc = main(["eval", "--env", TOOLSCALE, "--agent", "llm:m", "--models", str(models), "--episodes", "2",
                   "--env-kwargs", '{"models": null}', "--output-dir", str(run), "--output-json", str(out),
                   "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert "first infrastructure failure (seed 0): orchestrator: environment variable ORCHESTRA_TEST_UNSET_KEY is not set" in err
    assert "no episode could be graded (2 of 2 infra failures)" in err
    for path in (run / "summary.json", out, run / "run.json"):
        _strict(path.read_text())
    summary = _strict((run / "summary.json").read_text())
    assert summary["success_rate"] is None and summary["infra_failures"] == 2
    for line in (run / "trajectories.jsonl").read_text().splitlines():
        _strict(line)


def _orchestrator(srv) -> None:
    srv.responder = lambda body: {"tool_calls": [{"name": "call_expert", "arguments": {"expert": "expert-1"}}],
                                  "usage": (100, 10)}


def test_an_llm_run_resumes_with_its_recorded_models_file_and_never_switches_endpoints(tmp_path, capsys):
    """The model id ``gpt-5`` is also in the shipped models file: a resume must still play this run's
    endpoint and prices (the recorded file), also after the file on disk was edited or deleted."""
    from tests.servers import OpenAIServer

    with OpenAIServer() as first, OpenAIServer() as other:
        _orchestrator(first)
        _orchestrator(other)
        models = tmp_path / "my models.toml"
        text = f'[models."gpt-5"]\nbase_url = "{first.base_url}"\ninput_per_m = 1.0\noutput_per_m = 2.0\n'
        models.write_text(text)
        run = tmp_path / "run"
        common = ["--env-kwargs", '{"models": null, "max_turns": 2}', "--no-progress"]
        assert main(["eval", "--env", TOOLSCALE, "--agent", "llm:gpt-5", "--models", str(models), "--episodes", "2",
                     "--output-dir", str(run), *common]) == 0
        recorded = json.loads((run / "run.json").read_text())["models"]
        assert recorded["text"] == text and recorded["path"] == str(models) and len(recorded["sha256"]) == 64
        sent = first.count
        models.write_text(text.replace(first.base_url, other.base_url))  # the file changed since
        with pytest.raises(SystemExit) as e:
            main(["eval", "--resume", str(run), "--episodes", "3", "--models", str(models), "--no-progress"])
        err = capsys.readouterr().err
        assert e.value.code == 2 and "differs from the file this run played with" in err and "--replace-models" in err
        models.unlink()
        assert main(["eval", "--resume", str(run), "--episodes", "3", "--no-progress"]) == 0  # the printed command
        assert first.count > sent and other.count == 0  # the recorded endpoint, not the shipped gpt-5's
        models.write_text(text.replace(first.base_url, other.base_url))
        assert main(["eval", "--resume", str(run), "--episodes", "4", "--models", str(models), "--replace-models",
                     "--no-progress"]) == 0
        assert other.count > 0
    s = json.loads((run / "summary.json").read_text())
    assert s["episodes"] == 4 and s["mean_orchestrator_cost_usd"] == pytest.approx(s["mean_turns"] * (100 + 20) * 1e-6)
    assert json.loads((run / "run.json").read_text())["models"]["text"] != text  # the replacement is recorded


def test_an_llm_orchestrator_plays_a_pool_env_and_the_tools_line_names_the_pools_experts(tmp_path, capsys):
    from orchestra_gym.tools.pools import get_pool
    from tests.servers import OpenAIServer

    pool = get_pool("tradeoffs")
    with OpenAIServer() as srv:
        first = pool.train_names[0]
        srv.responder = lambda body: {"tool_calls": [{"name": "call_expert", "arguments": {"expert": first}}]}
        models = tmp_path / "models.toml"
        models.write_text(f'[models.orch]\nbase_url = "{srv.base_url}"\ninput_per_m = 1.0\noutput_per_m = 2.0\n')
        rc = main(["eval", "--env", TOOLSCALE, "--agent", "llm:orch", "--models", str(models), "--episodes", "2",
                   "--env-kwargs", '{"expert_pool": "tradeoffs", "max_turns": 2}', "--output-dir",
                   str(tmp_path / "run"), "--no-progress"])
        assert srv.count > 0
    err = capsys.readouterr().err
    assert rc == 0, err
    line = next(x for x in err.splitlines() if "model tools:" in x)
    assert f"simulated {', '.join(pool.train_names)} (expert pool 'tradeoffs'" in line, line
    assert "expert-1" not in line


@pytest.mark.parametrize("kwargs,msg", [('{"max_turns": "six"}', "max_turns must be an integer >= 1, got 'six'"),
                                        ('{"max_errors": true}', "max_errors must be an integer >= 1, got True"),
                                        ("{max_turns: 6}", "--env-kwargs: not JSON (Expecting property name"),
                                        ("[6]", "--env-kwargs must be a JSON object, got '[6]'")])
def test_bad_env_kwargs_are_one_line_naming_the_key_or_the_flag(tmp_path, capsys, kwargs, msg):
    with pytest.raises(SystemExit) as e:
        main(["eval", "--env", TOOLSCALE, "--agent", "oracle", "--episodes", "1", "--env-kwargs", kwargs,
              "--output-dir", str(tmp_path / "run"), "--no-progress"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and msg in err and len(err.strip().splitlines()) <= 2, err
    assert "Traceback" not in err


def test_max_turns_of_the_wrong_type_is_a_config_error():
    import gymnasium as gym

    from orchestra_gym.errors import ConfigError

    with pytest.raises(ConfigError, match=r"max_turns must be an integer >= 1, got 'six'"):
        gym.make(TOOLSCALE, max_turns="six")
    assert gym.make(TOOLSCALE, max_turns=6.0).unwrapped.max_turns == 6


def test_a_frames_eval_draws_distinct_tasks(tmp_path):
    from tests.gym.tasks.test_frames import synthetic_rows, write

    base = synthetic_rows()[0]
    frames = write(tmp_path / "frames.csv", [dict(base, id=str(i), Prompt=f"Question {i}?") for i in range(24)])
    run = tmp_path / "run"
    assert main(["eval", "--env", "ToolOrchestra-FRAMES-v0", "--agent", "oracle", "--data-path", str(frames),
                 "--episodes", "20", "--seed", "7", "--output-dir", str(run), "--no-progress"]) == 0
    ids = [json.loads(line)["task_id"] for line in (run / "trajectories.jsonl").read_text().splitlines()]
    assert len(ids) == 20 and len(set(ids)) == 20  # without replacement: App. L pairs runs by task


@pytest.mark.parametrize("agent", ["random", "delegating", "random-offered"])
def test_a_resumed_sampling_agent_run_equals_the_uninterrupted_one_episode_for_episode(tmp_path, agent):
    """Each episode depends only on its seed and trial (agent and env RNG derived from them), never
    on what ran before it in the process; the trained policy's case is tests/jax/test_policy_agent_resume.py."""
    whole, part = tmp_path / "whole", tmp_path / "part"
    assert _eval(whole, "--trials", "2", agent=agent, episodes=4) == 0
    assert _eval(part, "--trials", "1", agent=agent, episodes=3) == 0  # interrupted, then extended by resumes
    assert main(["eval", "--resume", str(part), "--episodes", "4", "--no-progress"]) == 0
    assert main(["eval", "--resume", str(part), "--trials", "2", "--no-progress"]) == 0

    def episodes(run: Path) -> dict:
        lines = [json.loads(line) for line in (run / "trajectories.jsonl").read_text().splitlines()]
        return {(r["seed"], r["trial"]): (r["task_id"], r["messages"], r["reward_vector"]) for r in lines}

    assert episodes(part) == episodes(whole)
    assert json.loads((part / "summary.json").read_text()) == json.loads((whole / "summary.json").read_text())
