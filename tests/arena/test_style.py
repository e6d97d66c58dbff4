"""Style control: features from conv_metadata or text, the joint fit against sklearn, recovery on simulation."""

from __future__ import annotations

import json
import math
import warnings

import jax
import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from arena.bt import elo
from arena.bt import likelihood as bt
from arena.io.battles import load_battles
from arena.leaderboard import fit_leaderboard
from arena.leaderboard_options import IntervalOptions
from arena.style import features as style_features
from arena.style import fit as style

pytestmark = pytest.mark.usefixtures("jax_float64")  # these tests build JAX arrays themselves

ELO = 400 / math.log(10)


def style_frame(k: int = 8, n: int = 6_000, seed: int = 0, length_effect: float = 3.0, tie_share: float = 0.0):
    """Simulated battles where longer answers win more often; totals given as Arena columns."""
    rng = np.random.default_rng(seed)
    s = rng.normal(0, 0.7, k)
    a = rng.integers(0, k, n)  # not uniform_pairs: the checks on the style intervals are this seed's draws
    b = (a + rng.integers(1, k, n)) % k
    # some models are verbose: their answers are longer on average
    verbosity = np.linspace(5.5, 6.5, k)
    la, lb = rng.lognormal(verbosity[a], 0.4), rng.lognormal(verbosity[b], 0.4)
    f = (la - lb) / (la + lb + 1)
    p = 1 / (1 + np.exp(-(s[a] - s[b] + length_effect * f)))
    out = np.where(rng.random(n) < tie_share, 2, np.where(rng.random(n) < p, 0, 1))
    names = np.array([f"m{i}" for i in range(k)])
    df = pd.DataFrame({"model_a": names[a], "model_b": names[b],
                       "winner": np.array(["model_a", "model_b", "tie"])[out],
                       "sum_assistant_a_tokens": la.round(), "sum_assistant_b_tokens": lb.round()})
    for c in ("header_count", "list_count", "bold_count"):
        df[f"{c}_a"], df[f"{c}_b"] = rng.poisson(2, n), rng.poisson(2, n)
    return df, s


def test_markdown_counts():
    text = "# Title\nSome **bold** and __also bold__.\n\n- one\n- two\n1. three\n## Sub\nplain"
    chars, headers, lists, bold = style_features.markdown_counts(text)
    assert (chars, headers, lists, bold) == (len(text), 2, 3, 2)


def test_features_from_text_equal_features_from_metadata():
    conv_a = [[{"role": "user", "content": "hi # not a header"}, {"role": "assistant", "content": "# H\n- a\n**b**"}]]
    conv_b = [[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "plain answer"}]]
    meta = {"sum_assistant_a_tokens": len("# H\n- a\n**b**"), "header_count_a": {"h1": 1, "h2": 0},
            "list_count_a": {"ordered": 0, "unordered": 1}, "bold_count_a": {"**": 1, "__": 0},
            "sum_assistant_b_tokens": len("plain answer"), "header_count_b": {"h1": 0},
            "list_count_b": {"ordered": 0}, "bold_count_b": {"**": 0}}
    with_meta = load_battles(pd.DataFrame({"model_a": ["x"], "model_b": ["y"], "winner": ["model_a"],
                                           "conv_metadata": [meta]}))
    with_text = load_battles(pd.DataFrame({"model_a": ["x"], "model_b": ["y"], "winner": ["model_a"],
                                           "conversation_a": conv_a, "conversation_b": conv_b}))
    t_meta, src_meta = style_features.style_totals(with_meta)
    t_text, src_text = style_features.style_totals(with_text)
    assert (src_meta, src_text) == ("conv_metadata", "text")
    pd.testing.assert_frame_equal(t_meta, t_text)


def test_feature_transform_is_normalised_difference_zscored():
    totals = pd.DataFrame({"sum_assistant_a_tokens": [10.0, 0.0, 5.0], "sum_assistant_b_tokens": [0.0, 10.0, 5.0]})
    f, mean, sd = style_features.style_features(totals, ["length"])
    raw = np.array([10 / 11, -10 / 11, 0.0])
    np.testing.assert_allclose(f[:, 0], (raw - raw.mean()) / raw.std())
    with pytest.raises(ValueError, match="unknown style feature"):
        style_features.style_features(totals, ["emoji"])


def test_missing_style_inputs_is_a_clear_error():
    battles = load_battles(pd.DataFrame({"model_a": ["x"], "model_b": ["y"], "winner": ["tie"]}))
    with pytest.raises(ValueError, match="style control needs conv_metadata"):
        style_features.style_totals(battles)


