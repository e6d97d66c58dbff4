"""The LC notebook runs top to bottom on the real AlpacaEval data (nbclient) and reports what it claims."""

from __future__ import annotations

import pytest

from tests.conftest import run_notebook


@pytest.mark.slow
def test_lc_notebook_executes(shared_data, monkeypatch):
    monkeypatch.setenv("PREFLAB_SHARED_DATA", str(shared_data))
    outputs, text = run_notebook("lc_winrates.ipynb", timeout=300)
    assert "15 files, 15 models, 805 instructions" in text
    assert "Spearman(our LC, official LC) = 0.98" in text
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 2  # raw vs LC with CIs; the length effect
