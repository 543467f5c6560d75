"""File-system errors of the commands are one line naming the path and the cause, exit code 1, and leave what
was written before resumable: an output folder below a regular file, a full disk and a read-only disk (the
disks are small tmpfs mounts the test makes; they need root and skip without it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EVAL = [sys.executable, "-c", "import sys; from orchestra_gym.cli import main; sys.exit(main(sys.argv[1:]))", "eval",
        "--env", "ToolOrchestra-ToolScale-v0", "--agent", "oracle"]


def _run(args: list[str], timeout: int = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "error" in line.lower() or "Traceback" in line]


@pytest.fixture
def small_disk(tmp_path):
    """A 32 KiB tmpfs at tmp_path/disk, unmounted at the end."""
    disk = tmp_path / "disk"
    disk.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32k", "tmpfs", str(disk)], capture_output=True)
    if made.returncode:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {made.stderr.decode().strip()}")
    yield disk
    subprocess.run(["umount", str(disk)], check=False)


def test_an_output_folder_below_a_regular_file_is_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "run"
    done = _run(EVAL + ["--episodes", "2", "--output-dir", str(out)])
    assert done.returncode == 1 and "Traceback" not in done.stderr
    lines = _error_lines(done.stderr)
    assert len(lines) == 1 and str(out) in lines[0] and "Not a directory" in lines[0]


def test_train_into_an_output_folder_below_a_regular_file_is_one_line(tmp_path):
    pytest.importorskip("jax")
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "run"
    done = _run([sys.executable, "-m", "orchestra_jax.cli", "train", "--preset", "tiny-toolscale", "--output-dir",
                 str(out), "--no-progress"])
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("orchestra train: ") and "Not a directory" in lines[0]


def test_a_full_disk_stops_eval_with_one_line_and_the_run_resumes(small_disk):
    run = small_disk / "run"
    done = _run(EVAL + ["--episodes", "40", "--output-dir", str(run)])
    assert done.returncode == 1 and "Traceback" not in done.stderr
    lines = _error_lines(done.stderr)
    assert len(lines) == 1 and "trajectories.jsonl" in lines[0] and "No space left on device" in lines[0]
    kept = (run / "trajectories.jsonl").read_bytes()
    assert kept  # the finished episodes stay
    subprocess.run(["mount", "-o", "remount,size=8m", str(small_disk)], check=True)
    again = _run(EVAL[:3] + ["eval", "--resume", str(run)])
    assert again.returncode == 0, again.stderr[-2000:]
    seeds = [json.loads(line)["seed"] for line in (run / "trajectories.jsonl").read_text().splitlines()]
    assert sorted(seeds) == sorted(set(seeds)) and len(seeds) == 40  # every episode once, the torn line replayed


def test_a_read_only_disk_is_one_line(small_disk):
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    run = small_disk / "run"
    done = _run(EVAL + ["--episodes", "2", "--output-dir", str(run)])
    assert done.returncode == 1 and "Traceback" not in done.stderr
    lines = _error_lines(done.stderr)
    assert len(lines) == 1 and str(run) in lines[0] and "Read-only file system" in lines[0]
