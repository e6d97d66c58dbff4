"""``preflab power`` and ``preflab import`` load only what they need: the binomial tails from scipy.special
agree with scipy.stats, and neither command imports scipy.stats or JAX (checked with ``-X importtime``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from arena.simulation.power import binom_cdf, binom_sf

ROOT = Path(__file__).resolve().parents[2]
PREFLAB = Path(sys.executable).parent / "preflab"


def test_binomial_tails_match_scipy_stats_for_every_integer_k():
    """Cephes (scipy.special) against scipy.stats (Boost): the same tails to 1e-9 relative, down to 1e-177."""
    for n in (1, 7, 50, 781):
        k = np.arange(-3, n + 4)
        for p in (0.5, 0.55, 0.8):
            np.testing.assert_allclose(binom_sf(k, n, p), stats.binom.sf(k, n, p), rtol=1e-9, atol=1e-300)
            np.testing.assert_allclose(binom_cdf(k, n, p), stats.binom.cdf(k, n, p), rtol=1e-9, atol=1e-300)


def imported(args: list[str], cwd: Path) -> set[str]:
    run = subprocess.run([sys.executable, "-X", "importtime", str(PREFLAB), *args], cwd=cwd, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    return {line.split("|")[-1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")}


@pytest.mark.parametrize("command", ["power", "import"])
def test_the_command_imports_neither_scipy_stats_nor_jax(command, tmp_path):
    if command == "power":
        mods = imported(["power"], tmp_path)
    else:
        from tests.app.conftest import tiny_items

        tiny_items(3).to_csv(tmp_path / "items.csv", index=False)
        mods = imported(["import", "items.csv", "--dataset", "d", "--db", f"sqlite:///{tmp_path / 's.db'}"], tmp_path)
    assert "pandas" in mods  # the check sees the imports
    assert not {m for m in mods if m == "jax" or m.startswith(("scipy.stats", "jax.", "arena.leaderboard"))}
