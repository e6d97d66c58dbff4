"""Percentile-bootstrap intervals for a benchmark's headline: prompts resampled within their subset.

A published benchmark fixes how many prompts each subset has (JudgeBench's four sources, RewardBench's 23
subsets), so a replicate resamples the prompts of each subset with replacement, keeping its size (the
stratified bootstrap, Efron & Tibshirani 1993, §8.2), recomputes every subset's mean, and the headline is then
any function of those means (a weighted mean for RewardBench's sections). The interval is the replicates'
percentiles, as :func:`judge.stats.paired_bootstrap` takes them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from judge.stats import Interval


@dataclass(frozen=True)
class SubsetMeans:
    """Each subset's mean (``point``, shape ``(S,)``), its size, and ``replicates`` (``(B, S)``) of it."""

    names: tuple[str, ...]
    sizes: np.ndarray
    point: np.ndarray
    replicates: np.ndarray

    def column(self, name: str) -> int:
        return self.names.index(name)


def subset_means(values: np.ndarray, subsets: np.ndarray, n_bootstrap: int = 1000, seed: int = 0) -> SubsetMeans:
    """The mean of ``values`` per subset (names sorted) and its stratified bootstrap replicates.

    One ``np.random.default_rng(seed)`` draws, subset by subset in name order, a ``(n_bootstrap, n_s)`` index
    matrix; ``n_bootstrap = 0`` gives no replicates (point values only).
    """
    values = np.asarray(values, dtype=float)
    subsets = np.asarray(subsets).astype(str)
    if values.shape != subsets.shape or values.ndim != 1 or values.size == 0:
        raise ValueError("values and subsets must be equal-length, non-empty 1-D arrays")
    names = tuple(sorted(set(subsets.tolist())))
    rng = np.random.default_rng(seed)
    point, sizes, reps = [], [], []
    for name in names:
        v = values[subsets == name]
        point.append(v.mean())
        sizes.append(v.size)
        reps.append(v[rng.integers(0, v.size, size=(n_bootstrap, v.size))].mean(axis=1) if n_bootstrap else
                    np.empty(0))
    return SubsetMeans(names, np.array(sizes), np.array(point), np.column_stack(reps) if n_bootstrap else
                       np.empty((0, len(names))))


def interval_of(means: SubsetMeans, statistic: Callable[[np.ndarray], np.ndarray], level: float = 0.95) -> Interval:
    """``statistic`` of the subset means (it takes ``(..., S)`` and returns ``(...)``) with its percentile
    interval over the replicates; no replicates → the point value with unknown (NaN) bounds."""
    value = float(statistic(means.point[None, :])[0])
    if means.replicates.shape[0] == 0:
        return Interval(value, float("nan"), float("nan"), level)
    boots = statistic(means.replicates)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.percentile(boots, [100 * alpha, 100 * (1 - alpha)])
    return Interval(value, float(lo), float(hi), level)


def weighted_mean(columns: list[int], weights: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """The statistic ``Σ w_i m_i / Σ w_i`` over the chosen subset columns (weights as given, not renormalised
    to the data): RewardBench's prompt-weighted sections, or a pooled mean with weights = subset sizes."""
    w = np.asarray(weights, dtype=float)

    def stat(m: np.ndarray) -> np.ndarray:
        return m[..., columns] @ w / w.sum()

    return stat
