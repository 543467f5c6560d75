"""Execute every notebook under notebooks/ top to bottom (nbclient, the venv's python3 kernel) and
check each produced at least one image (its plots). Offline: the notebooks need no network."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="notebook tests need nbformat (the dev extra)")
nbclient = pytest.importorskip("nbclient", reason="notebook tests need nbclient (the dev extra)")
pytest.importorskip("ipykernel", reason="notebook tests need ipykernel for the python3 kernel (the dev extra)")

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def test_notebooks_are_found_and_stored_without_outputs():
    names = {p.name for p in NOTEBOOKS}
    assert {"benchmark_agents.ipynb", "plug_in_rl.ipynb"} <= names
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        stale = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
        assert stale == [], f"{path.name}: strip outputs before committing (cells {stale})"


@pytest.mark.timeout(1500)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_and_plots(path: Path):
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(REPO)}}
    )
    client.execute()  # raises CellExecutionError (with the cell and traceback) when a cell fails
    images = [
        o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})
    ]
    assert len(images) >= 1, f"{path.name} produced no image output"
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.get("output_type") == "error"]
    assert errors == []
