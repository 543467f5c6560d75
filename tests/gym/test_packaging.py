"""The distribution without its extras: a fresh venv gets the base package `toolorchestra` (no JAX), plays a
ToolScale episode with the scripted oracle through the installed `orchestra` command, and the trainer's
commands and agent kind exit 2 with one line naming the ``jax`` extra (issue 47, item 8).

pip installs from the configured index and its cache (in CI warm after the ``.[dev]`` install), into a venv
made without pip of its own (the running pip installs into it with ``--python``). The project is copied first
(packages, pyproject.toml, README.md), so the build writes nothing into the working tree and the installed
wheel must carry every data file the episode needs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from orchestra_gym.cli import AGENT_KINDS_GROUP, COMMANDS_GROUP, main

REPO = Path(__file__).resolve().parents[2]
EXTRA_HINT = 'pip install -e ".[jax]"'


def _run(cmd: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _stable(summary: dict) -> dict:
    """A summary without its wall-clock fields (the measured time of the run)."""
    return {k: v for k, v in summary.items() if "wall" not in k and "elapsed" not in k}


def test_the_package_declares_the_trainer_as_an_extra_and_its_commands_as_entry_points():
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert meta["name"] == "toolorchestra" and meta["scripts"] == {"orchestra": "orchestra_gym.cli:main"}
    base = " ".join(meta["dependencies"])
    assert not {"jax", "flax", "optax", "orbax", "tensorboardx", "safetensors"} & set(base.replace(">", " ").split())
    assert any(d.startswith("jax>=") for d in meta["optional-dependencies"]["jax"])
    assert "toolorchestra[jax]" in meta["optional-dependencies"]["dev"]
    eps = meta["entry-points"]
    assert eps[COMMANDS_GROUP] == {"train": "orchestra_jax.cli:train_main [jax]", "sft": "orchestra_jax.cli:sft_main [jax]",
                                   "export": "orchestra_jax.cli:export_main [jax]"}
    assert eps[AGENT_KINDS_GROUP] == {"policy": "orchestra_jax.cli:policy_agents [jax]"}


def test_no_install_hint_can_fetch_someone_elses_package():
    """``pip install orchestra[...]`` would install the unrelated PyPI package `orchestra`."""
    bad = []
    for folder in ("orchestra_gym", "orchestra_jax", "benchmarks", "tests", "examples", "notebooks", "docs", ".ci"):
        for path in (REPO / folder).rglob("*"):
            if (path.is_file() and path.suffix in (".py", ".md", ".toml", ".ipynb", "")
                    and "pip install" in path.read_text(errors="ignore")):
                text = path.read_text(errors="ignore")
                for needle in ("install orchestra[", "install 'orchestra[", 'install "orchestra[', "install orchestra "):
                    if needle in text and path.name != "test_packaging.py":
                        bad.append(f"{path.relative_to(REPO)}: {needle}")
    assert bad == []


def test_a_fresh_venv_without_jax_plays_an_episode_and_names_the_extra_for_training(tmp_path):
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in ("orchestra_gym", "orchestra_jax"):
        shutil.copytree(REPO / package, src / package, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    venv = tmp_path / "venv"
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path)
    assert made.returncode == 0, made.stderr
    py, orchestra = venv / "bin" / "python", venv / "bin" / "orchestra"
    installed = _run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-compile", str(src)],
                     tmp_path, timeout=600)
    assert installed.returncode == 0, installed.stderr[-3000:]

    probe = _run([str(py), "-c", "import importlib.metadata as m, importlib.util as u; "
                  "print(m.version('toolorchestra'), u.find_spec('jax') is None, u.find_spec('flax') is None)"], tmp_path)
    assert probe.stdout.split() == ["0.1.0", "True", "True"], probe.stderr
    no_jax = _run([str(py), "-c", "import jax"], tmp_path)
    assert no_jax.returncode != 0 and "No module named 'jax'" in no_jax.stderr

    played = _run([str(orchestra), "eval", "--env", "ToolOrchestra-ToolScale-v0", "--agent", "oracle", "--episodes", "1",
                   "--seed", "3", "--no-progress", "--output-json", str(tmp_path / "s.json")], tmp_path)
    assert played.returncode == 0, played.stderr
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["episodes"] == 1 and summary["success_rate"] == 1.0 and summary["tool_calls"]
    here = tmp_path / "here.json"  # the same episode from the working tree, in this process
    assert main(["eval", "--env", "ToolOrchestra-ToolScale-v0", "--agent", "oracle", "--episodes", "1", "--seed", "3",
                 "--no-progress", "--output-json", str(here)]) == 0
    assert _stable(summary) == _stable(json.loads(here.read_text()))

    for cmd in (["train", "--preset", "tiny-toolscale"], ["export", "run", "--hf", "out"],
                ["eval", "--env", "ToolOrchestra-ToolScale-v0", "--agent", "policy:run", "--episodes", "1", "--no-progress"]):
        done = _run([str(orchestra), *cmd], tmp_path)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and "Traceback" not in done.stderr, (cmd, done.stderr)
        assert EXTRA_HINT in lines[-1] and "needs the jax extra (jax, flax" in lines[-1], (cmd, done.stderr)
        assert lines[-1].startswith({"eval": "orchestra eval: error: agent kind 'policy' needs",
                                     "train": "orchestra train: needs", "export": "orchestra export: needs"}[cmd[0]])
        assert len([line for line in lines if EXTRA_HINT in line]) == 1
    assert not (tmp_path / "out").exists()
