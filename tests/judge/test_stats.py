"""The seed toolkit's numbers, reproduced exactly, plus independent cross-checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from judge.stats import mcnemar_exact, paired_bootstrap, pass_at_k, sign_test, wilson_interval


def _fixture(both: int, a_only: int, b_only: int, n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    neither = n - both - a_only - b_only
    a = np.array([1] * both + [1] * a_only + [0] * b_only + [0] * neither)
    b = np.array([1] * both + [0] * a_only + [1] * b_only + [0] * neither)
    return a, b


def test_wilson_seed_number():
    ci = wilson_interval(40, 50)
    assert ci.value == pytest.approx(0.8)
    assert round(ci.lower, 3) == 0.670
    assert round(ci.upper, 3) == 0.888


def test_wilson_matches_score_test_inversion():
    # The Wilson bounds are where the score statistic equals z: |p - p0| / sqrt(p0 (1 - p0) / n) = 1.96.
    ci = wilson_interval(7, 23)
    for p0 in (ci.lower, ci.upper):
        assert abs(7 / 23 - p0) / math.sqrt(p0 * (1 - p0) / 23) == pytest.approx(1.959964, abs=1e-5)


def test_wilson_edges_and_errors():
    assert wilson_interval(0, 10).lower == 0.0
    assert wilson_interval(10, 10).upper == pytest.approx(1.0)
    assert math.isnan(wilson_interval(0, 0).value)
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(11, 10)


def test_paired_bootstrap_seed_numbers():
    a, b = _fixture(140, 8, 20)
    ci = paired_bootstrap(a, b, n_bootstrap=2000, seed=0)
    assert ci.value == pytest.approx(0.06)
    assert ci.lower == pytest.approx(0.010, abs=1e-9)
    assert ci.upper == pytest.approx(0.115, abs=1e-9)
    a2, b2 = _fixture(140, 13, 15)
    ci2 = paired_bootstrap(a2, b2, n_bootstrap=2000, seed=0)
    assert ci2.value == pytest.approx(0.01)
    assert ci2.lower == pytest.approx(-0.04, abs=1e-9)
    assert ci2.upper == pytest.approx(0.06, abs=1e-9)


def test_paired_bootstrap_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="equal-length"):
        paired_bootstrap(np.ones(3), np.ones(4))


def test_mcnemar_seed_number():
    assert mcnemar_exact(8, 20) == pytest.approx(0.0357, abs=5e-5)
    assert mcnemar_exact(20, 8) == mcnemar_exact(8, 20)
    assert mcnemar_exact(0, 0) == 1.0


def test_mcnemar_matches_binomial_sum():
    # Independent: two-sided exact p = 2 * P(X <= 8), X ~ Bin(28, 1/2).
    expected = 2 * sum(math.comb(28, i) for i in range(9)) / 2**28
    assert mcnemar_exact(8, 20) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    "wins,losses,p",
    [(28, 12, 0.0166), (56, 24, 0.0005), (14, 6, 0.1153), (24, 16, 0.2682)],
)
def test_sign_test_seed_numbers(wins, losses, p):
    assert round(sign_test(wins, losses).p_value, 4) == p


def test_sign_test_win_rate_interval():
    res = sign_test(28, 12)
    assert res.win_rate.value == pytest.approx(0.7)
    assert round(res.win_rate.lower, 2) == 0.55
    assert round(res.win_rate.upper, 2) == 0.82


def test_pass_at_k_seed_numbers_and_comb_form():
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert round(pass_at_k(10, 3, 5), 5) == 0.91667
    for n, c, k in [(10, 3, 5), (20, 0, 3), (20, 19, 2), (7, 7, 7)]:
        assert pass_at_k(n, c, k) == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k))
