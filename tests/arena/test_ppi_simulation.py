"""PPI++ leaderboards with known truth: a biased judge (75% agreement, likes long answers and slot A).

Judge-only intervals miss the truth; PPI intervals cover it at the nominal rate and are narrower than
human-only ones; a random judge gets lambda ~ 0 and costs (almost) nothing.
"""

from __future__ import annotations

import pytest

from arena.ppi import simulation as ppi_sim

BIASED = ppi_sim.JudgeArena(tau=3.0, length_bias=1.5, position_bias=0.5)
RANDOM = ppi_sim.JudgeArena(tau=3.0, random_judge=True)
N_LABELLED, N_JUDGED = 400, 4000


def _by_method(table):
    return table.set_index("method")


def _check_biased(n_arenas: int, lo: float, hi: float) -> None:
    out = ppi_sim.coverage_by_method(BIASED, n_arenas, N_LABELLED, N_JUDGED, n_bootstrap=200, seed=11)
    t = _by_method(out)
    print(out.round(3).to_string(), out.attrs)
    assert 0.70 <= out.attrs["agreement"] <= 0.80
    assert t.loc["judge_only", "coverage"] < 0.5  # narrow and wrong
    for method in ("ppi_sandwich", "ppi_bootstrap"):
        assert lo <= t.loc[method, "coverage"] <= hi, method
        assert t.loc[method, "width"] < 0.95 * t.loc["human_only", "width"], method
    assert 0.2 < out.attrs["lam"] < 1.0


def _check_random(n_arenas: int, tol: float) -> None:
    out = ppi_sim.coverage_by_method(RANDOM, n_arenas, N_LABELLED, N_JUDGED, n_bootstrap=0, seed=12)
    t = _by_method(out)
    print(out.round(3).to_string(), out.attrs)
    assert out.attrs["lam"] < 0.05
    assert t.loc["ppi_sandwich", "width"] == pytest.approx(t.loc["human_only", "width"], rel=tol)


def test_biased_judge_fast():
    _check_biased(24, 0.85, 1.0)


def test_random_judge_fast():
    _check_random(24, 0.05)


@pytest.mark.slow
def test_biased_judge_coverage_500_arenas():
    _check_biased(500, 0.93, 0.97)


@pytest.mark.slow
def test_random_judge_500_arenas():
    _check_random(500, 0.03)
