"""Sample-size planning: decisive pairs for a paired A-vs-B test, and votes for a leaderboard to separate.

Three answers, each a small pure function:

* :func:`normal_pairs_needed` — the seed's normal approximation (z = 1.96 and 0.84, rounded up);
* :func:`sign_test_power` / :func:`exact_pairs_needed` — the exact two-sided binomial sign test;
* :func:`leaderboard_votes_needed` — votes until adjacent models separate, from the expected Fisher
  information of the Bradley-Terry (or ties) model under a given pair design.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import special

# The A-vs-B table needs only binomial tails and normal quantiles: scipy.special's Cephes bdtr, bdtrc and
# ndtri give them (equal to scipy.stats' binom and norm to 1e-9 relative) without importing scipy.stats
# (~0.4 s) for a five-row table. The leaderboard planner imports the simulator's outcome model when it runs.

SEED_WIN_RATES: tuple[float, ...] = (0.55, 0.60, 0.65, 0.70, 0.80)
SEED_Z_ALPHA, SEED_Z_BETA = 1.96, 0.84


def binom_sf(k: np.ndarray | int, n: int, p: float) -> np.ndarray:
    """``P(X > k)`` for ``X ~ Binomial(n, p)`` (``scipy.stats.binom.sf``), defined for every integer ``k``."""
    k = np.asarray(k)
    return np.where(k < 0, 1.0, np.where(k >= n, 0.0, special.bdtrc(np.clip(k, 0, n), n, p)))


def binom_cdf(k: np.ndarray | int, n: int, p: float) -> np.ndarray:
    """``P(X <= k)`` for ``X ~ Binomial(n, p)`` (``scipy.stats.binom.cdf``), defined for every integer ``k``."""
    k = np.asarray(k)
    return np.where(k < 0, 0.0, np.where(k >= n, 1.0, special.bdtr(np.clip(k, 0, n), n, p)))


def normal_pairs_needed(p: float, z_alpha: float = SEED_Z_ALPHA, z_beta: float = SEED_Z_BETA) -> int:
    """Decisive pairs for a two-sided one-sample proportion test of ``p`` against 1/2 (normal approximation).

    ``n = ceil(((z_alpha * 0.5 + z_beta * sqrt(p (1 - p))) / (p - 0.5))^2)`` — the standard formula for one
    proportion (e.g. Chow, Shao & Wang, *Sample Size Calculations in Clinical Research*, 4.1) with the seed's
    z = 1.96 (two-sided alpha 0.05) and 0.84 (80% power). Gives 782, 194, 85, 47, 20 for 0.55 ... 0.80.
    """
    _check_rate(p)
    effect = abs(p - 0.5)
    n = ((z_alpha * 0.5 + z_beta * math.sqrt(p * (1.0 - p))) / effect) ** 2
    return math.ceil(n - 1e-9)  # guard against 20.000000000000004-style float noise


def sign_test_rejection_threshold(n: int, alpha: float = 0.05) -> int:
    """Smallest ``c`` with two-sided exact sign-test p-value ``2 P(X >= c | 1/2) <= alpha``; ``n + 1`` if none.

    The test rejects when the winner count ``X >= c`` or ``X <= n - c`` (symmetric, since p0 = 1/2).
    """
    x = np.arange(n + 1)
    pvals = np.minimum(1.0, 2.0 * binom_sf(x - 1, n, 0.5))
    ok = np.flatnonzero((pvals <= alpha * (1 + 1e-12)) & (x > n / 2))
    return int(ok[0]) if len(ok) else n + 1


def sign_test_power(n: int, p: float, alpha: float = 0.05) -> float:
    """Exact power of the two-sided binomial sign test (p0 = 1/2) with ``n`` decisive pairs at true rate ``p``.

    Reference: the exact binomial test (Clopper & Pearson style tail sums; Conover, *Practical Nonparametric
    Statistics*, 3.4). Power = ``P(X >= c | p) + P(X <= n - c | p)``.
    """
    _check_rate(p)
    c = sign_test_rejection_threshold(n, alpha)
    if c > n:
        return 0.0
    return float(binom_sf(c - 1, n, p) + binom_cdf(n - c, n, p))


def exact_pairs_needed(p: float, alpha: float = 0.05, power: float = 0.80, n_max: int = 200_000) -> tuple[int, int]:
    """(first n, stable n) for the exact sign test to reach ``power`` at true rate ``p``.

    Exact power is a saw-tooth in ``n`` (the rejection threshold moves in integer steps), so the first ``n``
    that reaches the target can be followed by smaller ``n + 1`` powers; ``stable`` is the smallest ``n`` from
    which every larger ``n`` (checked up to twice the first, plus 50) also reaches it.
    """
    first = next((n for n in range(1, n_max + 1) if sign_test_power(n, p, alpha) >= power), None)
    if first is None:
        raise ValueError(f"power {power} not reached with {n_max} pairs at p={p}")
    horizon = range(first, 2 * first + 50)
    below = [m for m in horizon if sign_test_power(m, p, alpha) < power]
    return first, (below[-1] + 1 if below else first)


def power_table(rates: Sequence[float] = SEED_WIN_RATES, alpha: float = 0.05, power: float = 0.80) -> pd.DataFrame:
    """The seed's table: decisive pairs for ``power`` at each true win rate, normal vs exact sign test."""
    rows = []
    z_beta = SEED_Z_BETA if power == 0.80 else float(special.ndtri(power))
    z_alpha = SEED_Z_ALPHA if alpha == 0.05 else float(special.ndtri(1 - alpha / 2))
    for p in rates:
        first, stable = exact_pairs_needed(p, alpha, power)
        normal = normal_pairs_needed(p, z_alpha, z_beta)
        rows.append({"win_rate": p, "normal": normal, "exact": first, "exact_stable": stable,
                     "exact_power_at_normal": sign_test_power(normal, p, alpha)})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------- leaderboards


