"""Drift between two runs of a judge: a changed bias is flagged, an unchanged judge is not (simulation)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from judge.metrics.drift import drift_report, drift_rows
from preflab.outcomes import Outcome


def _run(quality: np.ndarray, bias: float, noise: np.ndarray) -> pd.DataFrame:
    """A logprob judge on both orders: logit of the first slot = (quality of first − second) + bias + noise."""
    z_xy = quality + bias + noise[:, 0]
    z_yx = -quality + bias + noise[:, 1]
    p_first_xy, p_first_yx = 1 / (1 + np.exp(-z_xy)), 1 / (1 + np.exp(-z_yx))
    n = quality.size
    return pd.DataFrame({
        "item_id": [str(i) for i in range(n)], "model_x": "m1", "model_y": "m2",
        "judge_xy": np.where(p_first_xy > 0.5, Outcome.FIRST, Outcome.SECOND).astype(float),
        "judge_yx": np.where(p_first_yx > 0.5, Outcome.SECOND, Outcome.FIRST).astype(float),
        "p_xy": p_first_xy, "p_yx": 1 - p_first_yx, "pt_xy": 0.0, "pt_yx": 0.0})


def _flag_rate(bias_change: float, reps: int, n: int, seed: int, alpha: float = 0.05, tolerance: float = 0.05) -> float:
    rng = np.random.default_rng(seed)
    flagged = 0
    for _ in range(reps):
        quality = rng.normal(0, 1.5, n)
        old = _run(quality, 0.3, rng.normal(0, 0.15, (n, 2)))  # rerun noise: the API is not deterministic
        new = _run(quality, 0.3 + bias_change, rng.normal(0, 0.15, (n, 2)))
        flagged += drift_report(old, new, tolerance=tolerance, alpha=alpha, n_bootstrap=20)["verdict"] == "changed"
    return flagged / reps


def test_unchanged_judge_is_not_flagged_beyond_the_stated_level():
    # At tolerance 0 every flag is a test's false rejection: the Bonferroni family's level 0.05 must hold.
    # (500 replications measured 0.032 ± 0.008.) With 150 the Monte Carlo error at 0.05 is 0.018.
    assert _flag_rate(0.0, reps=150, n=300, seed=1, tolerance=0.0) <= 0.05 + 2 * 0.018
    assert _flag_rate(0.0, reps=30, n=300, seed=4) == 0.0  # the default tolerance 0.05


def test_changed_position_bias_is_flagged():
    # The new version's logit favours the first slot by +0.6 more: P(first) rises by ~0.1, which cancels
    # out of P(x) over the two orders; only the slot effects see it.
    assert _flag_rate(0.6, reps=40, n=300, seed=2) >= 0.95


def test_report_fields_and_rows():
    rng = np.random.default_rng(3)
    q = rng.normal(0, 1.5, 400)
    old, new = _run(q, 0.0, np.zeros((400, 2))), _run(q, 0.8, np.zeros((400, 2)))
    rep = drift_report(old, new, n_bootstrap=100)
    assert rep["verdict"] == "changed" and "first_slot_shift" in rep["changed_by"]
    assert abs(rep["effects"]["p_x_shift"]["value"]) < 0.02  # identity effects cancel
    assert rep["effects"]["first_slot_shift"]["value"] > 0.1
    same = drift_report(old, old, n_bootstrap=100)
    assert same["verdict"] == "same judge" and same["agreement"]["value"] == 1.0 and same["resolved"]
    assert same["kappa"]["value"] == 1.0
    labels = dict(drift_rows(rep))
    assert labels["verdict (false-flag rate ≤ 0.05)"].startswith("changed")


def test_a_few_identical_pairs_do_not_prove_the_judge_unchanged():
    # Nothing flipped on 4 pairs: "same judge", but the data cannot rule out a change of 0.05. The Wald
    # interval of net flips was [0, 0] here; Agresti-Min's (½ added to each cell) is not.
    rng = np.random.default_rng(5)
    old = _run(rng.normal(0, 1.5, 4), 0.0, np.zeros((4, 2)))
    rep = drift_report(old, old, n_bootstrap=50)
    assert rep["verdict"] == "same judge" and not rep["resolved"]
    assert "too few pairs to rule out a change" in dict(drift_rows(rep))["verdict (false-flag rate ≤ 0.05)"]
    net = rep["effects"]["net_flips"]
    from scipy import stats

    z = stats.norm.ppf(1 - (1 - rep["interval_level"]) / 2)
    half = z * np.sqrt((1 / 6) / 6)  # b' = c' = ½, n' = 6: ((b' + c') / n' − 0) / n'
    assert net["value"] == 0.0 and np.isclose(net["lower"], -half) and np.isclose(net["upper"], half)
