"""Sample-size planning: the seed's normal table exactly, the exact sign test against a brute-force
binomial sum and scipy's binomtest, and the leaderboard planner against :func:`arena.bt.likelihood.hessian` and
against simulated arenas."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from arena.bt import likelihood as bt
from arena.bt.ties import tie_parameter_for_rate
from arena.simulation.power import (
    exact_pairs_needed,
    information_matrix,
    leaderboard_votes_needed,
    normal_pairs_needed,
    outcome_information,
    power_table,
    sign_test_power,
    sign_test_rejection_threshold,
)
from arena.simulation.sampling import all_pairs_data
from arena.simulation.simulate import ArenaSpec, simulate_codes


def brute_force_power(n: int, p: float, alpha: float = 0.05) -> float:
    """Power by definition: enumerate every outcome x, compute its exact two-sided p-value under 1/2
    (sum of the probabilities of outcomes no more likely than x, in exact integer arithmetic), and sum
    P(x | p) over those that reject."""
    weights = [math.comb(n, y) for y in range(n + 1)]
    total = 2**n
    power = 0.0
    for x in range(n + 1):
        pval = Fraction(sum(w for w in weights if w <= weights[x]), total)
        if pval <= Fraction(alpha).limit_denominator(10**6):
            power += math.comb(n, x) * p**x * (1 - p) ** (n - x)
    return power


def test_normal_table_equals_the_seed():
    table = power_table()
    assert table["normal"].tolist() == [782, 194, 85, 47, 20]
    assert [normal_pairs_needed(p) for p in (0.45, 0.40)] == [782, 194]  # symmetric in the direction


@pytest.mark.parametrize("n, p", [(5, 0.9), (20, 0.8), (47, 0.7), (85, 0.65), (120, 0.6), (194, 0.6)])
def test_exact_power_equals_brute_force_binomial_sum(n, p):
    assert sign_test_power(n, p) == pytest.approx(brute_force_power(n, p), abs=1e-12)


def test_rejection_threshold_agrees_with_scipy_binomtest():
    for n in (6, 17, 40, 101):
        c = sign_test_rejection_threshold(n)
        assert stats.binomtest(c, n, 0.5).pvalue <= 0.05
        assert stats.binomtest(c - 1, n, 0.5).pvalue > 0.05
    assert sign_test_rejection_threshold(5) == 6  # five pairs can never reach p <= 0.05 two-sided
    assert sign_test_power(5, 0.99) == 0.0


def test_exact_column_is_the_first_n_reaching_80_percent():
    table = power_table()
    for row in table.itertuples():
        n = row.exact
        if n > 200:  # brute force is quadratic; the big row is checked against the scipy-based power
            assert sign_test_power(n, row.win_rate) >= 0.8 > sign_test_power(n - 1, row.win_rate)
            continue
        assert brute_force_power(n, row.win_rate) >= 0.8
        assert all(brute_force_power(m, row.win_rate) < 0.8 for m in range(max(1, n - 15), n))
        assert row.exact_stable >= row.exact
    # the exact test differs a little from the normal approximation, as the seed says
    assert table["exact"].tolist() != table["normal"].tolist()
    assert np.all(np.abs(table["exact"] - table["normal"]) <= 0.1 * table["normal"] + 2)


def test_sign_test_power_matches_simulation():
    rng = np.random.default_rng(0)
    n, p = 85, 0.65
    wins = rng.binomial(n, p, 40_000)
    c = sign_test_rejection_threshold(n)
    simulated = np.mean((wins >= c) | (wins <= n - c))
    assert simulated == pytest.approx(sign_test_power(n, p), abs=4 * math.sqrt(0.25 / 40_000))
    assert exact_pairs_needed(0.8) == (20, 23)


@pytest.mark.parametrize("ties", ["none", "rao-kupper", "davidson"])
def test_information_matrix_equals_expected_hessian_of_the_bt_fit(ties):
    """Our closed-form expected information equals the fit's Hessian evaluated at the truth with
    the expected counts (for a multinomial the expected observed information is the Fisher information)."""
    s = np.array([1.2, 0.5, 0.0, -0.4])
    k = len(s)
    rate = 0.0 if ties == "none" else 0.3
    theta = tie_parameter_for_rate(ties, rate)
    from arena.simulation.simulate import outcome_probabilities

    w = np.triu(np.arange(1.0, k * k + 1).reshape(k, k), 1)  # unequal votes per pair
    oc = np.zeros((k, k, 3))
    for i, j in zip(*np.triu_indices(k, 1), strict=True):
        pa, pb = outcome_probabilities(np.array([s[i] - s[j]]), ties, theta)
        oc[i, j] = w[i, j] * np.array([pa[0], pb[0], 1 - pa[0] - pb[0]])
    data = all_pairs_data(oc)
    fit_ties = "half" if ties == "none" else ties
    psi = 0.0 if ties == "none" else (math.log(math.log(theta)) if ties == "rao-kupper" else math.log(theta))
    x = np.concatenate([s, [psi]])
    h = np.asarray(bt.hessian(x, data, fit_ties, ridge=0.0))[:k, :k]
    np.testing.assert_allclose(information_matrix(s, w, ties, rate), h, rtol=1e-6, atol=1e-9)
    assert outcome_information(np.array([0.0]))[0] == pytest.approx(0.25, rel=1e-8)


def test_leaderboard_planner_power_holds_in_simulation():
    """At the planned N (80% power that the adjacent gap's CI excludes 0), simulated arenas fitted with
    the project's BT fit and sandwich covariance separate about 80% of the time."""
    s = (0.6, 0.3, 0.0)
    plan = leaderboard_votes_needed(s, power=0.8)
    n = int(plan["votes_gap"].max())
    worst = int(plan["votes_gap"].idxmax())
    hi, lo = worst, worst + 1
    spec = ArenaSpec(s)
    rng = np.random.default_rng(11)
    separated = []
    for _ in range(150):
        c = simulate_codes(spec, n, rng)
        oc = np.zeros((3, 3, 3))
        np.add.at(oc, (c.a, c.b, c.outcome), 1.0)
        data = all_pairs_data(oc)
        fit = bt.fit(bt.initial_x(data, 3, "half"), data, "half")
        cov = np.asarray(bt.sandwich_covariance(fit.x, data, "half"))
        gap = float(fit.x[hi] - fit.x[lo])
        se = math.sqrt(cov[hi, hi] + cov[lo, lo] - 2 * cov[hi, lo])
        separated.append(gap - 1.96 * se > 0)
    assert np.mean(separated) == pytest.approx(0.8, abs=0.1)
    overlap = leaderboard_votes_needed(s, anchor=2)
    assert (overlap["votes_overlap"] >= overlap["votes_gap"]).all()  # non-overlap is the stricter test


def test_bad_win_rate_is_explained():
    with pytest.raises(ValueError, match="not 0.5"):
        normal_pairs_needed(0.5)


def test_power_cli_prints_the_seed_table_and_a_leaderboard_plan():
    from typer.testing import CliRunner

    from preflab_cli import app

    result = CliRunner().invoke(app, ["power"])
    assert result.exit_code == 0, result.output
    normal_column = [line.split()[1] for line in result.output.splitlines()[2:7]]
    assert normal_column == ["782", "194", "85", "47", "20"]
    plan = CliRunner().invoke(app, ["power", "--strengths", "1.6,1.2,0.9,0.4,0"])
    assert plan.exit_code == 0, plan.output
    expected = leaderboard_votes_needed((1.6, 1.2, 0.9, 0.4, 0.0), power=0.8)
    assert f"total votes needed: {expected['votes_gap'].max()} (gap)" in plan.output
