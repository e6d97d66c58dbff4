"""Null baselines on every judge card (issue 39): checked against simulated labels with known rates."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judge.cards.card import render_card, summary_rows
from judge.metrics.baselines import first_slot_correct, longer_answer_codes, null_baselines
from judge.metrics.calibrate import calibrate
from preflab.outcomes import Outcome

N = 4000


def _pairs(rate_longer: float, judge_accuracy: float | None, seed: int = 0, n: int = N) -> pd.DataFrame:
    """Labels where the longer answer wins with probability ``rate_longer``; a judge right with probability
    ``judge_accuracy`` (None: the judge always picks the longer answer), in both orders."""
    rng = np.random.default_rng(seed)
    len_x, len_y = rng.integers(50, 500, n), rng.integers(50, 500, n)
    len_y = np.where(len_y == len_x, len_y + 1, len_y)
    longer = np.where(len_x > len_y, Outcome.FIRST, Outcome.SECOND)
    other = np.where(longer == Outcome.FIRST, Outcome.SECOND, Outcome.FIRST)
    human = np.where(rng.random(n) < rate_longer, longer, other).astype(float)
    if judge_accuracy is None:
        judge = longer.astype(float)
    else:
        judge = np.where(rng.random(n) < judge_accuracy, human, np.where(human == Outcome.FIRST, 1, 0)).astype(float)
    return pd.DataFrame({"item_id": [str(i) for i in range(n)], "model_x": "a", "model_y": "b",
                         "judge_xy": judge, "judge_yx": judge, "human": human, "len_x": len_x, "len_y": len_y})


def test_the_longer_answer_baseline_recovers_its_known_rate():
    b = null_baselines(_pairs(0.62, 0.8), _pairs(0.62, 0.8)["judge_xy"].to_numpy(), n_bootstrap=200)
    rows = {r["name"]: r["agreement"] for r in b["rows"]}
    assert rows["longer answer"]["lower"] < 0.62 < rows["longer answer"]["upper"]
    assert rows["longer answer"]["value"] == pytest.approx(0.62, abs=0.02)
    # both orders judged: "the first slot" is right on exactly one order of each decided pair
    assert rows["first slot"]["value"] == pytest.approx(0.5)
    assert rows["majority class"]["value"] == pytest.approx(0.5, abs=0.02)
    assert b["best"] == "longer answer" and b["beats_best"] and b["beats_longer"]
    assert b["judge_minus_best"]["value"] == pytest.approx(0.8 - 0.62, abs=0.03)


def test_a_judge_that_picks_the_longer_answer_does_not_beat_it_and_the_card_says_so():
    pairs = _pairs(0.62, None)
    report = calibrate(pairs, n_bootstrap=200)
    assert report["baselines"]["beats_longer"] is False
    assert report["baselines"]["judge_minus_longer"]["value"] == pytest.approx(0.0)
    advice = " ".join(report["verdict"]["do_not_use_for"])
    assert 'does not beat "pick the longer answer"' in advice
    labels = dict(summary_rows(report))
    assert "null baseline: longer answer (agreement with humans)" in labels
    assert "does not beat" in render_card(report, pairs)


def test_one_order_data_gives_the_first_slot_its_real_rate():
    # x shown first only; humans pick x 70% of the time: the first-slot rule agrees 70%
    hits, trials = first_slot_correct(np.ones(5, bool), np.zeros(5, bool), np.array([0, 0, 1, 2, 0.0]))
    assert list(hits) == [1, 1, 0, 0, 1] and list(trials) == [1] * 5
    rng = np.random.default_rng(1)
    human = np.where(rng.random(N) < 0.7, Outcome.FIRST, Outcome.SECOND).astype(float)
    pairs = pd.DataFrame({"item_id": range(N), "judge_xy": human, "judge_yx": np.nan, "human": human})
    b = null_baselines(pairs, human, n_bootstrap=100)
    first = next(r for r in b["rows"] if r["name"] == "first slot")["agreement"]
    assert first["lower"] < 0.7 < first["upper"]


def test_longer_answer_codes_tie_on_equal_and_unknown_on_missing_lengths():
    codes = longer_answer_codes(np.array([3, 1, 2, np.nan]), np.array([1, 3, 2, 1]))
    assert list(codes[:3]) == [Outcome.FIRST, Outcome.SECOND, Outcome.TIE] and np.isnan(codes[3])


def test_no_labels_no_baselines():
    pairs = _pairs(0.6, 0.8).drop(columns="human")
    assert calibrate(pairs, n_bootstrap=10)["baselines"] is None
