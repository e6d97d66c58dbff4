"""The LC GLM math: Newton vs scikit-learn, analytic derivatives vs autodiff, recovery on simulated data."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from scipy.special import expit
from sklearn.linear_model import LogisticRegression

from arena.lc.bootstrap import (
    LCStart,
    bootstrap_indices,
    bootstrap_lc,
    cold_start,
    fit_lc_jit,
    hyper_from_penalty,
)
from arena.lc.data import table_from_frame, table_to_grid
from arena.lc.fit import (
    LCData,
    LCDivergenceWarning,
    LCGrid,
    LCPenalty,
    Prior,
    _grad_hess,
    fit_difficulty,
    fit_model_glm,
    is_extreme_change,
    lc_leaderboard,
    model_loss,
    no_gamed_rows,
    tanh_std_delta_len,
)

pytestmark = pytest.mark.usefixtures("jax_float64")  # these tests build JAX arrays themselves


def simulate(n_models: int = 8, n_instr: int = 300, length_effect: float = 1.5, seed: int = 0):
    """LC table from the GLM itself: soft labels = true probabilities; also the true LC win rates."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(-1.0, 1.0, n_models)
    gamma = rng.normal(0, 0.8, n_instr)
    base_len = rng.lognormal(7, 0.4, n_instr)
    verbosity = rng.normal(0, 0.5, n_models)  # some models much longer than others
    rows, truth = [], {}
    for m in range(n_models):
        out_len = base_len * np.exp(verbosity[m] + rng.normal(0, 0.3, n_instr))
        d = out_len - base_len
        t = np.tanh(d / d.std(ddof=1))
        p = expit(theta[m] + length_effect * t + gamma)
        truth[f"m{m}"] = 100 * expit(theta[m] + gamma).mean()
        rows.append(pd.DataFrame({"instruction": [f"q{i}" for i in range(n_instr)], "model": f"m{m}",
                                  "preference": p, "output_length": out_len, "baseline_length": base_len}))
    return pd.concat(rows, ignore_index=True), pd.Series(truth), pd.Series(gamma, index=[f"q{i}" for i in range(n_instr)])


def test_newton_matches_sklearn_on_soft_labels():
    """One model, ridge towards 0 on all three coefficients == sklearn L2 logistic regression on duplicated rows."""
    rng = np.random.default_rng(1)
    n = 400
    t, g = np.tanh(rng.normal(size=n)), rng.normal(size=n)
    y = expit(-0.7 + 1.2 * t + 0.8 * g + rng.normal(0, 0.5, n))
    lam = 0.5
    prior = Prior(jnp.zeros(3), jnp.full(3, lam))
    params, gnorm = fit_model_glm(jnp.asarray(y), jnp.asarray(t), jnp.ones(n), jnp.asarray(g), no_gamed_rows(n), 0.0,
                                  prior, jnp.zeros(3))
    x = np.column_stack([np.ones(n), t, g])
    sk = LogisticRegression(C=1 / (2 * lam), fit_intercept=False, tol=1e-12, max_iter=10_000)
    sk.fit(np.vstack([x, x]), np.r_[np.ones(n), np.zeros(n)], sample_weight=np.r_[y, 1 - y])
    assert float(gnorm) < 1e-8
    np.testing.assert_allclose(np.asarray(params), sk.coef_[0], atol=1e-6)


