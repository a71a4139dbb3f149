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
    # A notebook names the optional packages it imports (matplotlib for its plots,
    # jax for the lazy backend) in its metadata; without them it cannot run.
    for package in notebook.metadata.get("s4tf", {}).get("needs", []):
        pytest.importorskip(package, reason=f"{path.name} needs {package} "
                                            "(pip install -e '.[dev,xla]')")
    client = nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError naming the failing cell
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.get("output_type") == "error"]


def test_there_is_a_quickstart_notebook():
    assert any(p.name == "01_quickstart.ipynb" for p in NOTEBOOKS)


def test_notebooks_are_committed_without_outputs():
    """Outputs belong to a run, not to the source: they bloat diffs and go stale."""
    import json

    for path in NOTEBOOKS:
        cells = json.loads(path.read_text())["cells"]
        stale = [i for i, cell in enumerate(cells) if cell["cell_type"] == "code"
                 and (cell["outputs"] or cell["execution_count"] is not None)]
        assert not stale, f"{path.name}: cells {stale} have outputs; clear them before committing"
