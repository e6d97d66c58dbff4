"""How well a reward model's scores read as probabilities: at T = 1 (the Bradley-Terry reading it was trained
for) and at a temperature fitted on the labels by cross-fitting (temperature scaling, Guo et al. 2017).

``P(x wins) = σ(m / T)`` with ``m = s_x − s_y``. The fitted T is never scored on the pairs it was fitted on:
the decided labelled pairs are split into K folds; T is fitted (maximum likelihood, one parameter) on K − 1
folds and predicts the held-out fold; Brier and ECE at the fitted T are computed on those out-of-fold
predictions. The T shown is the fit on all pairs (the one a user would apply), with the folds' range.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from judge.metrics.probability import brier_score, expected_calibration_error
from preflab.outcomes import Outcome

#: Largest inverse temperature a fit may reach (separable labels send it to infinity): T ≥ 1e-3.
MAX_BETA = 1e3


def fit_inverse_temperature(margin: np.ndarray, x_won: np.ndarray, iterations: int = 100, start: float = 0.0) -> float:
    """β = 1/T maximising Σ log σ(±β m) (logistic regression through the origin on the margin).

    Newton's method from β = ``start`` (0) with step halving: the negative log-likelihood is convex in β, and a full
    Newton step can overshoot where the margins are large and σ saturates, so a step that does not lower it is
    halved. |β| is capped at :data:`MAX_BETA` (separable labels send it to infinity). Negative β: the scores
    rank the answers the wrong way round."""
    m, y = np.asarray(margin, dtype=float), np.asarray(x_won, dtype=float)
    s = np.where(y > 0.5, m, -m)  # the signed margin: the log-likelihood is Σ log σ(β s)

    def nll(beta: float) -> float:
        return float(np.sum(np.logaddexp(0.0, -beta * s)))

    beta = float(start)
    f = nll(beta)
    for _ in range(iterations):
        q = expit(-beta * s)  # 1 − σ(β s)
        grad, hess = -float(np.dot(s, q)), float(np.dot(s * s, q * (1.0 - q)))
        if hess <= 1e-300 or abs(grad) <= 1e-12 * max(1.0, f):
            break
        step, shrink = grad / hess, 1.0
        while shrink > 1e-6:
            trial = float(np.clip(beta - shrink * step, -MAX_BETA, MAX_BETA))
            f_trial = nll(trial)
            if f_trial <= f:
                break
            shrink /= 2
        else:
            break
        moved = abs(trial - beta)
        beta, f = trial, f_trial
        if moved <= 1e-10 * max(1.0, abs(beta)) or abs(beta) >= MAX_BETA:
            break
    return beta


def cross_fitted_probabilities(margin: np.ndarray, x_won: np.ndarray, folds: int = 5, seed: int = 0,
                               start: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Out-of-fold σ(β_k m) for each pair (β_k fitted without that pair's fold) and the folds' β_k."""
    m, y = np.asarray(margin, dtype=float), np.asarray(x_won, dtype=float)
    k = int(min(folds, m.size))
    fold = np.random.default_rng(seed).permutation(m.size) % k
    p, betas = np.empty(m.size), np.empty(k)
    for f in range(k):
        held = fold == f
        betas[f] = fit_inverse_temperature(m[~held], y[~held], start=start)  # warm start: the all-pairs fit
        p[held] = expit(betas[f] * m[held])
    return p, betas


def _temperature(beta: float) -> float | None:
    return None if beta <= 0 else 1.0 / beta


def score_calibration(margin: np.ndarray, human: np.ndarray, folds: int = 5, n_bins: int = 10,
                      seed: int = 0) -> dict | None:
    """Brier and ECE of σ(m) at T = 1 and at the cross-fitted T, on the pairs the labels decided (x or y won;
    ties and unlabelled pairs are left out and counted). None when fewer than ``2 * folds`` decided pairs."""
    m, h = np.asarray(margin, dtype=float), np.asarray(human, dtype=float)
    decided = ~np.isnan(m) & np.isin(h, (Outcome.FIRST, Outcome.SECOND))
    if decided.sum() < 2 * folds:
        return None
    md, y = m[decided], (h[decided] == Outcome.FIRST).astype(float)
    p1 = expit(md)
    beta = fit_inverse_temperature(md, y)
    p_cf, betas = cross_fitted_probabilities(md, y, folds, seed, start=beta)
    fold_t = [_temperature(b) for b in betas]
    return {
        "n_decided": int(decided.sum()), "n_tie_labels": int(np.sum(~np.isnan(m) & (h == Outcome.TIE))),
        "folds": int(len(betas)),
        "at_t1": {"temperature": 1.0, "brier": brier_score(p1, y), "ece": expected_calibration_error(p1, y, n_bins)},
        "fitted": {"temperature": _temperature(beta), "inverse_temperature": beta,
                   "fold_temperatures": fold_t,
                   "brier": brier_score(p_cf, y), "ece": expected_calibration_error(p_cf, y, n_bins)},
    }


def score_rows(report: dict) -> list[tuple[str, str]]:
    """The judge card's rows for a scoring judge: the tie rule, then Brier/ECE at T = 1 and at the fitted T."""
    s = report.get("scores")
    if not s:
        return []
    rows = [("score reading", f"P(x wins) = σ((s_x − s_y)/T); |s_x − s_y| ≤ {s['tolerance']:g} is a tie "
             f"({s['ties']} pair{'' if s['ties'] == 1 else 's'})")]
    cal = s.get("calibration")
    if cal:
        fit, t1 = cal["fitted"], cal["at_t1"]
        ts = [t for t in fit["fold_temperatures"] if t is not None]
        t_text = ("none: the scores rank the wrong way round (β ≤ 0)" if fit["temperature"] is None else
                  f"{fit['temperature']:.3g}" + (f" (folds {min(ts):.3g}–{max(ts):.3g})" if ts else ""))
        rows += [("Brier / ECE at T = 1 (decided pairs)", f"{t1['brier']:.4f} / {t1['ece']:.4f} (n "
                  f"{cal['n_decided']})"),
                 ("fitted T (cross-fitted, " + f"{cal['folds']} folds)", t_text),
                 ("Brier / ECE at fitted T (out-of-fold)", f"{fit['brier']:.4f} / {fit['ece']:.4f}")]
    return rows
