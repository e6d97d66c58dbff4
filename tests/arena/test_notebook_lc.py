"""The LC notebook runs top to bottom on the real AlpacaEval data (nbclient) and reports what it claims."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import execute_notebook

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "lc_winrates.ipynb"


@pytest.mark.slow
def test_lc_notebook_executes(shared_data, monkeypatch):
    monkeypatch.setenv("PREFLAB_SHARED_DATA", str(shared_data))
    outputs = execute_notebook(NOTEBOOK, timeout=300)
    text = "\n".join(o.get("text", "") for o in outputs)
    errors = [o for o in outputs if o.output_type == "error"]
    assert not errors
    assert "15 files, 15 models, 805 instructions" in text
    assert "Spearman(our LC, official LC) = 0.98" in text
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 2  # raw vs LC with CIs; the length effect
