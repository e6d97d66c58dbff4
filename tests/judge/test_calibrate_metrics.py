"""Calibration metrics against the seed's fixture, scikit-learn / krippendorff, hand counts and simulations."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import cohen_kappa_score

from judge.metrics import agreement as agr
from judge.metrics.bias import (
    length_bias,
    logistic_slope,
    one_order_position_bias,
    outcome_counts,
    pad_answer,
    padding_attack_pairs,
    position_bias,
    self_preference,
)
from judge.verdicts.judged_pairs import combine_order_codes
from preflab.outcomes import Outcome

# The seed's position fixture: 20 pairs, 14 consistent (9 A, 5 B), 6 where the first slot won both times.
SEED_XY = np.array([Outcome.FIRST] * 9 + [Outcome.SECOND] * 5 + [Outcome.FIRST] * 6, dtype=float)
SEED_YX = np.array([Outcome.FIRST] * 9 + [Outcome.SECOND] * 5 + [Outcome.SECOND] * 6, dtype=float)


def test_position_bias_seed_fixture():
    res = position_bias(SEED_XY, SEED_YX)
    assert res["n_pairs"] == 20
    assert res["consistency"]["value"] == pytest.approx(0.70)
    assert res["first_position_rate"]["value"] == pytest.approx(0.65)
    assert res["identity_rate"] == pytest.approx(0.65) and res["identity_holds"]
    assert (res["primacy_count"], res["recency_count"]) == (6, 0)
    assert res["preference_fairness"] == pytest.approx(-0.3)  # favours the first slot


def test_position_bias_identity_on_random_verdicts():
    rng = np.random.default_rng(3)
    xy, yx = rng.integers(0, 2, 500).astype(float), rng.integers(0, 2, 500).astype(float)
    res = position_bias(xy, yx)
    firsts = np.sum(xy == Outcome.FIRST) + np.sum(yx == Outcome.SECOND)
    assert res["first_position_rate"]["value"] == pytest.approx(firsts / 1000)
    assert res["identity_rate"] == pytest.approx(res["first_position_rate"]["value"])


def test_position_bias_leaves_out_unparsable_and_missing():
    xy = np.array([Outcome.FIRST, Outcome.SECOND, Outcome.UNPARSABLE, Outcome.FIRST])
    yx = np.array([Outcome.FIRST, Outcome.SECOND, Outcome.FIRST, np.nan])
    res = position_bias(xy, yx)
    assert res["n_pairs"] == 2 and res["n_left_out"] == 2


def test_combining_orders_seed_fixture_and_probability_averaging():
    both = combine_order_codes(SEED_XY, SEED_YX)
    assert outcome_counts(both["conservative"]) == {"a": 9, "b": 5, "tie": 6, "unparsable": 0}
    # Probabilities: an inconsistent pair whose first-slot confidence differs is decided by the average.
    xy, yx = np.array([Outcome.FIRST, Outcome.FIRST]), np.array([Outcome.SECOND, Outcome.FIRST])
    p_xy, p_yx = np.array([0.9, 0.8]), np.array([0.4, 0.7])
    res = combine_order_codes(xy, yx, p_xy, p_yx)
    assert list(res["conservative"]) == [Outcome.TIE, Outcome.FIRST]
    assert list(res["average"]) == [Outcome.FIRST, Outcome.FIRST]  # mean P(x) = 0.65 > 0.35
    assert res["p_x"] == pytest.approx([0.65, 0.75])
    one = combine_order_codes(np.array([Outcome.SECOND, np.nan]), np.array([np.nan, np.nan]))
    assert list(one["conservative"]) == [Outcome.SECOND, Outcome.UNPARSABLE]
    assert list(one["average"]) == [Outcome.SECOND, Outcome.UNPARSABLE]


def test_accuracy_counts_unparsable_as_disagreement_and_without_ties():
    judge = np.array([Outcome.FIRST, Outcome.SECOND, Outcome.TIE, Outcome.UNPARSABLE, np.nan, Outcome.FIRST])
    human = np.array([Outcome.FIRST, Outcome.SECOND, Outcome.TIE, Outcome.FIRST, Outcome.SECOND, np.nan])
    res = agr.accuracy(judge, human)
    assert (res["n"], res["n_unparsable"], res["n_without_human"]) == (5, 2, 1)
    assert res["value"] == pytest.approx(3 / 5)
    assert agr.accuracy(judge, human, include_ties=False)["n"] == 4


def test_kappa_matches_sklearn_plain_and_weighted():
    rng = np.random.default_rng(7)
    human = rng.integers(0, 5, 300).astype(float)
    judge = np.clip(human + rng.integers(-1, 2, 300), 0, 4).astype(float)
    assert agr.cohen_kappa(judge, human) == pytest.approx(cohen_kappa_score(judge, human))
    for w in ("linear", "quadratic"):
        assert agr.cohen_kappa(judge, human, weights=w) == pytest.approx(cohen_kappa_score(judge, human, weights=w))


def test_kappa_bootstrap_interval_covers_point_and_matches_a_loop():
    rng = np.random.default_rng(1)
    human = rng.integers(0, 3, 150).astype(float)
    judge = np.where(rng.random(150) < 0.6, human, rng.integers(0, 3, 150)).astype(float)
    ci = agr.kappa_interval(judge, human, n_bootstrap=300, seed=5)
    assert ci.lower < ci.value < ci.upper
    idx = np.random.default_rng(5).integers(0, 150, size=(300, 150))
    loop = [cohen_kappa_score(judge[i], human[i]) for i in idx]
    assert ci.lower == pytest.approx(np.percentile(loop, 2.5))
    assert ci.upper == pytest.approx(np.percentile(loop, 97.5))


def test_kappa_bootstrap_counts_single_class_resamples_and_keeps_them():
    """Before: resamples holding one class on both sides (kappa 0/0) were dropped silently by nanpercentile."""
    import warnings

    human = np.array([Outcome.FIRST] * 10 + [Outcome.SECOND, Outcome.FIRST], dtype=float)
    judge = np.array([Outcome.FIRST] * 10 + [Outcome.SECOND, Outcome.SECOND], dtype=float)
    ci = agr.kappa_interval(judge, human, n_bootstrap=2000, seed=3)
    idx = np.random.default_rng(3).integers(0, 12, size=(2000, 12))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns on the single-class resamples, and returns NaN
        loop = np.array([cohen_kappa_score(judge[i], human[i]) for i in idx])
    assert ci.single_class_resamples == int(np.isnan(loop).sum()) > 100  # about (10/12)^12 of them
    assert ci.as_dict()["single_class_resamples"] == ci.single_class_resamples
    full = np.where(np.isnan(loop), 1.0, loop)  # perfect agreement on one class: kappa 1
    assert [ci.lower, ci.upper] == pytest.approx(np.percentile(full, [2.5, 97.5]))
    assert ci.value == pytest.approx(cohen_kappa_score(judge, human))
    assert agr.kappa_interval(np.zeros(5), np.zeros(5), n_bootstrap=10).value == 1.0


def test_confusion_matrix_and_rates_by_hand():
    judge = np.array([Outcome.FIRST, Outcome.FIRST, Outcome.SECOND, Outcome.TIE, Outcome.UNPARSABLE, Outcome.FIRST])
    human = np.array([Outcome.FIRST, Outcome.SECOND, Outcome.SECOND, Outcome.FIRST, Outcome.TIE, Outcome.FIRST])
    conf = agr.confusion_matrix(judge, human)
    assert conf.loc["x", "x"] == 2 and conf.loc["y", "x"] == 1 and conf.loc["tie", "unparsable"] == 1
    assert conf.to_numpy().sum() == 6
    rates = agr.pass_rates(judge, human)
    assert rates["tpr"]["value"] == pytest.approx(2 / 3)  # human x: 3, judge x on 2 of them
    assert rates["tnr"]["value"] == pytest.approx(2 / 3)  # human not-x: 3, judge not-x on 2


def test_majority_vote_three_way_split_goes_to_annotator_1():
    ratings = np.array([[Outcome.FIRST, Outcome.SECOND, Outcome.TIE], [Outcome.SECOND, Outcome.FIRST, Outcome.FIRST],
                        [Outcome.TIE, Outcome.TIE, Outcome.SECOND], [np.nan, Outcome.SECOND, np.nan], [np.nan] * 3])
    out = agr.majority_vote(ratings)
    assert list(out[:4]) == [Outcome.FIRST, Outcome.FIRST, Outcome.TIE, Outcome.SECOND] and np.isnan(out[4])


def test_fleiss_kappa_wikipedia_example():
    # Fleiss (1971) worked example as on Wikipedia: 10 subjects, 14 raters, 5 categories → kappa 0.210.
    table = np.array([[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
                      [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]])
    ratings = np.array([np.repeat(np.arange(5), row) for row in table], dtype=float)
    assert agr.fleiss_kappa(ratings) == pytest.approx(0.210, abs=5e-4)


def test_krippendorff_alpha_matches_package_with_missing_votes():
    rng = np.random.default_rng(11)
    truth = rng.integers(0, 3, 120)
    ratings = np.where(rng.random((120, 5)) < 0.7, truth[:, None], rng.integers(0, 3, (120, 5))).astype(float)
    ratings[rng.random((120, 5)) < 0.3] = np.nan
    ours = agr.krippendorff_alpha_nominal(ratings)
    ref = krippendorff.alpha(reliability_data=ratings.T, level_of_measurement="nominal")
    assert ours == pytest.approx(ref, rel=1e-10)


def test_leave_one_out_by_hand():
    ratings = np.array([[Outcome.FIRST, Outcome.FIRST, Outcome.FIRST], [Outcome.FIRST, Outcome.FIRST, Outcome.SECOND],
                        [Outcome.FIRST, Outcome.SECOND, Outcome.TIE]], dtype=float)
    judge = np.array([Outcome.FIRST, Outcome.SECOND, Outcome.FIRST], dtype=float)
    res = agr.leave_one_out_agreement(ratings, judge)
    # Item 1: 3 hold-outs, all agree, judge agrees 3×. Item 2: hold out 1 or 2 → others {X, Y} split (skipped);
    # hold out 3 → majority X: human Y disagrees, judge Y disagrees. Item 3: every split skipped.
    assert (res["n"], res["skipped_no_majority"]) == (4, 5)
    assert res["human"]["value"] == pytest.approx(3 / 4) and res["judge"]["value"] == pytest.approx(3 / 4)


def test_logistic_slope_matches_sklearn_unpenalised():
    rng = np.random.default_rng(2)
    x = rng.normal(size=400)
    y = (rng.random(400) < 1 / (1 + np.exp(-(0.3 + 0.8 * x)))).astype(float)
    ours = logistic_slope(y, x)
    ref = LogisticRegression(C=np.inf, tol=1e-10, max_iter=1000).fit(x[:, None], y).coef_[0, 0]
    assert ours.value == pytest.approx(ref, rel=1e-5)
    assert ours.lower < 0.8 < ours.upper


def test_length_bias_on_a_simulated_verbose_judge():
    rng = np.random.default_rng(4)
    n = 2000
    len_x, len_y = rng.integers(50, 1500, n), rng.integers(50, 1500, n)
    human = np.where(rng.random(n) < 0.5, Outcome.FIRST, Outcome.SECOND).astype(float)  # humans ignore length
    judge = np.where(rng.random(n) < 0.75, np.where(len_x > len_y, Outcome.FIRST, Outcome.SECOND), human).astype(float)
    res = length_bias(judge, len_x, len_y, human, threshold=100)
    assert res["judge_prefers_longer"]["lower"] > 0.8  # 0.75 + 0.25 × 0.5 = 0.875
    assert res["human_prefers_longer"]["lower"] < 0.5 < res["human_prefers_longer"]["upper"]
    assert res["slope"]["lower"] > 0


def test_padding_attack_pairs_and_pad_answer():
    padded = pad_answer("Paris is the capital. It is in France.", n_items=3)
    assert padded.startswith("Paris is the capital. It is in France.") and padded.count("Paris is the capital.") == 4

    items = pd.DataFrame({"item_id": ["q1"], "prompt": ["Capital?"], "model": ["m"], "answer": ["Paris."]})
    pairs = padding_attack_pairs(items)
    assert list(pairs.columns) == ["item_id", "prompt", "model_x", "answer_x", "model_y", "answer_y"]
    assert pairs.loc[0, "model_y"] == "m+padded" and len(pairs.loc[0, "answer_y"]) > len("Paris.")
    with pytest.raises(ValueError, match="answer"):
        padding_attack_pairs(items.drop(columns="answer"))


def test_one_order_position_bias_recovers_a_simulated_second_slot_advantage():
    rng = np.random.default_rng(8)
    n = 4000
    first = rng.random(n) < 0.5
    win = (rng.random(n) < np.where(first, 0.40, 0.55)).astype(float)
    res = one_order_position_bias(win, first)
    d = res["first_minus_second"]
    assert d["lower"] < -0.15 < d["upper"] and res["favours"] == "second"
    fixed = one_order_position_bias(win, np.ones(n, bool))
    assert fixed["design"] == "fixed order" and fixed["first_win_rate"]["value"] == pytest.approx(win.mean())


def test_self_preference_detects_a_simulated_boost():
    rng = np.random.default_rng(9)
    n = 600
    model_x = np.where(rng.random(n) < 0.5, "gpt-4o", "llama")
    model_y = np.where(model_x == "gpt-4o", "mistral", "gpt-4o-mini")
    human = np.where(rng.random(n) < 0.5, Outcome.FIRST, Outcome.SECOND).astype(float)
    own_is_x = model_x == "gpt-4o"
    boost = rng.random(n) < 0.2
    judge = np.where(boost, np.where(own_is_x, Outcome.FIRST, Outcome.SECOND), human).astype(float)
    fam = {"gpt-4o": "openai", "gpt-4o-mini": "openai", "llama": "meta", "mistral": "mistral"}
    res = self_preference(judge, human, model_x, model_y, fam, "openai", n_bootstrap=500)
    assert res["n"] == n and res["difference"]["lower"] > 0.03
    assert res["judge_rate"] - res["human_rate"] == pytest.approx(res["difference"]["value"])
    none = self_preference(judge, human, model_x, model_y, fam, "anthropic")
    assert none["n"] == 0


def test_length_bias_with_too_few_decisive_verdicts_gives_nan_slope_quietly():
    import warnings

    # an always-tie judge leaves one decisive verdict
    judge = np.array([Outcome.FIRST, Outcome.TIE, Outcome.TIE, Outcome.TIE], dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = length_bias(judge, np.array([10.0, 20, 30, 40]), np.array([5.0, 25, 35, 45]))
    assert np.isnan(out["slope"]["value"]) and out["judge_prefers_longer"]["n"] == 1


def _exact_coverage(interval, n_pairs: int, probs: tuple[float, float, float]) -> float:
    """Exact coverage of an interval for the first-slot rate: a pair picks the first slot 0, 1 or 2 times
    with ``probs``; every count vector (n0, n1, n2) is enumerated with its multinomial probability."""
    from scipy.stats import multinomial

    truth = (probs[1] + 2 * probs[2]) / 2
    cover = 0.0
    for n2 in range(n_pairs + 1):
        for n1 in range(n_pairs - n2 + 1):
            firsts = np.repeat([0.0, 1.0, 2.0], [n_pairs - n1 - n2, n1, n2])
            ci = interval(firsts)
            if ci.lower <= truth <= ci.upper:
                cover += multinomial.pmf([n_pairs - n1 - n2, n1, n2], n_pairs, probs)
    return cover


@pytest.mark.parametrize("primacy", [0.5, 0.7])
def test_first_position_interval_covers_across_inconsistency_levels(primacy):
    """Inconsistent pairs pick the first slot twice (share ``primacy``) or the second slot twice; 10% of the
    consistent pairs are ties in both orders. Exact coverage at P = 100. Before: Wilson over 2P verdicts
    covered 0.88 with 75% inconsistent pairs and 0.81 with all of them."""
    from judge.stats import clustered_wilson_interval, wilson_interval

    per_pair = lambda f: clustered_wilson_interval(f, np.full(f.size, 2.0))  # noqa: E731
    for inconsistent in (0.5, 0.75, 1.0):
        probs = ((1 - inconsistent) * 0.1 + inconsistent * (1 - primacy), (1 - inconsistent) * 0.9,
                 inconsistent * primacy)
        assert _exact_coverage(per_pair, 100, probs) >= 0.93, inconsistent
    old = _exact_coverage(lambda f: wilson_interval(f.sum(), 2 * f.size), 100, probs)
    assert old < 0.85  # the interval that treated the 2P verdicts as independent


def test_position_bias_uses_the_interval_over_pairs():
    from judge.stats import clustered_wilson_interval

    xy = np.array([Outcome.FIRST, Outcome.FIRST, Outcome.SECOND, Outcome.TIE, Outcome.FIRST, Outcome.SECOND] * 5,
                  dtype=float)
    yx = np.array([Outcome.SECOND, Outcome.FIRST, Outcome.FIRST, Outcome.TIE, Outcome.SECOND, Outcome.SECOND] * 5,
                  dtype=float)
    firsts = (xy == Outcome.FIRST).astype(float) + (yx == Outcome.SECOND)
    got = position_bias(xy, yx)["first_position_rate"]
    assert got == pytest.approx(clustered_wilson_interval(firsts, np.full(30, 2.0)).as_dict())
    assert got["value"] == pytest.approx(firsts.sum() / 60)


def test_clustered_wilson_reduces_to_wilson_and_bounds_the_effective_n():
    from judge.stats import clustered_wilson_interval, wilson_interval

    rng = np.random.default_rng(1)
    s = (rng.random(80) < 0.3).astype(float)
    assert clustered_wilson_interval(s, np.ones(80)).as_dict() == pytest.approx(wilson_interval(s.sum(), 80).as_dict())
    all_first = clustered_wilson_interval(np.full(50, 2.0), np.full(50, 2.0))  # p = 1: one trial per pair
    assert all_first.lower == pytest.approx(wilson_interval(50, 50).lower)
