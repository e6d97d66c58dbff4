"""The simulation notebook runs top to bottom (nbclient) and shows what it claims."""

from __future__ import annotations

import re

import pytest

from tests.conftest import run_notebook


@pytest.mark.slow
def test_simulation_notebook_executes():
    outputs, text = run_notebook("arena_simulation.ipynb", timeout=600)
    assert "782" in text and "194" in text
    coverage = [float(v) for v in re.findall(r"N= *(?:500|5000): coverage (0\.\d+)", text)]
    assert len(coverage) == 6 and all(0.90 <= c <= 0.99 for c in coverage)
    ratio = float(re.search(r"variance ratio \(uniform / active\) = ([\d.]+)", text).group(1))
    assert ratio > 1.2
    naive, styled = map(float, re.search(r"naive ([\d.]+), style control ([\d.]+)", text).groups())
    assert naive > 0.3 > styled
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 5
