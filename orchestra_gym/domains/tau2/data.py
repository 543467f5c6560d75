"""Where tau2 data lives and how it is read (JSON or TOML, parsed once per process).

Layout of a tau2 data directory (tau2-bench v0.2.0 ``data/tau2``): ``domains/<domain>/`` with
``db.json`` (or ``db.toml``), ``tasks.json`` and ``policy.md`` (telecom: ``main_policy.md``), and
``user_simulator/simulation_guidelines*.md``.

The directory is ``data_dir=`` when given, else ``$TAU2_DATA_DIR``, else ``$ORCHESTRA_DATA_DIR/tau2``
(`orchestra_gym.data_paths`). The reference recordings used by the tests live in
``$TAU2_REFERENCE_DIR``, else ``$ORCHESTRA_DATA_DIR/tau2_reference``.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from orchestra_gym.data_paths import DATA_DIR_ENV, dataset_path, how_to_configure

__all__ = ["data_dir", "reference_dir", "domain_dir", "read_data_file", "load_raw_tasks", "load_policy"]

# Returned when no location is configured: a relative path that exists nowhere and names the fix.
_UNSET = Path(f"{DATA_DIR_ENV}-not-set")


def data_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """The tau2 data directory: ``path``, else ``$TAU2_DATA_DIR``, else ``$ORCHESTRA_DATA_DIR/tau2``
    (when neither is set: a path that does not exist; `domain_dir` then says how to configure it)."""
    if path is not None:
        return Path(path)
    return dataset_path("tau2") or _UNSET / "tau2"


def reference_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """The tau2 reference recordings: ``path``, else ``$TAU2_REFERENCE_DIR``, else ``$ORCHESTRA_DATA_DIR/tau2_reference``."""
    if path is not None:
        return Path(path)
    return dataset_path("tau2_reference") or _UNSET / "tau2_reference"


def domain_dir(domain: str, path: str | os.PathLike[str] | None = None) -> Path:
    """``<data dir>/domains/<domain>``.

    Raises:
        FileNotFoundError: the folder does not exist (the message says how to point at the data).
    """
    if path is None and dataset_path("tau2") is None:
        raise FileNotFoundError(f"tau2 data is not configured: {how_to_configure('tau2', 'data_dir')} "
                                f"(tau2-bench v0.2.0 keeps it in data/tau2; the folder holds domains/)")
    d = data_dir(path) / "domains" / domain
    if not d.is_dir():
        raise FileNotFoundError(
            f"tau2 domain folder not found: {d}. Pass data_dir= (the folder that holds domains/) "
            f"or set TAU2_DATA_DIR or {DATA_DIR_ENV} (README, Data); tau2-bench v0.2.0 keeps it in data/tau2."
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


def load_raw_tasks(domain: str, path: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """The domain's ``tasks.json`` (or ``tasks_small.json`` / ``.toml``) as parsed, shared and read-only."""
    f = _first_existing(domain_dir(domain, path), ["tasks.json", "tasks.toml", "tasks_small.json"])
    tasks = read_data_file(f)
    if isinstance(tasks, dict) and "tasks" in tasks:
        tasks = tasks["tasks"]
    if not isinstance(tasks, list):
        raise ValueError(f"{f}: expected a list of tasks")
    return tasks


def load_policy(domain: str, path: str | os.PathLike[str] | None = None) -> str:
    """The domain policy (markdown) shown to the agent."""
    f = _first_existing(domain_dir(domain, path), ["policy.md", "main_policy.md"])
    return f.read_text(encoding="utf-8")
