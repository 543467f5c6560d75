"""Append a benchmark section to benchmarks/RESULTS.md: title, exact command, machine, date, body."""

from __future__ import annotations

import datetime
import os
import platform
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def command(script: str, argv: "list[str] | None", env_vars: tuple[str, ...] = ()) -> str:
    """The command line that reproduces this run (with the environment variables that matter)."""
    args = argv if argv is not None else sys.argv[1:]
    prefix = " ".join(f"{v}={os.environ[v]}" for v in env_vars if v in os.environ)
    return " ".join(p for p in (prefix, f"python benchmarks/{script}", *args) if p)


def machine() -> str:
    """CPU architecture, core count and Python version of this machine."""
    return f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} {platform.python_version()}"


def append_section(title: str, cmd: str, body: str, results: Path = RESULTS) -> None:
    """Append ``## title`` with the command, machine, UTC date and `body` (markdown) to RESULTS.md."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with open(results, "a", encoding="utf-8") as f:
        f.write(f"\n## {title}\n\nCommand: `{cmd}`  \nMachine: {machine()}  \nDate: {now}\n\n{body}\n")
