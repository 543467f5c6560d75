"""Append a benchmark section to benchmarks/RESULTS.md: title, exact command, machine, date, body."""

from __future__ import annotations

import datetime
import os
import platform
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


ROOT = RESULTS.parents[1]


def relative(value: str, root: Path = ROOT) -> str:
    """`value` with an absolute path (the whole value, or after ``--flag=``) made relative to the
    repository root, so that a recorded command runs in any clone (``/work/runs/x`` -> ``runs/x``,
    a data folder beside the clone -> ``../shared/data``); other values unchanged."""
    head, sep, tail = value.rpartition("=") if value.startswith("--") else ("", "", value)
    if os.path.isabs(tail):
        tail = os.path.relpath(tail, root)
    return f"{head}{sep}{tail}"


def command(script: str, argv: "list[str] | None", env_vars: tuple[str, ...] = ()) -> str:
    """The command line that reproduces this run (with the environment variables that matter), paths
    relative to the repository root (`relative`)."""
    args = [relative(a) for a in (argv if argv is not None else sys.argv[1:])]
    prefix = " ".join(f"{v}={relative(os.environ[v])}" for v in env_vars if v in os.environ)
    return " ".join(p for p in (prefix, f"python benchmarks/{script}", *args) if p)


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; `platform.processor()` elsewhere), or "unknown CPU"."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def machine() -> str:
    """CPU model, architecture, core count and Python version of this machine."""
    return (f"{cpu_model()}, {platform.machine()}, {os.cpu_count()} cores, "
            f"{platform.python_implementation()} {platform.python_version()}")


def append_section(title: str, cmd: str, body: str, results: Path = RESULTS) -> None:
    """Append ``## title`` with the command, machine, UTC date and `body` (markdown) to RESULTS.md."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with open(results, "a", encoding="utf-8") as f:
        f.write(f"\n## {title}\n\nCommand: `{cmd}`  \nMachine: {machine()}  \nDate: {now}\n\n{body}\n")


def report(text: str, *, record: bool, title: str, script: str, argv: "list[str] | None",
           env_vars: tuple[str, ...] = (), note: str = "") -> None:
    """Print a bench's markdown `text`; when `record`, append it (and `note`, e.g. the machine's load)
    as section `title` with the command of `script` + `argv` (`command`, `append_section`)."""
    print(text)
    if record:
        append_section(title, command(script, argv, env_vars), text + (f"\n\n{note}" if note else ""))