@pytest.mark.parametrize("ties", bt.TIES)
def test_gradient_and_hessian_match_autodiff(ties):
    df, _ = style_frame(k=5, n=800, tie_share=0.2)
    rows, *_ = style_features.style_rows(load_battles(df), list(style_features.STYLE_FEATURES))
    z = np.linspace(-0.3, 0.3, 5 + 4 + 1)
    np.testing.assert_allclose(style.style_gradient(z, rows, 5, ties), jax.grad(style.style_loss)(z, rows, 5, ties),
                               atol=1e-9)
    np.testing.assert_allclose(style.style_hessian(z, rows, 5, ties),
                               jax.hessian(style.style_loss)(z, rows, 5, ties), atol=1e-8)


def test_joint_fit_equals_sklearn_logistic_regression():
    df, _ = style_frame(tie_share=0.2)
    battles = load_battles(df)
    rows, *_ = style_features.style_rows(battles, list(style_features.STYLE_FEATURES))
    sf = style.style_fit(battles, n_bootstrap=0, sandwich=False)
    k = 8
    x = np.zeros((len(rows.a), k))
    x[np.arange(len(x)), rows.a] = 1
    x[np.arange(len(x)), rows.b] = -1
    x = np.hstack([x, rows.features])
    y1 = np.array([1.0, 0.0, 0.5])[rows.outcome]  # ties: half a win each way, as two half-weight rows
    model = LogisticRegression(C=1 / bt.DEFAULT_RIDGE, fit_intercept=False, tol=1e-12, max_iter=10_000)
    model.fit(np.vstack([x, x]), np.r_[np.ones(len(x)), np.zeros(len(x))], sample_weight=np.r_[y1, 1 - y1])
    # sklearn penalises beta too (C = 1/ridge): a 1e-6 effect, far below the tolerance
    theta = model.coef_[0][:k]
    np.testing.assert_allclose(elo.to_elo(sf.x[:k]), elo.to_elo(theta), atol=1e-3)
    np.testing.assert_allclose(sf.coefficients["coefficient"], model.coef_[0][k:], atol=1e-6)


def test_style_control_recovers_true_strengths_and_length_effect():
    df, s = style_frame(n=60_000, seed=1)
    truth = pd.Series((s - s.mean()) * ELO + 1000, index=[f"m{i}" for i in range(8)])
    plain = fit_leaderboard(df, IntervalOptions(ci="sandwich")).table.set_index("model")["rating"]
    lb = fit_leaderboard(df, IntervalOptions(ci="sandwich"), style_control=True)
    adjusted = lb.table.set_index("model")["rating"]
    err_plain = np.abs(plain - truth.loc[plain.index]).max()
    err_adj = np.abs(adjusted - truth.loc[adjusted.index]).max()
    assert err_adj < 15 < err_plain  # verbose models are inflated without style control
    coef = lb.style.loc["length"]
    assert coef["lower"] > 0.5 and coef["upper"] > coef["coefficient"] > coef["lower"]
    for other in ("headers", "lists", "bold"):  # no effect was simulated: intervals cover 0
        assert lb.style.loc[other, "lower"] < 0 < lb.style.loc[other, "upper"]
    assert lb.table.attrs["style_coefficients"]["length"]["coefficient"] == coef["coefficient"]


def test_style_bootstrap_agrees_with_sandwich_and_is_reproducible():
    df, _ = style_frame(n=8_000, seed=2, tie_share=0.1)
    battles = load_battles(df)
    a = style.style_fit(battles, n_bootstrap=120, seed=4, chunk=40)
    b = style.style_fit(battles, n_bootstrap=120, seed=4, chunk=120)
    np.testing.assert_allclose(a.replicates, b.replicates, atol=1e-12)
    c = a.coefficients
    width_b, width_s = c["upper_bootstrap"] - c["lower_bootstrap"], c["upper_sandwich"] - c["lower_sandwich"]
    assert np.all(np.abs(width_b / width_s - 1) < 0.3)


def test_style_features_from_llmfao_text(shared_data):
    """Real answers (LLMFAO pairs, CC BY 4.0): text-derived totals are computed for every pair."""
    path = shared_data / "llmfao" / "pairs-crowd.jsonl"
    pairs = [json.loads(line) for line in path.read_text().splitlines()[:200]]
    totals = style_features.totals_from_text([p["result_x"] for p in pairs], [p["result_y"] for p in pairs])
    assert len(totals) == 200 and (totals["sum_assistant_a_tokens"] > 0).mean() > 0.9
    assert totals[["list_count_a", "list_count_b"]].to_numpy().sum() > 0  # some answers use lists


