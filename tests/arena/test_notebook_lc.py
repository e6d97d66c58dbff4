"""The LC notebook runs top to bottom on the real AlpacaEval data (nbclient) and reports what it claims."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "lc_winrates.ipynb"


@pytest.mark.slow
def test_lc_notebook_executes(shared_data, monkeypatch):
    monkeypatch.setenv("PREFLAB_SHARED_DATA", str(shared_data))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit the notebook without outputs"
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    text = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    assert "15 files, 15 models, 805 instructions" in text
    assert "Spearman(our LC, official LC) = 0.98" in text
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert len(images) == 2  # raw vs LC with CIs; the length effect
