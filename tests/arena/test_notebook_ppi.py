"""The judge-assisted leaderboard notebook runs top to bottom (nbclient) and shows what it claims."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import execute_notebook

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "judge_assisted_leaderboard.ipynb"


@pytest.mark.slow
def test_ppi_notebook_executes():
    outputs = execute_notebook(NOTEBOOK, timeout=900)
    assert not [o for o in outputs if o.output_type == "error"]
    text = "\n".join(o.get("text", "") for o in outputs)
    judge_only = float(re.search(r"judge_only\s+([\d.]+)", text).group(1))
    ppi = float(re.search(r"ppi_sandwich\s+([\d.]+)", text).group(1))
    assert judge_only < 0.5 < 0.85 <= ppi
    lam = [float(v) for v in re.findall(r"mean lambda ([\d.]+)", text)]
    assert lam[0] > 0.2 and lam[1] < 0.1
