"""A judge's probabilities against the humans': Brier score, ECE and reliability (two and three outcomes), and the
win rate corrected for the judge's errors (Rogan-Gladen) with its intervals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import brier_score_loss

from judge.metrics.probability import (
    brier_score,
    corrected_win_rate,
    expected_calibration_error,
    reliability_table,
    rogan_gladen,
)
from preflab.outcomes import Outcome


def test_brier_ece_and_reliability_by_hand():
    p = np.array([0.1, 0.1, 0.9, 0.9, 0.55])
    y = np.array([0, 1, 1, 1, 0])
    assert brier_score(p, y) == pytest.approx(brier_score_loss(y, p))
    # Bins: [0.1, 0.1] → |0.5 − 0.1| × 2; [0.9, 0.9] → |1 − 0.9| × 2; [0.55] → 0.55.
    assert expected_calibration_error(p, y) == pytest.approx((0.8 + 0.2 + 0.55) / 5)
    table = reliability_table(p, y)
    assert list(table["n"]) == [2, 1, 2] and table["observed"].tolist() == pytest.approx([0.5, 0.0, 1.0])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        brier_score(np.array([1.2]), np.array([1]))


def test_ece_is_small_for_a_calibrated_forecaster():
    rng = np.random.default_rng(6)
    p = rng.random(20000)
    assert expected_calibration_error(p, (rng.random(20000) < p).astype(float)) < 0.02
    assert expected_calibration_error(p, (rng.random(20000) < p**2).astype(float)) > 0.1


def test_rogan_gladen_inverts_the_misclassification():
    theta, tpr, tnr = 0.3, 0.85, 0.9
    observed = tpr * theta + (1 - tnr) * (1 - theta)
    assert rogan_gladen(observed, tpr, tnr) == pytest.approx(theta)


@pytest.mark.slow
def test_corrected_win_rate_interval_covers_and_fixed_unlabelled_does_not():
    """Simulation: 95% intervals over 300 draws; ours covers ≈ 95%, judgy-style (fixed raw rate) under-covers."""
    rng = np.random.default_rng(12)
    theta, tpr, tnr, n_lab, n_unl = 0.4, 0.85, 0.8, 400, 150
    hits_ours = hits_fixed = 0
    for rep in range(300):
        h_lab = rng.random(n_lab) < theta
        j_lab = np.where(h_lab, rng.random(n_lab) < tpr, rng.random(n_lab) > tnr)
        h_unl = rng.random(n_unl) < theta
        j_unl = np.where(h_unl, rng.random(n_unl) < tpr, rng.random(n_unl) > tnr)
        ours = corrected_win_rate(j_lab, h_lab, j_unl, n_bootstrap=1000, seed=rep)["corrected"]
        fixed = corrected_win_rate(j_lab, h_lab, j_unl, n_bootstrap=1000, seed=rep, fix_unlabelled=True)["corrected"]
        hits_ours += ours["lower"] <= theta <= ours["upper"]
        hits_fixed += fixed["lower"] <= theta <= fixed["upper"]
    assert 0.91 <= hits_ours / 300 <= 0.98
    assert hits_fixed / 300 < 0.85


def test_corrected_win_rate_in_sample_equals_the_human_rate_and_its_bootstrap():
    rng = np.random.default_rng(13)
    h = rng.random(300) < 0.35
    j = np.where(h, rng.random(300) < 0.8, rng.random(300) > 0.85)
    res = corrected_win_rate(j, h, None, n_bootstrap=500, seed=2)
    assert res["corrected"]["value"] == pytest.approx(h.mean()) and res["n_unlabelled"] == 0
    cells = np.random.default_rng(2).multinomial(300, np.array([np.sum(j & h), np.sum(~j & h), np.sum(j & ~h),
                                                                  np.sum(~j & ~h)]) / 300, size=500)
    human_rate = (cells[:, 0] + cells[:, 1]) / 300  # each replicate's human rate
    assert res["corrected"]["lower"] == pytest.approx(np.percentile(human_rate, 2.5))


def _three_way_judge(n: int, seed: int) -> pd.DataFrame:
    """A perfectly calibrated three-way judge: humans draw x / y / tie from exactly its probabilities."""
    rng = np.random.default_rng(seed)
    p_tie = rng.beta(2.3, 7.7, n)  # mean 0.23
    share = rng.random(n)
    p = np.stack([(1 - p_tie) * share, (1 - p_tie) * (1 - share), p_tie], axis=1)
    human = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1).astype(float)  # 0 = x, 1 = y, 2 = tie
    return pd.DataFrame({"item_id": [f"q{i}" for i in range(n)], "judge_xy": p.argmax(axis=1).astype(float),
                         "judge_yx": np.nan, "p_xy": p[:, 0], "pt_xy": p[:, 2], "human": human})


def test_brier_multiclass_matches_sklearn():
    from judge.metrics.probability import brier_score_multiclass

    rng = np.random.default_rng(3)
    p = rng.dirichlet([1, 1, 1], 50)
    y = rng.integers(0, 3, 50)
    assert brier_score_multiclass(p, y) == pytest.approx(brier_score_loss(y, p, labels=[0, 1, 2]))
    assert brier_score_multiclass(p[:, [0, 1]] / p[:, :2].sum(1, keepdims=True), y % 2) == pytest.approx(
        2 * brier_score(p[:, 0] / p[:, :2].sum(1), (y % 2 == 0).astype(float)))


def test_a_calibrated_three_way_judge_is_calibrated():
    """Before: ECE scored the unconditional P(x wins) on decided pairs, 0.09 for this perfect judge."""
    from judge.metrics.calibrate import calibrate

    pairs = _three_way_judge(4000, seed=11)
    cal = calibrate(pairs, n_bootstrap=50)["calibration"]
    assert cal["ece"] < 0.04  # sampling noise only (about 0.025 at 10 bins)
    assert cal["n"] == 4000 and cal["n_decided"] == int((pairs["human"] != Outcome.TIE).sum())
    tie = cal["tie"]
    assert tie["mean_p_tie"] == pytest.approx(0.23, abs=0.01) and tie["ece"] < 0.04
    assert tie["observed"]["lower"] <= tie["mean_p_tie"] <= tie["observed"]["upper"]
    # The three-class Brier is proper: the true probabilities beat a judge that never says tie.
    worse = pairs.assign(p_xy=pairs["p_xy"] / (1 - pairs["pt_xy"]), pt_xy=0.0)
    worse_cal = calibrate(worse, n_bootstrap=50)["calibration"]
    assert cal["brier"] < worse_cal["brier"]
    assert worse_cal["ece"] == pytest.approx(cal["ece"])  # same p_x / (p_x + p_y): same decided-pair ECE
    assert not (worse_cal["tie"]["observed"]["lower"] <= 0.0)  # the tie line shows it
    from judge.cards.card import summary_rows

    rows = dict(summary_rows(calibrate(worse, n_bootstrap=50)))
    assert rows["Brier (3-class) / ECE (decided pairs)"].startswith(f"{worse_cal['brier']:.4f} / ")
    assert rows["P(tie): judge mean vs humans' tie rate"].startswith("0.000 vs 0.23")


def test_corrected_win_rate_counts_unparsable_verdicts_instead_of_dropping_them():
    """The judge fails to answer more often when x truly wins; before, dropping those verdicts gave 0.53."""
    from judge.metrics.calibrate import calibrate

    rng = np.random.default_rng(8)
    n, n_labelled = 20000, 4000
    truth = np.where(rng.random(n) < 0.6, Outcome.FIRST, Outcome.SECOND).astype(float)
    right = rng.random(n) < 0.9
    judge = np.where(right, truth, 1 - truth)
    judge = np.where(rng.random(n) < np.where(truth == Outcome.FIRST, 0.3, 0.05), Outcome.UNPARSABLE, judge)
    human = np.where(np.arange(n) < n_labelled, truth, np.nan)
    pairs = pd.DataFrame({"item_id": np.arange(n).astype(str), "judge_xy": judge, "judge_yx": np.nan,
                          "human": human})
    cw = calibrate(pairs, n_bootstrap=400)["corrected_win_rate"]
    target = float(np.mean(truth[n_labelled:] == Outcome.FIRST))
    assert cw["corrected"]["lower"] <= target <= cw["corrected"]["upper"]
    assert abs(cw["corrected"]["value"] - target) < 0.02
    assert cw["n_unparsable"] == int(np.sum(judge == Outcome.UNPARSABLE)) and cw["n_unlabelled"] == n - n_labelled
