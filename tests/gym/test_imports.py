"""The import graphs of orchestra_gym and orchestra_jax: every module imports, each graph is
acyclic, orchestra_gym never imports orchestra_jax, no module is over 900 lines, and the evaluation
package keeps the names of the module it replaced.

A graph is read from the source with `ast`: every ``import`` statement of a module, at its top
level, inside a function or under ``if TYPE_CHECKING:`` (an import inside a function hides a cycle
from Python, one for annotations hides it from the interpreter; neither hides it from this test,
nor from a reader), restricted to the package's own modules. Importing ``a.b.c`` first runs the
packages ``a.b`` and ``a`` (their ``__init__``), so those count as imported too, except the
importing module's own packages, which are already running.
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
PACKAGES = ("orchestra_gym", "orchestra_jax")
MAX_MODULE_LINES = 900


def modules(package: str = PACKAGE) -> dict[str, Path]:
    """Module name -> file for every module of ``package`` (packages by their ``__init__``)."""
    out = {}
    for path in sorted((REPO / package).rglob("*.py")):
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


def import_graph(package: str = PACKAGE) -> dict[str, set[str]]:
    """Module of ``package`` -> the modules of ``package`` its imports name (see the module docstring)."""
    mods = modules(package)
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


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as e:
        return list(reversed(e.args[1]))
    return None


@pytest.mark.parametrize("package", PACKAGES)
def test_import_graph_is_acyclic(package):
    graph = import_graph(package)
    if package == "orchestra_gym":
        assert len(graph) > 40 and "orchestra_gym.evaluation" in graph["orchestra_gym.cli"]
        assert "orchestra_gym.envs.qa_tools" in graph["orchestra_gym.envs.qa"]
    else:
        assert len(graph) > 15 and "orchestra_jax.train_step" in graph["orchestra_jax.train"]
    cycle = _cycle(graph)
    assert cycle is None, f"import cycle in {package}: {' imports '.join(cycle)}"


def test_the_graph_sees_a_cycle_made_only_for_annotations(tmp_path):
    """The old ``qa <-> qa_tools`` shape: the back edge exists only under ``if TYPE_CHECKING:``."""
    known = {"orchestra_gym", "orchestra_gym.qa", "orchestra_gym.qa_tools"}
    qa, tools = tmp_path / "qa.py", tmp_path / "qa_tools.py"
    qa.write_text("from orchestra_gym.qa_tools import Tools\n")
    tools.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from orchestra_gym.qa import Env\n")
    graph = {"orchestra_gym.qa": imported_names("orchestra_gym.qa", qa, known) & known,
             "orchestra_gym.qa_tools": imported_names("orchestra_gym.qa_tools", tools, known) & known}
    assert graph == {"orchestra_gym.qa": {"orchestra_gym.qa_tools"}, "orchestra_gym.qa_tools": {"orchestra_gym.qa"}}
    assert set(_cycle(graph)) == {"orchestra_gym.qa", "orchestra_gym.qa_tools"}


def test_the_graph_sees_imports_inside_functions_and_parent_packages(tmp_path):
    known = {"orchestra_gym", "orchestra_gym.a", "orchestra_gym.pkg", "orchestra_gym.pkg.b"}
    src = tmp_path / "a.py"
    src.write_text("import os\n\ndef f():\n    from orchestra_gym.pkg.b import thing\n    from . import a\n")
    assert imported_names("orchestra_gym.a", src, known) == {"os", "orchestra_gym.pkg.b", "orchestra_gym.a"}
    assert _ancestors("orchestra_gym.pkg.b") == ["orchestra_gym", "orchestra_gym.pkg"]


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_is_over_900_lines(package):
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules(package).items()}
    assert len(sizes) > 15
    assert {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES} == {}


# The public names of the single orchestra_gym/evaluation.py module (its __all__ and the names importers used)
EVALUATION_NAMES = (
    "EpisodeResult", "run_episodes", "evaluate", "resume", "regrade", "load_run", "RunConfig", "run_summary",
    "infra_error_of", "is_infra", "INFRA_EXCEPTIONS", "pass_hat_k", "pass_hat_ks", "table1_row", "tau2_task_weighted",
    "report", "cost_accuracy_hull", "hull_accuracy", "hull_gap", "aiq", "summarize", "qa_metrics", "rollout_summary",
    "preference_score", "group_preference_score", "wald_interval", "mean_tool_calls", "by_label", "format_table",
    "format_qa_table", "format_mix", "jsonable", "MODEL_TOOLS", "ORCHESTRATOR_USAGE", "asked_moves", "moves_as_asked",
    "Outcome", "RUN_FILE", "TRAJECTORIES_FILE", "SUMMARY_FILE", "TAU2_PREFIX",
)


def test_the_evaluation_package_keeps_its_names_one_job_per_module():
    import orchestra_gym.evaluation.fit as fit
    import orchestra_gym.evaluation as evaluation

    assert [n for n in EVALUATION_NAMES if not hasattr(evaluation, n)] == []
    assert set(evaluation.__all__) >= set(EVALUATION_NAMES) and all(hasattr(evaluation, n) for n in evaluation.__all__)
    owners = {n: getattr(evaluation, n).__module__.rsplit(".", 1)[-1] for n in
              ("run_episodes", "evaluate", "resume", "regrade", "load_run", "RunConfig", "summarize", "wald_interval",
               "pass_hat_k", "aiq", "group_preference_score", "asked_moves", "report", "format_table", "EpisodeResult")}
    assert owners == {"run_episodes": "runner", "evaluate": "runs", "resume": "runs", "regrade": "runs",
                      "load_run": "runs", "RunConfig": "runs", "summarize": "metrics", "wald_interval": "metrics",
                      "pass_hat_k": "metrics", "aiq": "metrics", "group_preference_score": "metrics",
                      "asked_moves": "metrics", "report": "report", "format_table": "report", "EpisodeResult": "records"}
    assert fit.fit_router.__module__ == "orchestra_gym.evaluation.fit" and fit.ROUTER_COST_WEIGHTS[0] == 0.0
    graph = import_graph()  # the metrics are pure: they import no runner, run folder, report or agent
    assert not {"orchestra_gym.evaluation.runner", "orchestra_gym.evaluation.runs", "orchestra_gym.evaluation.report",
                "orchestra_gym.agents"} & graph["orchestra_gym.evaluation.metrics"]
