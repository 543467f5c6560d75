"""examples/trl_grpo_toolscale.py end to end: TRL's GRPOTrainer trains a tiny local causal LM for a
few CPU steps against a real `orchestra serve` on ToolScale (127.0.0.1, started by the test); the
rewards TRL logs are the env's (each step's logged mean = the mean of that step's env rewards)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

pytest.importorskip("trl")
from tests.gym.test_serve import ROOT, TOOLSCALE, Served  # noqa: E402


def test_trl_grpo_trains_against_orchestra_serve(tmp_path, monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    spec = importlib.util.spec_from_file_location("trl_example", ROOT / "examples" / "trl_grpo_toolscale.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    s = Served(TOOLSCALE, "--env-kwargs", '{"max_turns": 1}', "--max-sessions", "8")
    try:
        out = example.main(["--base-url", s.url, "--steps", "2", "--model-dir", str(tmp_path / "tiny"),
                            "--output-dir", str(tmp_path / "run")])
        assert s.sessions() == 0
    finally:
        s.stop()
    assert (tmp_path / "tiny" / "config.json").exists() and (tmp_path / "tiny" / "tokenizer.json").exists()
    env, logged = out["env_rewards"], out["logged_rewards"]
    assert len(env) == 8 and len(logged) == 2
    assert logged == pytest.approx([sum(env[:4]) / 4, sum(env[4:]) / 4])
