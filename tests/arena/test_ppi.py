"""PPI++ Bradley-Terry (arena.ppi.estimator, arena.ppi.board): against ppi_py, against the human-only fit, item
matching."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from arena.io.battles import load_battles
from arena.leaderboard import fit_leaderboard
from arena.leaderboard_options import IntervalOptions
from arena.ppi import board as ppi_board
from arena.ppi import estimator as ppi
from arena.simulation.simulate import uniform_pairs
from preflab.errors import InputError

K = 5
STRENGTHS = np.array([1.0, 0.5, 0.2, 0.0, -0.6])
REFERENCE_CONTRASTS = np.c_[-np.ones(K - 1), np.eye(K - 1)]  # theta_k - theta_0, ppi_py's coefficients


def _draw(rng, n, noise):
    a, b = uniform_pairs(n, K, rng)
    y = (rng.random(n) < 1 / (1 + np.exp(-(STRENGTHS[a] - STRENGTHS[b])))).astype(float)
    yhat = np.clip((1 - noise) * y + noise * rng.random(n), 0, 1)  # a soft judge, right more often than not
    return a, b, y, yhat


def _design(a, b):
    """BT as logistic regression: x = e_a - e_b, model 0 dropped (its strength is the reference, 0)."""
    x = np.zeros((len(a), K))
    x[np.arange(len(a)), a] += 1
    x[np.arange(len(a)), b] -= 1
    return x[:, 1:]


def _items(a, b, y, yhat, au, bu, yhu) -> ppi.Items:
    def orient(a, b, v):
        return np.where(a < b, v, 1 - v)

    key, key_u = np.minimum(a, b) * K + np.maximum(a, b), np.minimum(au, bu) * K + np.maximum(au, bu)
    pairs, inv = np.unique(np.r_[key, key_u], return_inverse=True)
    yy, ff, fu = orient(a, b, y), orient(a, b, yhat), orient(au, bu, yhu)
    n = len(a)
    return ppi.Items(K, (pairs // K).astype(np.int32), (pairs % K).astype(np.int32), inv[:n], np.c_[yy, 1 - yy, 0 * yy],
                     np.c_[ff, 1 - ff, 0 * ff], np.ones(n), inv[n:], np.c_[fu, 1 - fu, 0 * fu], np.ones(len(au)))


@pytest.fixture(scope="module")
def logistic_case():
    rng = np.random.default_rng(1)
    lab, unl = _draw(rng, 400, 0.8), _draw(rng, 4000, 0.8)
    return lab, unl, _items(*lab, *unl[:2], unl[3])


def _contrasts(fit: ppi.PPIFit):
    th, c = fit.x[:K], fit.covariance[:K, :K]
    return th[1:] - th[0], np.sqrt(np.diag(c)[1:] + c[0, 0] - 2 * c[0, 1:])


@pytest.mark.parametrize("lam", [0.0, 0.3, 1.0, None])
def test_matches_ppi_py_logistic(logistic_case, lam):
    """Cross-implementation: point estimates and 95% intervals equal ppi_py's within 2% (fixed and tuned lam)."""
    ppi_py = pytest.importorskip("ppi_py")
    (a, b, y, yh), (au, bu, _, yhu), items = logistic_case
    # ppi_py's form: the judge term over unlabelled items only, lam minimising the variance of theta_k - theta_0
    fit = ppi.fit_ppi(items, lam, include_labelled=False, contrasts=REFERENCE_CONTRASTS, guard=False,
                      bread="pooled")
    est, se = _contrasts(fit)
    ref = ppi_py.ppi_logistic_pointestimate(_design(a, b), y, yh, _design(au, bu), yhu, lam=lam)
    lo, hi = ppi_py.ppi_logistic_ci(_design(a, b), y, yh, _design(au, bu), yhu, alpha=0.05, lam=lam)
    np.testing.assert_allclose(est, ref, rtol=0.02, atol=1e-3)
    np.testing.assert_allclose(est - 1.959964 * se, lo, rtol=0.02, atol=2e-3)
    np.testing.assert_allclose(est + 1.959964 * se, hi, rtol=0.02, atol=2e-3)
    if lam is None:
        assert 0.05 < fit.lam < 0.95, "the noisy judge should give an interior lambda"


