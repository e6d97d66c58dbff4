"""The human ceiling against known truth by simulation, and on PandaLM's three annotators."""

from __future__ import annotations

import numpy as np

from judge.cards.card import summary_rows
from judge.metrics.calibrate import calibrate
from judge.metrics.ceiling import held_out_references, human_ceiling


def _voters(truth, acc, k, rng):
    right = rng.random((truth.size, k)) < acc
    return np.where(right, truth[:, None], 1 - truth[:, None]).astype(float)


def test_voter_agreement_with_the_others_majority_is_the_binomial_value():
    # Three independent voters right with q = 0.8 (binary truth): the two others form a reference only when
    # they agree, which is right with r = q² / (q² + (1−q)²); the held-out voter matches it with q r + (1−q)(1−r).
    rng = np.random.default_rng(5)
    truth = rng.integers(0, 2, 6000)
    ratings = _voters(truth, 0.8, 3, rng)
    q = 0.8
    r = q**2 / (q**2 + (1 - q) ** 2)
    expected = q * r + (1 - q) * (1 - r)  # 0.7647
    judge_same = _voters(truth, 0.8, 1, rng)[:, 0]  # exchangeable with a voter: at the ceiling
    c = human_ceiling(ratings, judge_same, n_bootstrap=200)
    se = np.sqrt(expected * (1 - expected) / c["n_comparisons"]) * 1.5  # votes share references: design effect
    assert abs(c["human_agreement"]["value"] - expected) < 4 * se
    assert c["status"] == "at" and c["reaches_ceiling"]
    assert c["human_agreement"]["lower"] < expected < c["human_agreement"]["upper"]
    weak = _voters(truth, 0.65, 1, rng)[:, 0]
    c_weak = human_ceiling(ratings, weak, n_bootstrap=200)
    assert c_weak["status"] == "below" and not c_weak["reaches_ceiling"]
    assert c_weak["judge_kappa"]["upper"] < c_weak["human_kappa"]["lower"]


def test_ceiling_covers_zero_for_an_exchangeable_judge_at_the_stated_rate():
    # 40 replications: the judge − human interval (95%) should miss 0 about 5% of the time (MC error ~3.4%).
    rng = np.random.default_rng(6)
    misses = 0
    for _ in range(40):
        truth = rng.integers(0, 2, 400)
        ratings = _voters(truth, 0.75, 3, rng)
        judge = _voters(truth, 0.75, 1, rng)[:, 0]
        misses += human_ceiling(ratings, judge, n_bootstrap=200)["status"] != "at"
    assert misses <= 6


def test_two_votes_a_pair_and_splits():
    ratings = np.array([[0, 0, np.nan], [0, 1, np.nan], [0, 1, 2], [1, np.nan, np.nan]], dtype=float)
    pair, vote, ref, skipped = held_out_references(ratings)
    # pair 0: each vote vs the other; pair 1: the same (disagree); pair 2: the others always split; pair 3: alone
    assert pair.tolist() == [0, 0, 1, 1] and (vote == ref).tolist() == [True, True, False, False]
    assert skipped == 3


def test_pandalm_three_annotators_on_the_card(shared_data):
    from judge.metrics.adapters import load_pandalm

    report = calibrate(load_pandalm(shared_data / "pandalm"), n_bootstrap=300)
    c = report["humans"]["ceiling"]
    assert 0.93 < c["human_agreement"]["value"] < 0.98  # annotators agree with each other's majority
    assert c["status"] == "below" and c["judge_agreement"]["upper"] < c["human_agreement"]["lower"]
    labels = [k for k, _ in summary_rows(report)]
    assert "judge − human agreement" in labels and "human ceiling: each voter vs the others' majority" in labels


def test_ceiling_kappas_match_scikit_learn_on_the_held_out_votes():
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(11)
    truth = rng.integers(0, 2, 400).astype(float)
    ratings = _voters(truth, 0.7, 3, rng)
    judge = np.where(rng.random(400) < 0.6, truth, 2.0)
    pair, vote, ref, _ = held_out_references(ratings)
    c = human_ceiling(ratings, judge, n_bootstrap=50)
    assert np.isclose(c["human_kappa"]["value"], cohen_kappa_score(vote, ref))
    assert np.isclose(c["judge_kappa"]["value"], cohen_kappa_score(judge[pair], ref))
    assert c["human_kappa"]["lower"] < c["human_kappa"]["value"] < c["human_kappa"]["upper"]
