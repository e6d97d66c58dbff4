"""BT / Rao-Kupper / Davidson fits against independent implementations (sklearn, scipy, arena-rank, evalica).

Real data: LLMFAO crowd votes (Ustalov, CC BY 4.0) from ../shared/data/llmfao; simulated data from a
numpy generator with known strengths.
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from sklearn.linear_model import LogisticRegression

from arena.bt import elo
from arena.bt import likelihood as bt
from arena.io.battles import aggregate, aggregate_codes, load_battles
from arena.simulation.simulate import uniform_pairs

pytestmark = pytest.mark.usefixtures("jax_float64")  # these tests build JAX arrays themselves

ELO = 400 / math.log(10)


def simulate_codes(k: int, n: int, seed: int, tie_share: float = 0.15, spread: float = 1.0):
    """Uniform random pairs, BT outcomes, a fixed share of ties; returns (a, b, outcome, strengths)."""
    rng = np.random.default_rng(seed)
    s = rng.normal(0, spread, k)
    a = rng.integers(0, k, n)  # not uniform_pairs: test_refit pins the bootstrap replicates of these draws
    b = (a + rng.integers(1, k, n)) % k
    p = 1 / (1 + np.exp(-(s[a] - s[b])))
    out = np.where(rng.random(n) < tie_share, 2, np.where(rng.random(n) < p, 0, 1))
    return a, b, out, s


def simulated_counts(k: int = 12, n: int = 20_000, seed: int = 1, **kw):
    a, b, out, s = simulate_codes(k, n, seed, **kw)
    return aggregate_codes(a, b, out, [f"m{i:02d}" for i in range(k)]), s


@pytest.fixture(scope="module")
def llmfao_counts(shared_data):
    battles = load_battles(shared_data / "llmfao" / "crowd-comparisons.csv", layout="llmfao")
    return aggregate(battles)


def sklearn_elo(counts, ridge=bt.DEFAULT_RIDGE) -> np.ndarray:
    """Independent MLE: weighted logistic regression on rows x = e_i - e_j, ties as two half rows."""
    d = bt.pair_data(counts)
    k = counts.n_models
    rows = np.zeros((len(d.i), k))
    rows[np.arange(len(d.i)), d.i] = 1.0
    rows[np.arange(len(d.i)), d.j] = -1.0
    win_i = d.counts[:, 0] + d.counts[:, 2] / 2
    win_j = d.counts[:, 1] + d.counts[:, 2] / 2
    x = np.vstack([rows, rows])
    y = np.r_[np.ones(len(rows)), np.zeros(len(rows))]
    w = np.r_[win_i, win_j]
    keep = w > 0
    model = LogisticRegression(C=1 / ridge, fit_intercept=False, tol=1e-12, max_iter=10_000)
    model.fit(x[keep], y[keep], sample_weight=w[keep])
    theta = model.coef_[0]
    return (theta - theta.mean()) * ELO + 1000


def our_elo(counts, ties="half"):
    theta, res = bt.fit_ratings(counts, ties)
    assert bool(res.converged)
    return elo.to_elo(theta), res


def test_half_ties_equals_sklearn_on_llmfao(llmfao_counts):
    ours, _ = our_elo(llmfao_counts)
    ref = sklearn_elo(llmfao_counts)
    assert np.max(np.abs(ours - ref)) < 1e-3
    assert np.isclose(ours.mean(), 1000)


def test_half_ties_equals_sklearn_on_simulation():
    counts, _ = simulated_counts()
    ours, _ = our_elo(counts)
    assert np.max(np.abs(ours - sklearn_elo(counts))) < 1e-3


def test_recovers_true_strengths_on_large_simulation():
    counts, s = simulated_counts(k=8, n=400_000, seed=3, tie_share=0.0)
    ours, _ = our_elo(counts)
    truth = (s - s.mean()) * ELO + 1000
    assert np.max(np.abs(ours - truth)) < 15  # se is about 3 Elo here


def independent_tie_nll(params: np.ndarray, d: bt.PairData, ties: str) -> float:
    """Rao-Kupper and Davidson in their original strength form pi = exp(theta), numpy only."""
    k = len(params) - 1
    pi = np.exp(params[:k])
    pi_i, pi_j = pi[d.i], pi[d.j]
    if ties == "rao-kupper":
        th = 1 + np.exp(params[-1])  # theta >= 1
        p_i = pi_i / (pi_i + th * pi_j)
        p_j = pi_j / (pi_j + th * pi_i)
        p_t = 1 - p_i - p_j
    else:
        nu = np.exp(params[-1])
        den = pi_i + pi_j + nu * np.sqrt(pi_i * pi_j)
        p_i, p_j, p_t = pi_i / den, pi_j / den, nu * np.sqrt(pi_i * pi_j) / den
    c = d.counts
    return float(-(c[:, 0] * np.log(p_i) + c[:, 1] * np.log(p_j) + c[:, 2] * np.log(p_t)).sum()
                 + 0.5 * bt.DEFAULT_RIDGE * np.sum(params[:k] ** 2))


@pytest.mark.parametrize("ties", ["rao-kupper", "davidson"])
def test_tie_models_equal_scipy_on_llmfao(llmfao_counts, ties):
    d = bt.pair_data(llmfao_counts)
    ours, res = our_elo(llmfao_counts, ties)
    x0 = np.zeros(llmfao_counts.n_models + 1)
    ref = minimize(independent_tie_nll, x0, args=(d, ties), method="BFGS",
                   options={"gtol": 1e-8, "maxiter": 20_000})
    # polish with Newton-like steps from scipy's own trust region on the same objective
    ref = minimize(independent_tie_nll, ref.x, args=(d, ties), method="Powell",
                   options={"xtol": 1e-10, "ftol": 1e-14, "maxiter": 200_000}) if not ref.success else ref
    theta = ref.x[:-1]
    assert np.max(np.abs(ours - ((theta - theta.mean()) * ELO + 1000))) < 1e-3
    tie = bt.tie_parameter(res.x, ties)
    ref_tie = 1 + math.exp(ref.x[-1]) if ties == "rao-kupper" else math.exp(ref.x[-1])
    assert tie == pytest.approx(ref_tie, rel=1e-5)


def test_tie_parameter_recovered_from_davidson_simulation():
    rng = np.random.default_rng(7)
    k, n, nu = 6, 200_000, 0.8
    s = np.linspace(-1, 1, k)
    a, b = uniform_pairs(n, k, rng)
    pa, pb = np.exp(s[a]), np.exp(s[b])
    den = pa + pb + nu * np.sqrt(pa * pb)
    u = rng.random(n)
    out = np.where(u < pa / den, 0, np.where(u < (pa + pb) / den, 1, 2))
    counts = aggregate_codes(a, b, out, [f"m{i}" for i in range(k)])
    ours, res = our_elo(counts, "davidson")
    assert bt.tie_parameter(res.x, "davidson") == pytest.approx(nu, rel=0.03)
    assert np.max(np.abs(ours - ((s - s.mean()) * ELO + 1000))) < 12


@pytest.mark.parametrize("ties", bt.TIES)
def test_gradient_and_hessian_match_autodiff(llmfao_counts, ties):
    d = bt.pair_data(llmfao_counts)
    x = np.asarray(bt.fit(bt.initial_x(d, llmfao_counts.n_models, ties), d, ties).x) + 0.01
    g = jax.grad(bt.loss)(x, d, ties)
    h = jax.hessian(bt.loss)(x, d, ties)
    np.testing.assert_allclose(bt.gradient(x, d, ties), g, atol=1e-9)
    np.testing.assert_allclose(bt.hessian(x, d, ties), h, atol=1e-8)


def test_dense_half_ties_terms_and_fit_equal_the_pairwise_ones(monkeypatch):
    # most pairs met: fit and hessian sum over all ordered pairs from the beat matrix (no per-pair scatter)
    counts, _ = simulated_counts(k=20, n=6_000, seed=3)
    d = bt.pair_data(counts)
    assert bt.dense_pairs(20, len(d.i))
    x = np.asarray(bt.fit(bt.initial_x(d, 20, "half"), d).x)
    y = x + np.random.default_rng(0).normal(0, 0.1, x.size)
    w = bt.beat_matrix(d, 20)
    np.testing.assert_allclose(bt.dense_half_loss(y, w), bt.loss(y, d), rtol=1e-12)
    np.testing.assert_allclose(bt.dense_half_gradient(y, w + w.T, w.sum(axis=1)), jax.grad(bt.loss)(y, d),
                               atol=1e-9)
    np.testing.assert_allclose(bt.hessian(y, d), jax.hessian(bt.loss)(y, d), atol=1e-8)
    monkeypatch.setattr(bt, "dense_pairs", lambda k, p: False)  # the gather/scatter terms, unjitted
    with jax.disable_jit():
        sparse = bt.fit(bt.initial_x(d, 20, "half"), d)
        np.testing.assert_allclose(bt.hessian(y, d), jax.hessian(bt.loss)(y, d), atol=1e-8)
    assert bool(sparse.converged)
    np.testing.assert_allclose(x, np.asarray(sparse.x), rtol=0, atol=1e-10)


def test_sandwich_equals_brute_force_over_battles():
    """Meat summed per cell equals the sum over every battle's score outer product (expanded rows)."""
    counts, _ = simulated_counts(k=5, n=600, seed=11)
    d = bt.pair_data(counts)
    x = np.asarray(bt.fit(bt.initial_x(d, 5, "half"), d).x)
    meat = np.zeros((6, 6))
    for (i, j), row in zip(zip(d.i, d.j, strict=True), d.counts, strict=True):
        p = 1 / (1 + np.exp(-(x[i] - x[j])))
        for y, n in zip((1.0, 0.0, 0.5), row, strict=True):
            for _ in range(int(n)):
                score = np.zeros(6)
                score[i], score[j] = y - p, p - y
                meat += np.outer(score, score)
    np.testing.assert_allclose(bt.score_outer(x, d), meat, rtol=1e-10, atol=1e-10)
    # independent route: covariance of centred strengths via the pseudo-inverse of the Hessian
    h_pinv = np.linalg.pinv(np.asarray(bt.hessian(x, d, ridge=0.0))[:5, :5])
    cov = h_pinv @ meat[:5, :5] @ h_pinv
    np.testing.assert_allclose(np.asarray(bt.sandwich_covariance(x, d))[:5, :5], cov, rtol=1e-5, atol=1e-12)


