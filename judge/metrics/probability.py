"""Is a logprob judge's P(A wins) a probability? And what is the true win rate behind a noisy judge?"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judge.stats import Interval, wilson_interval


def _checked(p: np.ndarray, outcome: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p, outcome = np.asarray(p, dtype=float), np.asarray(outcome, dtype=float)
    if p.shape != outcome.shape:
        raise ValueError(f"p and outcome must have the same shape, got {p.shape} and {outcome.shape}")
    keep = ~np.isnan(p) & ~np.isnan(outcome)
    if np.any((p[keep] < 0) | (p[keep] > 1)):
        raise ValueError("probabilities must lie in [0, 1]")
    return p[keep], outcome[keep]


def brier_score(p: np.ndarray, outcome: np.ndarray) -> float:
    """Mean squared error of the forecast probability against the 0/1 outcome (Brier 1950). NaNs skipped."""
    p, y = _checked(p, outcome)
    return float(np.mean((p - y) ** 2)) if p.size else float("nan")


def brier_score_multiclass(probs: np.ndarray, outcome: np.ndarray) -> float:
    """Brier's original score over all classes: mean over rows of Σ_k (p_k − [outcome = k])² (Brier 1950).

    ``probs`` is n × K (rows sum to 1), ``outcome`` the class index per row; rows with a NaN are skipped.
    A proper scoring rule in [0, 2]; for K = 2 it is twice the binary :func:`brier_score`. Equals
    scikit-learn's multiclass ``brier_score_loss`` (the test reference).
    """
    probs, outcome = np.asarray(probs, dtype=float), np.asarray(outcome, dtype=float)
    keep = ~np.isnan(outcome) & ~np.isnan(probs).any(axis=1)
    probs, outcome = probs[keep], outcome[keep].astype(int)
    if not probs.size:
        return float("nan")
    onehot = np.eye(probs.shape[1])[outcome]
    return float(np.mean(np.sum((probs - onehot) ** 2, axis=1)))


def _bins(p: np.ndarray, n_bins: int) -> np.ndarray:
    # Equal-width bins on [0, 1]; p = 1 goes in the last bin.
    return np.minimum((p * n_bins).astype(int), n_bins - 1)


def expected_calibration_error(p: np.ndarray, outcome: np.ndarray, n_bins: int = 10) -> float:
    """ECE = Σ_b (n_b / N) |mean outcome_b − mean p_b| over equal-width bins (Naeini et al. 2015; Guo et al. 2017)."""
    p, y = _checked(p, outcome)
    if not p.size:
        return float("nan")
    b = _bins(p, n_bins)
    sum_p = np.bincount(b, weights=p, minlength=n_bins)
    sum_y = np.bincount(b, weights=y, minlength=n_bins)
    return float(np.sum(np.abs(sum_y - sum_p)) / p.size)


def reliability_table(p: np.ndarray, outcome: np.ndarray, n_bins: int = 10, level: float = 0.95) -> pd.DataFrame:
    """Per-bin mean forecast vs observed frequency with a Wilson interval — the reliability diagram's data.

    (Murphy & Winkler 1977.) Empty bins are omitted.
    """
    p, y = _checked(p, outcome)
    b = _bins(p, n_bins)
    rows = []
    for k in range(n_bins):
        m = b == k
        if not m.any():
            continue
        ci = wilson_interval(float(y[m].sum()), int(m.sum()), level)
        rows.append({"bin_low": k / n_bins, "bin_high": (k + 1) / n_bins, "n": int(m.sum()),
                     "mean_p": float(p[m].mean()), "observed": ci.value, "lower": ci.lower, "upper": ci.upper})
    return pd.DataFrame(rows, columns=["bin_low", "bin_high", "n", "mean_p", "observed", "lower", "upper"])


def rogan_gladen(observed_rate: np.ndarray, tpr: np.ndarray, tnr: np.ndarray) -> np.ndarray:
    """True pass rate from a judge's pass rate: θ = (p + TNR − 1) / (TPR + TNR − 1), clipped to [0, 1].

    Rogan & Gladen (1978); the correction judgy applies to LLM-judge pass rates. Vectorised over arrays.
    """
    denom = np.asarray(tpr, dtype=float) + np.asarray(tnr, dtype=float) - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        theta = (np.asarray(observed_rate) + np.asarray(tnr) - 1) / denom
    # TPR + TNR <= 1: the judge carries no information about the true rate; no correction exists.
    return np.where(denom > 0, np.clip(theta, 0.0, 1.0), np.nan)


def corrected_win_rate(judge_pass_labelled: np.ndarray, human_pass_labelled: np.ndarray,
                       judge_pass_unlabelled: np.ndarray | None, n_bootstrap: int = 2000, level: float = 0.95,
                       seed: int = 0, fix_unlabelled: bool = False) -> dict:
    """Judge-estimated pass/win rate corrected with the judge's TPR/TNR, with a bootstrap interval.

    TPR/TNR come from the labelled set (judge and human on the same items); the judge's raw rate from the
    unlabelled set. Both sets are resampled in each bootstrap replicate — the labelled set as a multinomial
    over its four (judge, human) cells and the unlabelled set as a binomial, which is exactly a
    nonparametric bootstrap of each. ``fix_unlabelled=True`` reproduces judgy's interval (unlabelled rate
    held fixed), which is too narrow when the unlabelled set is small; kept for comparison.
    ``judge_pass_unlabelled=None`` means the judge's rate is taken on the labelled set itself (each replicate's
    rate from the same resample); the corrected rate then equals the human rate, a consistency check.
    """
    j = np.asarray(judge_pass_labelled, dtype=bool)
    h = np.asarray(human_pass_labelled, dtype=bool)
    u = j if judge_pass_unlabelled is None else np.asarray(judge_pass_unlabelled, dtype=bool)
    if j.shape != h.shape:
        raise ValueError("judge_pass_labelled and human_pass_labelled must be the same length")
    cells = np.array([np.sum(j & h), np.sum(~j & h), np.sum(j & ~h), np.sum(~j & ~h)])  # TP, FN, FP, TN
    tpr, tnr = cells[0] / (cells[0] + cells[1]), cells[3] / (cells[2] + cells[3])
    raw = float(u.mean())
    point = float(rogan_gladen(raw, tpr, tnr))
    rng = np.random.default_rng(seed)
    boot_cells = rng.multinomial(j.size, cells / j.size, size=n_bootstrap)
    with np.errstate(invalid="ignore", divide="ignore"):
        b_tpr = boot_cells[:, 0] / (boot_cells[:, 0] + boot_cells[:, 1])
        b_tnr = boot_cells[:, 3] / (boot_cells[:, 2] + boot_cells[:, 3])
    if judge_pass_unlabelled is None:
        b_raw = (boot_cells[:, 0] + boot_cells[:, 2]) / j.size
    elif fix_unlabelled:
        b_raw = np.full(n_bootstrap, raw)
    else:
        b_raw = rng.binomial(u.size, raw, n_bootstrap) / u.size
    boots = rogan_gladen(b_raw, b_tpr, b_tnr)
    alpha = (1 - level) / 2
    finite = boots[~np.isnan(boots)]
    lo, hi = np.percentile(finite, [100 * alpha, 100 * (1 - alpha)]) if finite.size else (np.nan, np.nan)
    return {
        "raw_rate": raw,
        "tpr": float(tpr),
        "tnr": float(tnr),
        "n_labelled": int(j.size),
        "n_unlabelled": 0 if judge_pass_unlabelled is None else int(u.size),
        "corrected": Interval(point, float(lo), float(hi), level).as_dict(),
        "uninformative": bool(not tpr + tnr > 1),
        "replicates_without_correction": int(n_bootstrap - finite.size),
    }
