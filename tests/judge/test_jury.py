"""Juries of judges checked against known truth by simulation, and on LLMFAO's GPT-3 + GPT-4 verdicts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judge.cards.jury_card import jury_report, jury_rows, render_jury_card
from judge.metrics.jury import (
    JuryTable,
    align_members,
    dawid_skene_panel,
    effective_judges,
    majority_panel,
    mean_probability_panel,
)
from preflab.outcomes import Outcome

N = 20_000


def _judges(truth: np.ndarray, accuracies, rng) -> np.ndarray:
    """Independent binary judges: right with probability ``acc``, else the other answer."""
    right = rng.random((truth.size, len(accuracies))) < np.asarray(accuracies)
    return np.where(right, truth[:, None], 1 - truth[:, None]).astype(float)


def _table(codes, truth) -> JuryTable:
    n, m = codes.shape
    keys = pd.DataFrame({"item_id": [str(i) for i in range(n)], "model_x": "a", "model_y": "b"})
    return JuryTable(keys, tuple(f"j{k}" for k in range(m)), codes, np.full((n, m, 3), np.nan),
                     truth.astype(float), None)


def test_three_independent_70_percent_judges_majority_gives_the_binomial_0784():
    rng = np.random.default_rng(1)
    truth = rng.integers(0, 2, N)
    codes = _judges(truth, [0.7, 0.7, 0.7], rng)
    panel, split = majority_panel(codes)
    acc = np.mean(panel == truth)
    expected = 0.7**3 + 3 * 0.7**2 * 0.3  # 0.784: at least two of three right
    se = np.sqrt(expected * (1 - expected) / N)  # Monte Carlo error, 0.0029
    assert abs(acc - expected) < 4 * se
    members = (codes == truth[:, None]).mean(axis=0)
    assert np.all(np.abs(members - 0.7) < 4 * np.sqrt(0.21 / N))
    assert not split.any()  # three binary voters never split
    report = jury_report(_table(codes, truth), "majority", n_bootstrap=200)
    gain = report["panel_minus_best_member"]
    assert gain["lower"] > 0.06 and gain["value"] == pytest.approx(acc - members.max())
    # the binomial gain 0.084 within its Monte Carlo error (panel and member share pairs; 4 x 0.0046)
    assert abs(gain["value"] - (expected - 0.7)) < 0.02
    eff = report["effective_judges"]
    assert abs(eff["value"] - 3) < 0.1 and eff["lower"] <= 3 <= eff["upper"] + 0.05


def test_three_copies_of_one_judge_are_one_judge_and_gain_nothing():
    rng = np.random.default_rng(2)
    truth = rng.integers(0, 2, 2000)
    one = _judges(truth, [0.7], rng)
    codes = np.repeat(one, 3, axis=1)
    eff = effective_judges(codes, truth.astype(float), n_bootstrap=100)
    assert eff["value"] == 1.0 and eff["upper"] == 1.0 and eff["mean_error_correlation"] == pytest.approx(1.0)
    report = jury_report(_table(codes, truth), "majority", n_bootstrap=100)
    assert report["panel_minus_best_member"]["value"] == 0.0
    assert all(p["agreement"]["value"] == 1.0 for p in report["pairwise"])


def test_abstentions_never_break_ties_by_member_order():
    codes = np.array([[Outcome.FIRST, Outcome.SECOND, np.nan],  # one abstains, the other two split: a tie, counted
                      [Outcome.FIRST, np.nan, np.nan],   # the only answer wins
                      [np.nan, np.nan, np.nan],  # nobody answered
                      [Outcome.SECOND, Outcome.SECOND, Outcome.FIRST],
                      [Outcome.TIE, Outcome.FIRST, Outcome.FIRST]], dtype=float)
    panel, split = majority_panel(codes)
    assert panel.tolist() == [Outcome.TIE, Outcome.FIRST, Outcome.UNPARSABLE, Outcome.SECOND, Outcome.FIRST]
    assert split.tolist() == [True, False, False, False, False]
    rng = np.random.default_rng(0)
    for _ in range(5):  # the same panel whatever the members' order
        perm = rng.permutation(3)
        assert majority_panel(codes[:, perm])[0].tolist() == panel.tolist()
        probs = np.full((5, 3, 3), np.nan)
        assert (mean_probability_panel(codes[:, perm], probs[:, perm]).tolist()
                == mean_probability_panel(codes, probs).tolist())


def test_mean_probability_uses_answering_members_only():
    codes = np.array([[Outcome.FIRST, Outcome.SECOND, np.nan]], dtype=float)
    probs = np.array([[[0.9, 0.1, 0.0], [0.4, 0.6, 0.0], [np.nan] * 3]])
    assert mean_probability_panel(codes, probs).tolist() == [Outcome.FIRST]  # (0.9 + 0.4) / 2 > (0.1 + 0.6) / 2


def test_dawid_skene_learns_that_one_judge_is_better_than_the_other_two():
    # Accuracies 0.9, 0.6, 0.6: majority is right 0.792 of the time; following the good judge, 0.9.
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 2, 6000)
    codes = _judges(truth, [0.9, 0.6, 0.6], rng)
    human = np.where(np.arange(truth.size) < 1500, truth, np.nan)  # a quarter labelled
    ds = dawid_skene_panel(codes, human)
    unlabelled = np.isnan(human)
    acc_ds = np.mean(ds["panel"][unlabelled] == truth[unlabelled])
    acc_major = np.mean(majority_panel(codes)[0][unlabelled] == truth[unlabelled])
    se = np.sqrt(0.09 / unlabelled.sum())
    assert abs(acc_ds - 0.9) < 4 * se and abs(acc_major - 0.792) < 4 * np.sqrt(0.165 / unlabelled.sum())
    conf = ds["confusion"]  # P(says c | truth c) near each member's accuracy
    assert abs(conf[0, 0, 0] - 0.9) < 0.03 and abs(conf[1, 1, 1] - 0.6) < 0.04
    # Labelled pairs are scored out of fold: their posterior never saw their own label.
    held = ~unlabelled
    assert np.mean(ds["panel"][held] == truth[held]) < 0.95


def test_unsupervised_dawid_skene_without_labels():
    rng = np.random.default_rng(4)
    truth = rng.integers(0, 2, 4000)
    codes = _judges(truth, [0.9, 0.6, 0.6], rng)
    ds = dawid_skene_panel(codes)
    assert np.mean(ds["panel"] == truth) > 0.87


def _member(items, x, y, codes, human=None):
    df = pd.DataFrame({"item_id": items, "model_x": x, "model_y": y, "judge_xy": codes, "judge_yx": np.nan})
    if human is not None:
        df["human"] = human
    return df


def test_align_flips_members_that_list_a_pair_the_other_way_round():
    a = _member(["1", "2"], ["m", "m"], ["n", "n"], [Outcome.FIRST, Outcome.SECOND],
                human=[Outcome.FIRST, Outcome.FIRST])
    b = _member(["2", "1", "3"], ["n", "n", "m"], ["m", "m", "n"], [Outcome.FIRST, Outcome.SECOND, Outcome.TIE])
    t = align_members({"a": a, "b": b})
    assert t.keys["item_id"].tolist() == ["1", "2", "3"]
    # "n wins" on item 2 is y = n in a's orientation
    assert t.codes[:, 1].tolist() == [Outcome.FIRST, Outcome.SECOND, Outcome.TIE]
    assert np.isnan(t.codes[2, 0]) and t.human[:2].tolist() == [Outcome.FIRST, Outcome.FIRST]
    html = render_jury_card(jury_report(t, n_bootstrap=50))
    assert "<script" not in html and "members agree" in html


def test_llmfao_gpt3_and_gpt4_as_a_jury_of_two(shared_data):
    from judge.metrics.adapters import load_llmfao

    members = {j: load_llmfao(shared_data / "llmfao", judge=j) for j in ("gpt3", "gpt4")}
    table = align_members(members)
    assert table.codes.shape == (2139, 2) and table.ratings is not None
    reports = {rule: jury_report(table, rule, n_bootstrap=200) for rule in ("majority", "dawid-skene")}
    rep = reports["majority"]
    gpt4 = rep["members"]["gpt4"]["agreement"]["value"]
    assert 0.40 < gpt4 < 0.47  # 0.435 in test_calibrate_real
    eff = rep["effective_judges"]
    assert 1.0 <= eff["value"] <= 2.0
    assert rep["ceiling"]["status"] == "below"  # two LLMs agree with the crowd less than its members do
    assert any("effective number" in k for k, _ in jury_rows(rep))


def test_members_pairwise_kappa_has_an_interval_and_is_1_for_identical_one_class_members():
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(8)
    truth = rng.integers(0, 2, 300)
    codes = _judges(truth, [0.7, 0.8], rng)
    kappa = jury_report(_table(codes, truth), "majority", n_bootstrap=200)["pairwise"][0]["kappa"]
    assert np.isclose(kappa["value"], cohen_kappa_score(codes[:, 0], codes[:, 1]))
    assert kappa["lower"] < kappa["value"] < kappa["upper"]
    # two judges that always say tie agree perfectly (0/0 in Cohen's formula)
    ties = np.full((50, 2), float(Outcome.TIE))
    same = jury_report(_table(ties, truth[:50]), "majority", n_bootstrap=50)["pairwise"][0]
    assert same["agreement"]["value"] == 1.0 and same["kappa"]["value"] == 1.0
