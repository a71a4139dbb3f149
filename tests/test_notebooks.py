"""The notebooks run top to bottom against the installed s4tf (nbclient)."""

from __future__ import annotations

import pathlib

import pytest

NOTEBOOKS = sorted((pathlib.Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path):
    nbformat = pytest.importorskip("nbformat", reason="needs nbformat (pip install -e '.[dev]')")
    nbclient = pytest.importorskip("nbclient", reason="needs nbclient (pip install -e '.[dev]')")
    pytest.importorskip("ipykernel", reason="needs ipykernel (pip install -e '.[dev]')")
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError naming the failing cell
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.get("output_type") == "error"]


def test_there_is_a_quickstart_notebook():
    assert any(p.name == "01_quickstart.ipynb" for p in NOTEBOOKS)