def test_analytic_derivatives_match_autodiff_with_gamed_rows():
    rng = np.random.default_rng(2)
    n, g_rows = 50, 2
    y, t, gam = rng.uniform(size=n), np.tanh(rng.normal(size=n)), rng.normal(size=n)
    gamed = LCGrid(jnp.asarray(rng.uniform(size=(g_rows, n))), jnp.asarray(np.tanh(rng.normal(size=(g_rows, n)))),
                   jnp.asarray((rng.uniform(size=(g_rows, n)) > 0.2).astype(float)))
    prior = Prior(jnp.array([0.1, 1.0, 1.0]), jnp.array([0.3, 2.0, 5.0]))
    w = jnp.asarray(rng.integers(0, 3, n).astype(float))
    p = jnp.array([0.3, -0.4, 1.7])
    args = (jnp.asarray(y), jnp.asarray(t), w, jnp.asarray(gam), gamed, 0.2, prior)
    grad, hess = _grad_hess(p, *args)
    np.testing.assert_allclose(grad, jax.grad(model_loss)(p, *args), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(hess, jax.hessian(model_loss)(p, *args), rtol=1e-10, atol=1e-10)


def test_tanh_std_delta_len_uses_per_model_sd_over_present_rows():
    ml = jnp.array([[10.0, 20.0, 30.0, 99.0], [5.0, 5.0, 8.0, 1.0]])
    bl = jnp.array([[5.0, 5.0, 5.0, 5.0], [5.0, 5.0, 5.0, 5.0]])
    mask = jnp.array([[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    got = np.asarray(tanh_std_delta_len(ml, bl, mask))
    d0 = np.array([5.0, 15.0, 25.0])
    np.testing.assert_allclose(got[0, :3], np.tanh(d0 / d0.std(ddof=1)))
    assert got[0, 3] == 0.0
    d1 = np.array([0.0, 0.0, 3.0, -4.0])
    np.testing.assert_allclose(got[1], np.tanh(d1 / d1.std(ddof=1)))


def test_joint_difficulty_recovers_simulated_gamma():
    table, _, gamma = simulate(n_models=12, n_instr=200, seed=3)
    lc_table = table_from_frame(table, "sim")
    _, instructions, arr = table_to_grid(lc_table)
    mask = jnp.asarray(arr["mask"])
    grid = LCGrid(jnp.asarray(arr["y"]), tanh_std_delta_len(jnp.asarray(arr["model_len"]),
                                                             jnp.asarray(arr["baseline_len"]), mask), mask)
    est = fit_difficulty(grid, ridge=0.01)
    assert np.corrcoef(np.asarray(est.gamma), gamma.reindex(instructions))[0, 1] > 0.99
    np.testing.assert_allclose(np.asarray(est.beta), 1.5, atol=0.1)  # every model's slope is 1.5 here


def test_lc_recovers_true_length_free_win_rate_and_removes_length_bias():
    table, truth, gamma = simulate(n_models=8, n_instr=300, length_effect=1.5, seed=4)
    res = lc_leaderboard(table_from_frame(table, "sim"), n_bootstrap=100, difficulty=gamma, warn=False,
                         penalty=LCPenalty(length=1.0, difficulty=1.0)).set_index("model")
    lc_err = (res["lc_win_rate"] - truth[res.index]).abs()
    raw_err = (res["raw_win_rate"] - truth[res.index]).abs()
    assert lc_err.max() < 1.0, lc_err  # noiseless soft labels: the GLM is exactly right
    assert raw_err.mean() > 5 * lc_err.mean()  # the raw win rate carries the length bias
    assert (res["lc_lower"] <= res["lc_win_rate"]).all() and (res["lc_win_rate"] <= res["lc_upper"]).all()
    assert (res["lc_se"] > 0).all()
    np.testing.assert_allclose(res["length_coef"], 1.5, atol=0.05)


def test_bootstrap_se_matches_spread_over_fresh_samples():
    """SE over instruction resamples ~ SD of the LC estimate over independent simulated instruction sets."""
    rng = np.random.default_rng(5)
    n_instr, est = 200, []
    ses = []
    for rep in range(12):
        gamma = rng.normal(0, 0.8, n_instr)
        base = rng.lognormal(7, 0.4, n_instr)
        rows = []
        for m, (theta, verb) in enumerate([(-1.0, 0.4), (0.0, -0.3), (0.5, 0.0)]):
            out = base * np.exp(verb + rng.normal(0, 0.3, n_instr))
            d = out - base
            p = expit(theta + 1.0 * np.tanh(d / d.std(ddof=1)) + gamma)
            y = rng.binomial(1, p).astype(float)  # hard labels: real sampling noise
            rows.append(pd.DataFrame({"instruction": np.arange(n_instr).astype(str), "model": f"m{m}",
                                      "preference": y, "output_length": out, "baseline_length": base}))
        res = lc_leaderboard(table_from_frame(pd.concat(rows), "sim"), n_bootstrap=200, seed=rep, warn=False)
        res = res.set_index("model").sort_index()
        est.append(res["lc_win_rate"].to_numpy())
        ses.append(res["lc_se"].to_numpy())
    sd = np.std(est, axis=0, ddof=1)
    ratio = np.mean(ses, axis=0) / sd
    assert np.all((ratio > 0.6) & (ratio < 1.6)), ratio


def test_is_extreme_change_follows_alpaca_eval_examples():
    # AlpacaEval docstring: raw 20 -> flagged below 10 or above 40; raw 50 -> below 37.5 or above 62.5.
    raw = np.array([20, 20, 20, 20, 50, 50, 50, 50])
    lc = np.array([9.9, 10.1, 39.9, 40.1, 37.4, 37.6, 62.4, 62.6])
    assert is_extreme_change(raw, lc).tolist() == [True, False, False, True, True, False, False, True]


def test_divergence_warning_and_reference():
    table, _, _ = simulate(n_models=4, n_instr=150, length_effect=6.0, seed=6)
    lc_table = table_from_frame(table, "sim")
    with pytest.warns(LCDivergenceWarning, match="very different"):
        res = lc_leaderboard(lc_table, n_bootstrap=0, reference="m1")
    assert res["extreme_change"].any()
    assert res.set_index("model").loc["m1", "lc_vs_reference"] == pytest.approx(50.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lc_leaderboard(lc_table, n_bootstrap=0, warn=False)
    with pytest.raises(ValueError, match="reference model 'nope'"):
        lc_leaderboard(lc_table, n_bootstrap=0, reference="nope", warn=False)


def test_gamed_rows_pull_length_slope_towards_the_baseline_rewrites():
    """Gamed baseline rewrites with a strong weight pin beta to their own length effect (AlpacaEval's regulariser)."""
    table, _, gamma = simulate(n_models=3, n_instr=200, length_effect=0.5, seed=7)
    rng = np.random.default_rng(8)
    base = table.groupby("instruction", sort=False)["baseline_length"].first()
    gamed = []
    for name, factor in (("base_verbose", 2.0), ("base_concise", 0.5)):
        out = base.to_numpy() * factor * np.exp(rng.normal(0, 0.1, len(base)))
        d = out - base.to_numpy()
        gamed.append(pd.DataFrame({"instruction": base.index, "model": name, "baseline": "baseline",
                                   "preference": expit(3.0 * np.tanh(d / d.std(ddof=1)) + gamma[base.index]),
                                   "output_length": out, "baseline_length": base.to_numpy()}))
    gamed = pd.concat(gamed, ignore_index=True)
    lc_table = table_from_frame(table, "sim")
    free = lc_leaderboard(lc_table, n_bootstrap=0, warn=False, penalty=LCPenalty(length=0, difficulty=0))
    pinned = lc_leaderboard(lc_table, n_bootstrap=0, warn=False, gamed=gamed,
                            penalty=LCPenalty(length=0, difficulty=0, gamed_weight=1e4))
    assert np.allclose(free["length_coef"], 0.5, atol=0.15)
    assert np.allclose(pinned["length_coef"], 3.0, atol=0.3)


def test_schur_newton_difficulty_fit_matches_scipy_on_ragged_grid():
    """The structured Newton of the joint fit (per-model slopes) == a generic optimiser on the same loss."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(9)
    n_m, n_i, ridge = 5, 40, 0.7
    mask = (rng.uniform(size=(n_m, n_i)) > 0.15).astype(float)
    t = np.tanh(rng.normal(size=(n_m, n_i))) * mask
    slopes = rng.uniform(0.8, 2.0, (n_m, 1))
    y = expit(rng.normal(-1, 1, (n_m, 1)) + slopes * t + rng.normal(0, 1, (1, n_i)) + rng.normal(0, 0.3, (n_m, n_i)))
    grid = LCGrid(jnp.asarray(y * mask), jnp.asarray(t), jnp.asarray(mask))
    fit = fit_difficulty(grid, ridge)

    def f(v):
        eta = v[:n_m, None] + v[n_m:2 * n_m, None] * t + v[None, 2 * n_m:]
        ce = -(y * np.log(expit(eta)) + (1 - y) * np.log(expit(-eta)))
        return (mask * ce).sum() + ridge * np.sum(v[2 * n_m:] ** 2)

    ref = minimize(f, np.zeros(2 * n_m + n_i), method="L-BFGS-B", options={"ftol": 1e-15, "gtol": 1e-10}).x
    np.testing.assert_allclose(np.asarray(fit.gamma), ref[2 * n_m:], atol=1e-5)
    np.testing.assert_allclose(np.asarray(fit.beta), ref[n_m:2 * n_m], atol=1e-5)
    np.testing.assert_allclose(np.asarray(fit.theta), ref[:n_m], atol=1e-5)
    fixed = fit_difficulty(grid, ridge, gamma=jnp.asarray(ref[2 * n_m:]))
    np.testing.assert_allclose(np.asarray(fixed.gamma), ref[2 * n_m:])
    np.testing.assert_allclose(np.asarray(fixed.beta), ref[n_m:2 * n_m], atol=1e-5)


def _lc_data(lc_table: pd.DataFrame) -> LCData:
    _, _, arr = table_to_grid(lc_table)
    return LCData(*(jnp.asarray(arr[k]) for k in ("y", "model_len", "baseline_len", "mask")))


def test_bootstrap_short_newton_equals_full_newton():
    table, _, _ = simulate(n_models=5, n_instr=120, seed=10)
    data = _lc_data(table_from_frame(table, "sim"))
    hyper = hyper_from_penalty(LCPenalty())
    gamed = LCData(*(jnp.zeros((0, 120)),) * 4)
    full = fit_lc_jit(data, gamed, jnp.ones(120), hyper, cold_start(5, 120, hyper))
    start = LCStart(full["joint"], full["gamma"], full["params"])
    short = bootstrap_lc(data, gamed, hyper, start, 60, seed=3)
    long = bootstrap_lc(data, gamed, hyper, start, 60, seed=3, n_iter=30)
    np.testing.assert_allclose(short["lc"], long["lc"], atol=1e-9)
    assert short["converged"].all() and short["n_unconverged"] == 0


def _resampled(lc_table: pd.DataFrame, instructions: list[str], idx: np.ndarray) -> pd.DataFrame:
    """The bootstrap data set written out: each drawn instruction a separate copy (own name, own gamma)."""
    by_instr = dict(tuple(lc_table.groupby("instruction", sort=False)))
    return pd.concat([by_instr[instructions[i]].assign(instruction=f"{instructions[i]}#{k}")
                      for k, i in enumerate(idx)], ignore_index=True)


@pytest.mark.parametrize("centre", [1.6, None])
def test_bootstrap_se_equals_a_loop_of_full_refits_on_resampled_tables(centre):
    """Each vmapped replicate (counts as weights) refits everything: its SE equals that of a plain loop of
    lc_leaderboard over the explicitly resampled tables (length sd, difficulty, slopes, prior all refitted).
    Holding the difficulty and the prior at their full-data values (the old bootstrap) gave SE ratios 0.81-0.99
    against this loop (3 of 4 models beyond 10%)."""
    rng = np.random.default_rng(11)
    table, _, _ = simulate(n_models=4, n_instr=60, seed=11)
    table["preference"] = rng.binomial(1, table["preference"]).astype(float)  # hard labels: noisy difficulty
    lc_table = table_from_frame(table, "sim")
    penalty = LCPenalty(length_centre=centre)
    n_boot, seed = 40, 5
    res = lc_leaderboard(lc_table, n_bootstrap=n_boot, seed=seed, warn=False, penalty=penalty)
    res = res.set_index("model").sort_index()
    _, instructions, _ = table_to_grid(lc_table)
    idx = np.asarray(bootstrap_indices(jax.random.PRNGKey(seed), n_boot, len(instructions)))
    loop = []
    for r in idx:
        one = lc_leaderboard(_resampled(lc_table, instructions, r), n_bootstrap=0, warn=False, penalty=penalty)
        loop.append(dict(zip(one["model"], one["lc_win_rate"], strict=True)))
    loop_se = pd.DataFrame(loop).std(ddof=1).reindex(res.index)
    assert res.attrs["bootstrap_unconverged"] == 0
    assert np.all(np.abs(res["lc_se"] / loop_se - 1) < 0.10)
    np.testing.assert_allclose(res["lc_se"], loop_se, rtol=1e-5)  # the same replicates, refitted exactly
