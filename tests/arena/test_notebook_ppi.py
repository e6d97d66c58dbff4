"""The judge-assisted leaderboard notebook runs top to bottom (nbclient) and shows what it claims."""

from __future__ import annotations

import re

import pytest

from tests.conftest import run_notebook


@pytest.mark.slow
def test_ppi_notebook_executes():
    _, text = run_notebook("judge_assisted_leaderboard.ipynb", timeout=900)
    judge_only = float(re.search(r"judge_only\s+([\d.]+)", text).group(1))
    ppi = float(re.search(r"ppi_sandwich\s+([\d.]+)", text).group(1))
    assert judge_only < 0.5 < 0.85 <= ppi
    lam = [float(v) for v in re.findall(r"mean lambda ([\d.]+)", text)]
    assert lam[0] > 0.2 and lam[1] < 0.1