def test_tuned_lambda_matches_ppi_py(logistic_case):
    """Our closed-form lam equals ppi_py's _calc_lam_glm at the same (lam = 1) fit within 2%."""
    ppi_py = pytest.importorskip("ppi_py")
    from ppi_py.ppi import _calc_lam_glm, _logistic_get_stats

    (a, b, y, yh), (au, bu, _, yhu), items = logistic_case
    x1 = ppi_py.ppi_logistic_pointestimate(_design(a, b), y, yh, _design(au, bu), yhu, lam=1.0)
    stats = _logistic_get_stats(x1, _design(a, b), y, yh, _design(au, bu), yhu, np.ones(len(y)), np.ones(len(yhu)))
    ref = _calc_lam_glm(*stats, clip=True)
    fit = ppi.fit_ppi(items, None, include_labelled=False, contrasts=REFERENCE_CONTRASTS, bread="pooled")
    assert fit.lam == pytest.approx(ref, rel=0.02)


def _battles(rng, n, votes_per_item=1, prefix="q"):
    a, b = uniform_pairs(n, K, rng)
    p = 1 / (1 + np.exp(-(STRENGTHS[a] - STRENGTHS[b])))
    rows = []
    for t in range(n):
        for _ in range(votes_per_item):
            u = rng.random()
            w = "model_a" if u < 0.9 * p[t] else "model_b" if u < 0.9 else "tie"
            rows.append({"model_a": f"m{a[t]}", "model_b": f"m{b[t]}", "winner": w, "question_id": f"{prefix}{t}"})
    return pd.DataFrame(rows)


def test_lambda_zero_is_the_human_leaderboard():
    """lam = 0: the ratings and sandwich intervals of `rank` on the human votes (one vote per item)."""
    rng = np.random.default_rng(3)
    human = _battles(rng, 1500)
    judge = human.sample(frac=1.0, random_state=0).assign(winner="model_a")  # a judge that says A always
    hb = load_battles(human)
    ppi_tab = ppi_board.ppi_leaderboard(hb, judge, IntervalOptions(ci="sandwich"), lam=0.0).set_index("model")
    ref = fit_leaderboard(hb, IntervalOptions(ci="sandwich")).table.set_index("model")
    np.testing.assert_allclose(ppi_tab["rating"], ref.loc[ppi_tab.index, "rating"], atol=1e-6)
    np.testing.assert_allclose(ppi_tab["se"], ref.loc[ppi_tab.index, "se"], rtol=2e-3)
    np.testing.assert_allclose(ppi_tab["ess"], ppi_tab["battles"], rtol=1e-9)
    assert ppi_tab.attrs["lambda"] == 0.0 and ppi_tab.attrs["ess_gain"] == pytest.approx(1.0)


def test_items_match_by_question_and_unordered_pair():
    """Clusters: votes on one item count once; judge rows in either order join; leftovers are counted."""
    human = pd.DataFrame({"model_a": ["x", "x", "y", "z"], "model_b": ["y", "y", "z", "x"],
                          "winner": ["model_a", "tie", "model_b", "model_a"], "question_id": ["1", "1", "2", "3"]})
    judge = pd.DataFrame({"model_a": ["y", "y", "z", "x", "w"], "model_b": ["x", "x", "y", "y", "x"],
                          "p_a": [0.2, 0.4, 0.1, 0.5, 0.5], "p_b": [0.8, 0.6, 0.8, 0.5, 0.5],
                          "p_tie": [0.0, 0.0, 0.1, 0.0, 0.0], "question_id": ["1", "1", "2", "9", "9"]})
    items, dropped = ppi_board.build_items(load_battles(human), judge)
    assert items.n_labelled == 2 and items.n_unlabelled == 1
    assert dropped == {"judge rows naming a model without human votes": 1, "judge rows without a usable label": 0,
                       "human items without a judge label": 1}
    live = items.l_mult > 0
    hum = items.l_human[live][np.argsort(items.l_human[live].sum(1))]
    np.testing.assert_allclose(hum, [[0, 1, 0], [1, 0, 1]])  # item 2: z beat y (y < z); item 1: x won + a tie
    item1 = items.l_judge[live][items.l_human[live].sum(1) == 2][0]
    np.testing.assert_allclose(item1, [0.7, 0.3, 0.0])  # judge rows on item 1 (shown y first) averaged, as x, y


