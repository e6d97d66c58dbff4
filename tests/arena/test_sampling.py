"""Active pair selection: the Sherman-Morrison gains equal brute-force variance drops, next_pair honours
its contract, and the planned batches are proper distributions that keep exploring."""

from __future__ import annotations

import numpy as np
import pytest

from arena.bt import likelihood as bt
from arena.io.battles import aggregate
from arena.simulation.files import simulate
from arena.simulation.sampling import (
    adjacent_contrasts,
    estimate_ratings,
    next_pair,
    outcome_tensor,
    pair_gains,
    pair_probabilities,
    votes_per_pair,
)
from arena.simulation.simulate import ArenaSpec, spread_strengths


def summed_gap_variance(votes: np.ndarray, r: np.ndarray, lam: float) -> float:
    """Brute force: build the information from scratch, invert, sum the adjacent-gap variances."""
    k = len(r)
    info = lam * np.eye(k)
    for i in range(k):
        for j in range(i + 1, k):
            p = 1 / (1 + np.exp(-(r[i] - r[j])))
            x = np.eye(k)[i] - np.eye(k)[j]
            info += (votes[i, j] + votes[j, i]) * p * (1 - p) * np.outer(x, x)
    c = adjacent_contrasts(r)
    return float(np.trace(c @ np.linalg.inv(info) @ c.T))


def test_gains_equal_brute_force_variance_drop():
    rng = np.random.default_rng(0)
    k = 6
    r = rng.normal(size=k)
    votes = np.triu(rng.integers(0, 20, (k, k)).astype(float), 1)
    base = summed_gap_variance(votes, r, 0.5)
    gains = pair_gains(votes, r, prior_precision=0.5)
    for i in range(k):
        for j in range(i + 1, k):
            more = votes.copy()
            more[i, j] += 1
            assert gains[i, j] == pytest.approx(base - summed_gap_variance(more, r, 0.5), rel=1e-8)
    np.testing.assert_allclose(gains, gains.T)
    assert np.all(np.diag(gains) == 0)


def test_adjacent_contrasts_follow_the_rating_order():
    c = adjacent_contrasts(np.array([0.0, 2.0, 1.0]))
    np.testing.assert_array_equal(c, [[0, 1, -1], [-1, 0, 1]])  # 1 > 2 > 0


def test_next_pair_contract():
    spec = ArenaSpec(spread_strengths(6, 3.0))
    battles, _ = simulate(spec, 600, seed=1)
    counts = aggregate(battles)
    i, j = next_pair(counts, seed=0)
    assert i != j and {i, j} <= set(range(6))
    gains = pair_gains(votes_per_pair(counts), estimate_ratings(counts))
    assert gains[i, j] == pytest.approx(gains.max())
    # the same answer from the (k, k, 3) array form, and with the ratings passed in
    assert set(next_pair(outcome_tensor(counts), seed=0)) == {i, j}
    assert set(next_pair(votes_per_pair(counts), estimate_ratings(counts), seed=0)) == {i, j}
    # excluded pairs are never returned
    second = next_pair(counts, exclude=[(j, i)], seed=0)
    assert set(second) != {i, j}
    # left/right order is randomised
    orders = {next_pair(counts, seed=s) for s in range(20)}
    assert orders == {(i, j), (j, i)}
    with pytest.raises(ValueError, match="excluded"):
        next_pair(np.zeros((2, 2)), exclude=[(0, 1)])


def test_cold_start_and_distant_pairs():
    k = 5
    pair = next_pair(np.zeros((k, k)), seed=3)  # no votes yet: any pair, no crash
    assert pair[0] != pair[1]
    # clearly separated ratings, equal votes: a far-apart pair (p ~ 1) is never the best choice
    r = np.array([4.0, 2.0, 0.0, -2.0, -4.0])
    votes = np.ones((k, k)) * 10
    gains = pair_gains(votes, r)
    assert np.argmax(gains[0]) == 1 and gains[0, 4] < 0.01 * gains[0, 1]


def test_estimated_ratings_match_the_bt_fit_with_a_ridge():
    spec = ArenaSpec(spread_strengths(5, 1.5))
    battles, truth = simulate(spec, 20_000, seed=2)
    counts = aggregate(battles)
    r = estimate_ratings(counts, prior_precision=1e-6)
    theta, _ = bt.fit_ratings(counts)
    np.testing.assert_allclose(r, theta, atol=1e-6)
    np.testing.assert_allclose(r - r[-1], truth["strength"], atol=0.08)
    shrunk = estimate_ratings(counts, prior_precision=100.0)
    assert np.ptp(shrunk) < np.ptp(r)  # the prior pulls ratings together


def test_pair_probabilities_plan_a_batch_and_keep_exploring():
    r = np.array(spread_strengths(8, 4.0))
    votes = np.ones((8, 8))
    p = pair_probabilities(votes, r, batch=1000, epsilon=0.1)
    upper = np.triu_indices(8, 1)
    assert p.sum() == pytest.approx(1.0)
    assert np.all(np.tril(p) == 0)
    assert p[upper].min() >= 0.1 / 28 - 1e-12
    adjacent = sum(p[i, i + 1] for i in range(7))
    assert adjacent > 0.5  # most of the batch goes to neighbours when ratings are spread out
