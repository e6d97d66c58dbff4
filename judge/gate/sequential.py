"""Stopping early without cheating: an anytime-valid sign test and a confidence sequence for the win rate.

Under the null the decisive pairs are fair coin flips. The e-process is the likelihood ratio of a
Beta(a, a) mixture over the win rate against p = 1/2 (Robbins 1970, "Statistical methods related to the law
of the iterated logarithm"; the beta-binomial mixture of Howard, Ramdas, McAuliffe & Sekhon 2021,
"Time-uniform, nonparametric, nonasymptotic confidence sequences", Ann. Statist. 49(2), 3.2)::

    E_n = B(a + W, a + L) / B(a, a) * 2^n          (W wins, L losses, n = W + L)

It is a nonnegative martingale with mean 1 under the null, so by Ville's inequality (1939)
``P(sup_n E_n >= 1/alpha) <= alpha``: rejecting the first time ``E_n >= 1/alpha`` keeps the type-I error at
alpha however often one looks, and ``1 / max_{m <= n} E_m`` is an anytime-valid p-value. Ties add no
information and leave ``E`` unchanged. The same mixture against any other p gives the confidence sequence
``{p : B(a + W, a + L) / B(a, a) / (p^W (1 - p)^L) < 1/alpha}``, valid uniformly over n. A fixed-n test
repeated after every pair (the "naive" look) has no such guarantee.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats
from scipy.special import betaln

from judge.stats import Interval
from preflab.errors import InputError

#: Beta(a, a) prior of the mixture: a = 5 (standard deviation 0.15) puts its mass on win rates within about
#: ±0.3 of 1/2, where comparisons of two versions of one model live (docs/compare.md has its stopping times).
DEFAULT_PRIOR = 5.0


@dataclass(frozen=True)
class SequentialSettings:
    """``alpha`` for each dimension's test (the caller divides by the number of dimensions), the mixture's
    prior, and caps on the pairs judged and their cost."""

    alpha: float = 0.05
    prior: float = DEFAULT_PRIOR
    max_items: int | None = None
    max_cost: float | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise InputError("<options>", None, "--alpha", f"{self.alpha:g} is not between 0 and 1",
                             "give a probability such as 0.05")
        if self.prior <= 0:
            raise InputError("<options>", None, "prior", f"{self.prior:g} is not positive", "give a Beta prior > 0")
        if self.max_items is not None and self.max_items < 1:
            raise InputError("<options>", None, "--max-items", f"{self.max_items} is not a positive count",
                             "give the most prompts to judge, or leave it out")
        if self.max_cost is not None and not self.max_cost > 0:
            raise InputError("<options>", None, "--max-cost", f"{self.max_cost:g} is not a positive amount",
                             "give the most USD to spend, or leave it out")


def log_e_value(wins: np.ndarray, losses: np.ndarray, prior: float = DEFAULT_PRIOR) -> np.ndarray:
    """log E_n of the Beta(prior, prior) mixture against p = 1/2 (elementwise over counts)."""
    w, lo = np.asarray(wins, float), np.asarray(losses, float)
    return betaln(prior + w, prior + lo) - betaln(prior, prior) + (w + lo) * np.log(2.0)


def anytime_p_values(steps: np.ndarray, prior: float = DEFAULT_PRIOR) -> np.ndarray:
    """The anytime-valid p-value after each pair: ``min(1, 1 / max_{m <= n} E_m)``; ``steps`` holds +1 (a
    candidate win), -1 (a loss) or 0 (a tie or nothing) per pair, along the last axis."""
    s = np.asarray(steps)
    wins, losses = np.cumsum(s > 0, axis=-1), np.cumsum(s < 0, axis=-1)
    running = np.maximum.accumulate(log_e_value(wins, losses, prior), axis=-1)
    return np.minimum(1.0, np.exp(-running))


def stopping_index(steps: np.ndarray, alpha: float, prior: float = DEFAULT_PRIOR) -> tuple[np.ndarray, np.ndarray]:
    """(pairs judged, rejected): the first pair at which the e-process reaches 1/alpha, or all of them."""
    return _first(anytime_p_values(steps, prior) <= alpha)


def _first(hit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    any_hit = hit.any(axis=-1)
    return np.where(any_hit, np.argmax(hit, axis=-1) + 1, hit.shape[-1]), any_hit


def confidence_sequence(wins: int, losses: int, alpha: float = 0.05, prior: float = DEFAULT_PRIOR) -> Interval:
    """The win rate's (1 - alpha) confidence sequence at these counts (valid at any stopping time)."""
    n = wins + losses
    if n == 0:
        return Interval(float("nan"), 0.0, 1.0, 1 - alpha)
    log_mix = betaln(prior + wins, prior + losses) - betaln(prior, prior)
    bound = np.log(1 / alpha)

    def excess(p: float) -> float:  # > 0 where p is rejected
        return log_mix - (wins * np.log(p) + losses * np.log1p(-p)) - bound

    centre = (wins + prior) / (n + 2 * prior)  # inside the set: its log-ratio there is below the bound
    eps = 1e-12
    lower = 0.0 if excess(eps) <= 0 else optimize.brentq(excess, eps, centre)
    upper = 1.0 if excess(1 - eps) <= 0 else optimize.brentq(excess, centre, 1 - eps)
    return Interval(wins / n, float(lower), float(upper), 1 - alpha)


def naive_stopping_index(steps: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(pairs judged, rejected) when an exact two-sided sign test is repeated after every pair and the first
    p <= alpha stops it: the look that inflates false positives."""
    s = np.asarray(steps)
    wins, losses = np.cumsum(s > 0, axis=-1), np.cumsum(s < 0, axis=-1)
    decisive = wins + losses
    m = np.arange(int(decisive.max()) + 1 if decisive.size else 1)
    # two-sided p = 2 P(X >= x) at 1/2: reject when the larger count reaches isf(alpha / 2) + 1
    threshold = np.where(m > 0, stats.binom.isf(alpha / 2, np.maximum(m, 1), 0.5) + 1, np.inf)
    return _first((np.maximum(wins, losses) >= threshold[decisive]) & (decisive > 0))


def simulate(win_rate: float, n_max: int, reps: int, alpha: float = 0.05, tie_rate: float = 0.0,
             prior: float = DEFAULT_PRIOR, seed: int = 0) -> dict:
    """Monte Carlo of the sequential test at a true win rate (ties at ``tie_rate``), looking after every pair
    up to ``n_max`` pairs: rejection rate (its binomial standard error), mean pairs judged, and the naive
    repeated sign test's rejection rate on the same draws."""
    rng = np.random.default_rng(seed)
    u = rng.random((reps, n_max))
    steps = np.where(u < tie_rate, 0, np.where(u < tie_rate + (1 - tie_rate) * win_rate, 1, -1)).astype(np.int8)
    stop, rejected = stopping_index(steps, alpha, prior)
    _, naive_rej = naive_stopping_index(steps, alpha)

    def se(x: np.ndarray) -> float:
        return float(np.sqrt(x.mean() * (1 - x.mean()) / reps))

    return {"win_rate": win_rate, "n_max": n_max, "reps": reps, "rejection_rate": float(rejected.mean()),
            "rejection_se": se(rejected), "mean_pairs": float(stop.mean()),
            "mean_pairs_se": float(stop.std(ddof=1) / np.sqrt(reps)),
            "median_pairs": float(np.median(stop)), "pairs_for_80pct": float(np.quantile(stop, 0.8)),
            "naive_rejection_rate": float(naive_rej.mean()), "naive_rejection_se": se(naive_rej)}