def test_missing_question_id_is_an_input_error():
    human = pd.DataFrame({"model_a": ["x"], "model_b": ["y"], "winner": ["tie"]})
    with pytest.raises(InputError, match="question_id"):
        ppi_board.build_items(load_battles(human), human)


def test_bootstrap_and_sandwich_agree_and_judge_helps():
    """A good judge on ten times the items: lam > 0, ESS gain > 1, bootstrap width near the sandwich's."""
    rng = np.random.default_rng(5)
    human = _battles(rng, 600, votes_per_item=2)
    judge = human.drop_duplicates("question_id")  # the judge repeats the first human vote on labelled items
    extra = _battles(rng, 6000, prefix="u").drop_duplicates("question_id")
    tab = ppi_board.ppi_leaderboard(load_battles(human), pd.concat([judge, extra]),
                                    IntervalOptions(ci="both", n_bootstrap=400))
    assert 0 < tab.attrs["lambda"] <= 1 and tab.attrs["ess_gain"] > 1.2
    assert (tab["ess"] > tab["battles"]).all()
    width_bs = tab["upper_bootstrap"] - tab["lower_bootstrap"]
    width_sw = tab["upper_sandwich"] - tab["lower_sandwich"]
    np.testing.assert_allclose(width_bs, width_sw, rtol=0.15)
    assert list(tab.columns[:10]) == ["model", "rating", "lower", "upper", "rank", "battles", "wins", "losses",
                                      "ties", "ess"]


def _sparse_coin_judge(seed: int = 0, k: int = 30, n_lab: int = 150, n_unl: int = 3000):
    """A sparse labelled design (30 models, 150 one-vote items) and a coin-flip judge on 3,150 items."""
    rng = np.random.default_rng(seed)
    s = rng.normal(0, 0.7, k)
    names = np.array([f"m{i:02d}" for i in range(k)])
    n = n_lab + n_unl
    a = rng.integers(0, k, n)  # not uniform_pairs: the pooled-covariance artefact below is this seed's draw
    b = (a + rng.integers(1, k, n)) % k
    win = np.where(rng.random(n) < 1 / (1 + np.exp(-(s[a] - s[b]))), "model_a", "model_b")
    coin = np.where(rng.random(n) < 0.5, "model_a", "model_b")
    q = np.array([f"q{i}" for i in range(n)])
    human = pd.DataFrame({"model_a": names[a[:n_lab]], "model_b": names[b[:n_lab]], "winner": win[:n_lab],
                          "question_id": q[:n_lab]})
    return load_battles(human), pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": coin,
                                              "question_id": q})


def test_a_useless_judge_reports_no_gain_on_a_sparse_design():
    """The reported variance is continuous at lam = 0 (exact bread, the default): the pooled bread gave this
    coin-flip judge lam 0.015 and an ESS gain of 1.19, all of it from the bread (as on LLMFAO at 10%)."""
    human, judge = _sparse_coin_judge()
    items, _ = ppi_board.build_items(human, judge)
    pooled = ppi.fit_ppi(items, bread="pooled")
    assert np.trace(pooled.covariance_human[:-1, :-1]) / np.trace(pooled.covariance[:-1, :-1]) > 1.1  # the artefact
    table = ppi_board.ppi_leaderboard(human, judge, IntervalOptions(ci="sandwich"))
    assert table.attrs["bread"] == "exact" and table.attrs["ess_gain"] == pytest.approx(1.0, abs=0.02)
    tiny = ppi.fit_ppi(items, lam=1e-6, guard=False)  # exact bread at lam -> 0: the human-only variance
    assert np.trace(tiny.covariance[:-1, :-1]) == pytest.approx(np.trace(tiny.covariance_human[:-1, :-1]), rel=0.01)


def test_a_judge_on_other_models_matches_nothing():
    human, _ = _sparse_coin_judge()
    other = pd.DataFrame({"model_a": ["x"], "model_b": ["y"], "winner": ["model_a"], "question_id": ["q1"]})
    items, dropped = ppi_board.build_items(human, other)
    assert items.n_labelled == 0 and dropped["judge rows naming a model without human votes"] == 1
    with pytest.raises(ValueError, match="at least 2 items"):
        ppi_board.ppi_leaderboard(human, other, IntervalOptions(ci="sandwich"))
