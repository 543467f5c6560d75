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


def test_the_examples_and_exports_default_folders_are_ignored_by_git():
    """Issue 48 item 23: the TRL example (run as the README says, from the repo root) and the README's
    `orchestra export ... --hf exported/tiny` leave no untracked folder in the working tree."""
    import subprocess

    spec = importlib.util.spec_from_file_location("trl_example", ROOT / "examples" / "trl_grpo_toolscale.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    args = example.parse_args([])
    written = [args.model_dir, args.output_dir, "exported/tiny"]
    assert Path(args.model_dir).parent == Path(args.output_dir)
    for path in written:
        r = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT)
        assert r.returncode == 0, f"{path} would be an untracked folder"
    assert example.parse_args(["--output-dir", "x"]).model_dir == str(Path("x") / "tiny-policy")