def test_anchor_and_scale():
    theta = np.array([0.0, math.log(10), -math.log(10)])
    r = elo.to_elo(theta, anchor=0, anchor_rating=1200.0)
    np.testing.assert_allclose(r, [1200, 1600, 800])
    r = elo.to_elo(theta, scale=1.0, base=math.e, init=0.0)
    np.testing.assert_allclose(r, theta - theta.mean(), atol=1e-12)


def test_matches_arena_rank_and_evalica(llmfao_counts, shared_data):
    arena_rank = pytest.importorskip("arena_rank.models.bradley_terry", reason="bench extra not installed")
    evalica = pytest.importorskip("evalica", reason="bench extra not installed")
    from arena_rank.utils.data_utils import PairDataset

    battles = load_battles(shared_data / "llmfao" / "crowd-comparisons.csv", layout="llmfao")
    df = battles.df.assign(model_a=battles.df["model_a"].astype(str), model_b=battles.df["model_b"].astype(str),
                           winner=battles.df["winner"].astype(str))
    ours = pd.Series(our_elo(llmfao_counts)[0], index=llmfao_counts.models)
    ds = PairDataset.from_pandas(df)
    model = arena_rank.BradleyTerry(n_competitors=len(ds.competitors), max_iter=20_000, gtol=1e-12, ftol=1e-16)
    ref = model.compute_ratings_and_cis(ds, ci_method="sandwich")
    ref_s = pd.Series(np.asarray(ref["ratings"]), index=ref["competitors"])
    assert np.max(np.abs(ours - ref_s.loc[ours.index])) < 1e-3
    winners = df["winner"].map({"model_a": evalica.Winner.X, "model_b": evalica.Winner.Y, "tie": evalica.Winner.Draw})
    ev = evalica.bradley_terry(df["model_a"], df["model_b"], winners, tolerance=1e-12, limit=100_000)
    ev_elo = np.log(ev.scores.loc[ours.index].to_numpy()) * ELO
    assert np.max(np.abs((ev_elo - ev_elo.mean() + 1000) - ours.to_numpy())) < 1e-3


@pytest.mark.parametrize("anchor", [None, 0, 4])
def test_elo_offsets_and_covariance_equal_the_elo_matrix_products(anchor):
    rng = np.random.default_rng(4)
    theta = rng.normal(size=(7, 6))
    a = rng.normal(size=(6, 6))
    cov = a @ a.T
    m = elo.elo_matrix(6, anchor)
    np.testing.assert_allclose(elo.elo_offsets(theta, anchor), theta @ m.T, rtol=0, atol=1e-14)
    np.testing.assert_allclose(elo.elo_covariance(cov, anchor), m @ cov @ m.T, rtol=0, atol=1e-13)