def test_style_leaderboard_with_bootstrap_intervals():
    df, _ = style_frame(n=3_000, seed=3)
    lb = fit_leaderboard(df, IntervalOptions(ci="both", n_bootstrap=40, seed=1), style_control=True)
    t = lb.table
    assert np.all((t["lower_bootstrap"] <= t["rating"]) & (t["rating"] <= t["upper_bootstrap"]))
    assert lb.replicates.shape == (40, 9) and lb.rank_distribution.shape == (8, 8)
    assert {"lower_bootstrap", "lower_sandwich"} <= set(lb.style.columns)


def test_style_confounded_with_model_identity_warns():
    df, _ = style_frame(n=2_000, seed=5)
    # model m0 always answers with three headers, nobody else uses any: headers == "is m0 playing"
    df["header_count_a"] = np.where(df["model_a"] == "m0", 3, 0)
    df["header_count_b"] = np.where(df["model_b"] == "m0", 3, 0)
    with pytest.warns(style_features.ConfoundedStyleWarning, match="'headers' .* is almost determined .* DROPPED"):
        # the default features: dropped, loudly
        lb = fit_leaderboard(df, IntervalOptions(ci="sandwich"), style_control=True)
    assert any("headers" in m for m in lb.diagnostics)
    assert list(lb.style.index) == ["length", "lists", "bold"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", style_features.ConfoundedStyleWarning)  # fine once the feature is dropped
        fit_leaderboard(df, IntervalOptions(ci="sandwich"), style_control=True,
                        style_features=("length", "lists", "bold"))
    with pytest.raises(style_features.ConfoundedStyleError, match="style_features=length,bold") as e:  # chosen: refused
        fit_leaderboard(df, IntervalOptions(ci="sandwich"), style_control=True,
                        style_features=("length", "headers", "bold"))
    assert set(e.value.confounded) == {"headers"} and e.value.kept == ("length", "bold")


def separated_style_frame(seed: int = 0) -> pd.DataFrame:
    """style_frame where {m0..m3} win every battle against {m4..m7} (within-group results as simulated)."""
    df, _ = style_frame(n=2_000, seed=seed)
    top = df["model_a"].isin(["m0", "m1", "m2", "m3"])
    cross = top != df["model_b"].isin(["m0", "m1", "m2", "m3"])
    df.loc[cross, "winner"] = np.where(top[cross], "model_a", "model_b")
    return df


def test_style_control_on_a_separated_design_reports_unbounded_intervals():
    from arena.bt.diagnostics import SeparatedGraphWarning

    # before: m2 2663.6 [2637.5, 2730.7] ... m4 -749.4 [-831.3, -739.5], and no warning
    with pytest.warns(SeparatedGraphWarning, match=r"\{m0, m1, m2, m3\} beat \{m4, m5, m6, m7\}"):
        lb = fit_leaderboard(separated_style_frame(), IntervalOptions(ci="both", n_bootstrap=10), style_control=True)
    t = lb.table
    assert lb.separation.groups == [["m0", "m1", "m2", "m3"], ["m4", "m5", "m6", "m7"]]
    assert not t["identified"].any() and (t["upper"] == np.inf).all() and (t["lower_sandwich"] == -np.inf).all()
    assert lb.excluded["separated"] == 10  # every resample of a separated design is separated too


def test_style_bootstrap_flags_separated_and_unconverged_replicates():
    df, _ = style_frame(n=600, seed=2, length_effect=0.0)
    # m0 loses exactly one battle: many battle resamples drop it and m0's MLE runs to +infinity there
    m0 = (df["model_a"] == "m0") | (df["model_b"] == "m0")
    win = np.where(df["model_a"] == "m0", "model_a", "model_b")
    df.loc[m0, "winner"] = win[m0]
    first = np.flatnonzero(m0)[0]
    df.loc[first, "winner"] = "model_b" if df.loc[first, "model_a"] == "m0" else "model_a"
    battles = load_battles(df)
    sf = style.style_fit(battles, features=("length",), n_bootstrap=60, sandwich=False, seed=0)
    assert sf.converged and sf.rep_separated.sum() > 10 and sf.rep_converged.shape == (60,)
    # the flags agree with an independent check: the one loss of m0 is absent from the resample
    rows, *_ = style_features.style_rows(battles, ("length",))
    w = np.stack([style.battle_weights(len(df), 0, r) for r in range(60)], axis=1)
    np.testing.assert_array_equal(sf.rep_separated, w[first] == 0)
    with pytest.warns(match=r"bootstrap replicates are excluded .*have no MLE.*m0 \(upper \+inf"):
        lb = fit_leaderboard(df, IntervalOptions(n_bootstrap=60, seed=0), style_control=True,
                             style_features=("length",))
    assert lb.table.set_index("model").at["m0", "upper"] == np.inf
    assert lb.excluded["separated"] == int(sf.rep_separated.sum())
