"""The README's "Benchmark an LLM as the orchestrator" GPT-5 example, run as written against a local
scripted OpenAI-compatible server (tests/servers.py) on 127.0.0.1: the models file names only
``gpt-5``, so the env's ``expert-1`` (gpt-5 in the expert pool) is real and ``expert-2/3`` stay
simulated; ``orchestra eval`` says so in one stderr line. Errors of a guessed models file name the
right key and the ``--env-kwargs '{"models": null}'`` way out."""

from __future__ import annotations

import json
import re

import pytest

from orchestra_gym.cli import main
from tests.servers import OpenAIServer

ENV = "ToolOrchestra-ToolScale-v0"
KEY = "sk-test-readme"


def _readme_models(base_url: str, extra: str = "") -> str:
    return (f'[models."gpt-5"]\nbase_url = "{base_url}"\napi_key_env = "OPENAI_API_KEY"\ninput_per_m = 1.25\n'
            f'output_per_m = 10.0\ntool_calling = "native"\nmax_concurrency = 16\n{extra}')


def _responder(body: dict) -> dict:
    names = {t["function"]["name"] for t in body.get("tools") or []}
    if "call_expert" in names:  # the orchestrator: delegate to expert-1
        return {"tool_calls": [{"name": "call_expert", "arguments": {"expert": "expert-1"}}], "usage": (100, 10)}
    return {"content": "Your request has been completed.", "usage": (50, 5)}  # expert-1: a message to the user


@pytest.fixture()
def server():
    with OpenAIServer(responder=_responder, api_key=KEY) as s:
        yield s


def test_readme_gpt5_example_real_expert_1_simulated_others(server, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models.toml").write_text(_readme_models(server.base_url))
    rc = main(["eval", "--agent", "llm:gpt-5", "--models", "models.toml", "--env", ENV, "--episodes", "2",
               "--max-concurrency", "16", "--max-retries", "2", "--output-dir", "runs/gpt5", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 0, err
    lines = [ln for ln in err.splitlines() if "model tools" in ln]
    assert lines == ["orchestra eval: model tools: real expert-1; simulated expert-2, expert-3"]
    bodies = server.chat_requests
    orch = [b for b in bodies if any(t["function"]["name"] == "call_expert" for t in b.get("tools") or [])]
    expert = [b for b in bodies if b not in orch]
    assert orch and len(expert) == len(orch) and {b["model"] for b in bodies} == {"gpt-5"}
    summary = json.loads((tmp_path / "runs/gpt5/summary.json").read_text())
    assert summary["episodes"] == 2 and summary["mean_orchestrator_cost_usd"] > 0


@pytest.mark.parametrize("extra, msg", [
    ('model = "gpt-5"\n', r"unknown key 'model' \(the name sent to the endpoint is served_name\)"),
    ('api_key = "x"\n', r"unknown key 'api_key'; did you mean 'api_key_env'\?"),
])
def test_guessed_keys_name_the_right_key(server, tmp_path, capsys, extra, msg):
    f = tmp_path / "models.toml"
    f.write_text(_readme_models(server.base_url, extra))
    with pytest.raises(SystemExit):
        main(["eval", "--agent", "llm:gpt-5", "--models", str(f), "--env", ENV, "--episodes", "1", "--no-progress"])
    err = capsys.readouterr().err
    assert re.search(msg, err) and "served_name" in err, err
    assert server.count == 0


def test_unknown_model_hints_at_models_null(server, tmp_path, capsys):
    f = tmp_path / "models.toml"
    f.write_text(_readme_models(server.base_url))
    with pytest.raises(SystemExit):
        main(["eval", "--agent", "llm:gpt5", "--models", str(f), "--env", ENV, "--episodes", "1", "--no-progress"])
    err = capsys.readouterr().err
    assert "unknown model 'gpt5'" in err and """--env-kwargs '{"models": null}'""" in err, err


def test_models_null_keeps_every_tool_simulated(server, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    f = tmp_path / "models.toml"
    f.write_text(_readme_models(server.base_url))
    assert main(["eval", "--agent", "llm:gpt-5", "--models", str(f), "--env", ENV, "--episodes", "1",
                 "--env-kwargs", '{"models": null, "max_turns": 2}', "--no-progress"]) == 0
    assert "model tools" not in capsys.readouterr().err  # no models file for the env: nothing real to name
    assert all(any(t["function"]["name"] == "call_expert" for t in b.get("tools") or []) for b in server.chat_requests)