def outcome_information(delta: np.ndarray, ties: str = "none", tie_rate: float = 0.0) -> np.ndarray:
    """Fisher information about the strength gap ``delta`` carried by one vote: ``sum_o p_o'(delta)^2 / p_o``.

    Equals ``p (1 - p)`` for Bradley-Terry; for Rao-Kupper / Davidson ties it is computed from the
    three outcome probabilities of :func:`arena.simulation.simulate.outcome_probabilities` (central differences).
    """
    from arena.bt.ties import tie_parameter_for_rate
    from arena.simulation.simulate import outcome_probabilities

    delta = np.asarray(delta, np.float64)
    theta = tie_parameter_for_rate(ties, tie_rate)

    def probs(d: np.ndarray) -> np.ndarray:
        pa, pb = outcome_probabilities(d, ties, theta)
        return np.stack([pa, pb, 1.0 - pa - pb])

    h = 1e-5
    p = probs(delta)
    dp = (probs(delta + h) - probs(delta - h)) / (2 * h)
    return np.sum(np.where(p > 1e-300, dp**2 / np.maximum(p, 1e-300), 0.0), axis=0)


def information_matrix(strengths: np.ndarray, pair_weights: np.ndarray, ties: str = "none",
                       tie_rate: float = 0.0) -> np.ndarray:
    """Expected Fisher information ``sum_{i<j} w_ij I(s_i - s_j) (e_i - e_j)(e_i - e_j)^T`` (k x k).

    ``pair_weights[i, j]`` is the expected number of votes on the unordered pair (symmetric or upper).
    """
    s = np.asarray(strengths, np.float64)
    w = np.triu(pair_weights, 1) + np.triu(np.asarray(pair_weights).T, 1)
    info_ij = w * outcome_information(s[:, None] - s[None, :], ties, tie_rate)
    lap = -(info_ij + info_ij.T)
    lap[np.diag_indices_from(lap)] = -lap.sum(axis=1)
    return lap


def contrast_covariance(information: np.ndarray) -> np.ndarray:
    """Covariance of the sum-to-zero ratings: the Moore-Penrose inverse of the (rank k-1) information."""
    return np.linalg.pinv(information, hermitian=True)


def leaderboard_votes_needed(
    strengths: Sequence[float], *, level: float = 0.95, power: float | None = None,
    pair_weights: np.ndarray | None = None, ties: str = "none", tie_rate: float = 0.0,
    anchor: int | None = None, models: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Votes until each adjacent pair (sorted by strength) separates, under a pair design.

    For one vote under design ``pair_weights`` (default uniform over pairs, summing to 1) the per-vote
    covariance ``V`` is the inverse expected information (:func:`information_matrix`); with ``N`` votes it is
    ``V / N`` (asymptotic MLE theory). Columns:

    * ``votes_gap`` — the ``level`` CI of the gap ``s_i - s_j`` excludes 0:
      ``N = z^2 v / gap^2`` with ``z = z_{(1+level)/2}``, or ``(z + z_power)^2 v / gap^2`` when ``power`` is
      given (the probability that it excludes 0);
    * ``votes_overlap`` — the two models' own intervals stop overlapping (the leaderboard picture, a stricter
      test): ``N = z^2 (se_i + se_j)^2 / gap^2`` with ratings centred at 0 or anchored at model ``anchor``.
    """
    s = np.asarray(strengths, np.float64)
    k = len(s)
    weights = np.ones((k, k)) / (k * (k - 1) / 2) if pair_weights is None else np.asarray(pair_weights, float)
    weights = np.triu(weights, 1) + np.triu(weights.T, 1)
    weights = weights / weights.sum()
    cov = contrast_covariance(information_matrix(s, weights, ties, tie_rate))
    if anchor is not None:
        e = np.eye(k) - np.eye(k)[anchor]  # ratings minus the anchor's rating
        cov = e @ cov @ e.T
    z = special.ndtri(0.5 + level / 2)
    z_total = z + (special.ndtri(power) if power is not None else 0.0)
    order = np.argsort(-s, kind="stable")
    names = list(models) if models is not None else [str(i) for i in range(k)]
    rows = []
    for hi, lo in zip(order[:-1], order[1:], strict=True):
        gap = s[hi] - s[lo]
        var_gap = cov[hi, hi] + cov[lo, lo] - 2 * cov[hi, lo]
        se_sum = math.sqrt(max(cov[hi, hi], 0)) + math.sqrt(max(cov[lo, lo], 0))
        rows.append({
            "upper": names[hi], "lower": names[lo], "gap": gap,
            "votes_gap": math.ceil(z_total**2 * var_gap / gap**2) if gap > 0 else math.inf,
            "votes_overlap": math.ceil(z_total**2 * se_sum**2 / gap**2) if gap > 0 else math.inf,
        })
    return pd.DataFrame(rows)


def _check_rate(p: float) -> None:
    if not 0.0 < p < 1.0 or p == 0.5:
        raise ValueError(f"true win rate must be in (0, 1) and not 0.5; got {p}")
