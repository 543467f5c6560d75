"""The import graph of orchestra_gym: every module imports, the graph is acyclic, no orchestra_jax.

The graph is read from the source with `ast`: every ``import`` statement of a module, at its top
level or inside a function (an import inside a function hides a cycle from Python, not from this
test), restricted to orchestra_gym modules; imports under ``if TYPE_CHECKING:`` never run and are
left out (annotations only). Importing ``a.b.c`` first runs the packages ``a.b``
and ``a`` (their ``__init__``), so those count as imported too, except the importing module's own
packages, which are already running.
"""

from __future__ import annotations

import ast
import graphlib
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "orchestra_gym"


def modules() -> dict[str, Path]:
    """Module name -> file for every module of the package (packages by their ``__init__``)."""
    out = {}
    for path in sorted((REPO / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def imported_names(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules (any package) that `name`'s import statements name, resolved to the deepest known module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_pkg = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(tree):  # drop `if TYPE_CHECKING:` bodies first (they never run)
        if isinstance(node, ast.If) and isinstance(node.test, (ast.Name, ast.Attribute)) and \
                getattr(node.test, "id", getattr(node.test, "attr", "")) == "TYPE_CHECKING":
            node.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package
                pkg = name.split(".") if is_pkg else name.split(".")[:-1]
                pkg = pkg[: len(pkg) - (node.level - 1)]
                base = ".".join(pkg + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.add(full if full in known else base)
    return out


def import_graph() -> dict[str, set[str]]:
    """orchestra_gym module -> the orchestra_gym modules its imports run (see the module docstring)."""
    mods = modules()
    known = set(mods)
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        own = set(_ancestors(name))
        deps: set[str] = set()
        for target in imported_names(name, path, known):
            while target and target not in known and "." in target:  # `import a.b.attr` -> a.b
                target = target.rsplit(".", 1)[0]
            if target not in known:
                continue
            deps.update(t for t in [*_ancestors(target), target] if t not in own and t != name)
        graph[name] = deps
    return graph


def test_every_module_imports_in_a_fresh_interpreter_without_orchestra_jax():
    names = sorted(modules())
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "print('JAX' if any(m.split('.')[0] == 'orchestra_jax' for m in sys.modules) else 'OK', len(sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == "OK", "importing orchestra_gym loaded orchestra_jax"


def test_no_module_imports_orchestra_jax():
    mods = modules()
    bad = {name: sorted(t for t in imported_names(name, path, set(mods)) if t.split(".")[0] == "orchestra_jax")
           for name, path in mods.items()}
    assert {k: v for k, v in bad.items() if v} == {}


def test_import_graph_is_acyclic():
    graph = import_graph()
    assert len(graph) > 40 and "orchestra_gym.evaluation" in graph["orchestra_gym.cli"]
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as e:
        pytest.fail(f"import cycle in orchestra_gym: {' imports '.join(reversed(e.args[1]))}")


def test_the_graph_sees_imports_inside_functions_and_parent_packages(tmp_path):
    known = {"orchestra_gym", "orchestra_gym.a", "orchestra_gym.pkg", "orchestra_gym.pkg.b"}
    src = tmp_path / "a.py"
    src.write_text("import os\n\ndef f():\n    from orchestra_gym.pkg.b import thing\n    from . import a\n")
    assert imported_names("orchestra_gym.a", src, known) == {"os", "orchestra_gym.pkg.b", "orchestra_gym.a"}
    assert _ancestors("orchestra_gym.pkg.b") == ["orchestra_gym", "orchestra_gym.pkg"]
