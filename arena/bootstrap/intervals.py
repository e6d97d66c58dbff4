"""What bootstrap replicates say: percentile intervals, ranks and the rank distribution, which replicates are usable,
and bounds left open where resamples put a model beyond the rest (no MLE there).
"""

from __future__ import annotations

import numpy as np

from arena.bt import likelihood as bt


def percentile_interval(samples: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval per column of ``samples`` (R, K) (Efron & Tibshirani 1993, 13.3)."""
    alpha = (1 - level) / 2
    lo, hi = np.quantile(samples, [alpha, 1 - alpha], axis=0)
    return lo, hi


def rank_from_intervals(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Chatbot Arena's rank: 1 + number of models whose lower bound exceeds this model's upper bound."""
    lower, upper = np.asarray(lower), np.asarray(upper)
    return 1 + (lower[None, :] > upper[:, None]).sum(axis=1)


def replicate_ranks(samples: np.ndarray) -> np.ndarray:
    """Rank of each model in each replicate (1 = best; ties share the better rank), shape (R, K)."""
    samples = np.asarray(samples)
    ordered = np.sort(samples, axis=1)
    k = samples.shape[1]
    # 1 + number strictly better = k + 1 - (number <= value), row by row (no scipy import on the CLI path)
    return np.stack([k + 1 - np.searchsorted(o, s, side="right") for o, s in zip(ordered, samples, strict=True)])


def rank_distribution(samples: np.ndarray) -> np.ndarray:
    """P(rank = r) per model: (K, K) matrix, row = model, column r-1 = rank r, from bootstrap replicates.

    Rank uncertainty by resampling (Hall & Miller 2009, 'Using the bootstrap to quantify the authority of
    an empirical ranking', Ann. Stat. 37:3929)."""
    ranks = replicate_ranks(samples)
    k = ranks.shape[1]
    dist = np.stack([np.bincount(ranks[:, m] - 1, minlength=k) for m in range(k)])
    return dist / ranks.shape[0]


def usable_replicates(converged: np.ndarray | None, separated: np.ndarray | None,
                      ridge: float = bt.DEFAULT_RIDGE) -> np.ndarray | slice:
    """Replicates the intervals use: converged, and with an MLE, unless a ridge prior (> the default
    ridge) was asked for, whose fits exist anyway."""
    if converged is None or separated is None:
        return slice(None)
    return converged & (~separated | (ridge > bt.DEFAULT_RIDGE))


def separation_sides(theta: np.ndarray, outside: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(above, below) masks (R, K): models outside a separated replicate's main group, on the side of it
    where the ridge put them (their MLE gap to the main group is +infinity or -infinity there)."""
    above, below = np.zeros(outside.shape, bool), np.zeros(outside.shape, bool)
    for r in np.flatnonzero(outside.any(axis=1)):
        ref = np.median(theta[r, ~outside[r]])
        above[r] = outside[r] & (theta[r] > ref)
        below[r] = outside[r] & (theta[r] <= ref)
    return above, below


def usable_interval(samples: np.ndarray, usable: np.ndarray, above: np.ndarray | None = None,
                    below: np.ndarray | None = None, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval over the ``usable`` replicates, with a side made infinite where it is not known.

    Excluded replicates are not ignored silently: where more than ``(1 - level) / 2`` of *all* replicates
    put a model above (``above``) or below (``below``) the rest with an infinite gap, the upper (lower)
    percentile of the complete set is infinite, so that bound is reported as +inf (-inf). With fewer
    than two usable replicates every bound is infinite. ``usable`` is (R,) or one mask per model (R, K).
    """
    k, n = samples.shape[1], samples.shape[0]
    if usable.ndim == 2:  # a mask per model: column by column
        lo, hi = np.full(k, -np.inf), np.full(k, np.inf)
        for m in np.flatnonzero(usable.sum(axis=0) >= 2):
            lo[m], hi[m] = (v[0] for v in percentile_interval(samples[usable[:, m], m:m + 1], level))
    elif usable.sum() < 2:
        return np.full(k, -np.inf), np.full(k, np.inf)
    else:
        lo, hi = percentile_interval(samples[usable], level)
    tail = (1 - level) / 2 * n
    if above is not None:
        hi = np.where(above.sum(axis=0) > tail, np.inf, hi)
    if below is not None:
        lo = np.where(below.sum(axis=0) > tail, -np.inf, lo)
    return lo, hi
