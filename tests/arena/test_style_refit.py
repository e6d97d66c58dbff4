"""Fast style-control refits (arena.style.refit) against the plain per-battle code of arena.style.fit."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from arena.bt import likelihood as bt
from arena.io.battles import load_battles
from arena.style import block_fit
from arena.style import features as style_features
from arena.style import fit as style
from arena.style import refit as sr
from tests.arena.test_style import style_frame

pytestmark = pytest.mark.usefixtures("jax_float64")  # these tests build JAX arrays themselves


def _rows(n=3_000, seed=0, tie_share=0.1):
    df, _ = style_frame(k=6, n=n, seed=seed, tie_share=tie_share)
    battles = load_battles(df)
    rows, *_ = style_features.style_rows(battles, tuple(style_features.STYLE_FEATURES))
    return battles, rows


def test_block_layout_likelihood_equals_per_battle_code():
    _, rows = _rows()
    k = 6
    blocks = sr.make_blocks(rows.a, rows.b, rows.features, rows.outcome)
    assert sorted(blocks.slot[blocks.slot >= 0]) == list(range(len(rows.a)))  # every battle once
    fd = block_fit.full_data(blocks)
    z = np.linspace(-0.4, 0.4, k + 5)
    z[-1] = 0.0
    rows_d = style_features.StyleRows(*map(jnp.asarray, rows))
    for ours, theirs in [(block_fit.block_loss(z, fd, k, 1e-6), style.style_loss(z, rows_d, k)),
                         (block_fit.block_gradient(z, fd, k, 1e-6), style.style_gradient(z, rows_d, k)),
                         (block_fit.block_hessian(z, fd, k, 1e-6), style.style_hessian(z, rows_d, k)),
                         (block_fit.block_meat(z, fd, k), style.style_meat(z, rows_d, k))]:
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-9)
    z0 = np.zeros(k + 5)
    zb, done_b = block_fit.block_newton(jnp.asarray(z0), fd, k, len(rows.a), 1e-6)
    zs, done_s = style.style_newton(jnp.asarray(z0), rows_d, k)
    assert bool(done_b) and bool(done_s)
    np.testing.assert_allclose(zb, zs, atol=1e-12)


@pytest.mark.parametrize("kind", ["multinomial", "poisson"])
@pytest.mark.parametrize("clustered", [False, True])
def test_weight_drawer_reproduces_battle_weights(kind, clustered):
    _, rows = _rows(n=2_000)
    n = len(rows.a)
    clusters = np.random.default_rng(3).integers(0, 300, n) if clustered else None
    if clustered:
        clusters = np.unique(clusters, return_inverse=True)[1]
    blocks = sr.make_blocks(rows.a, rows.b, rows.features, rows.outcome)
    drawer = sr.WeightDrawer(n, clusters, blocks.slot)
    for r in range(30):  # both branches of the multinomial correction occur
        slots = drawer.draw(5, r, kind)
        np.testing.assert_array_equal(sr.battle_weights_of(slots, blocks.slot, n),
                                      style.battle_weights(n, 5, r, kind, clusters))


def _loop_of_full_refits(battles, rows, n_rep, seed):
    """The plain bootstrap: for each replicate, its battle weights and a full Newton fit from scratch."""
    k = len(battles.models)
    z_hat, _ = style.style_newton(jnp.zeros(k + 5), style_features.StyleRows(*map(jnp.asarray, rows)), k)
    out = [style._weighted_newton(z_hat, rows, style.battle_weights(len(rows.a), seed, r), k, "half",
                                  bt.DEFAULT_RIDGE)[0] for r in range(n_rep)]
    return np.stack(out)[:, np.r_[np.arange(k), k + 4]], np.stack(out)[:, k:k + 4]


def test_fast_refit_equals_a_loop_of_full_refits():
    battles, rows = _rows(n=4_000, seed=1)
    fit = style.style_fit(battles, n_bootstrap=12, sandwich=False, seed=2, chunk=5)
    reps, beta = _loop_of_full_refits(battles, rows, 12, seed=2)
    assert fit.rep_converged.all() and not fit.rep_separated.any()
    np.testing.assert_allclose(fit.replicates, reps, atol=1e-5)
    assert np.abs(fit.replicates - reps).max() < 1e-8  # float32 corrections, float64 finish


def test_fast_refit_comparison_catches_a_wrong_refit(monkeypatch):
    """The comparison above fails for a refit that puts each battle's weight on its neighbour's slot."""
    battles, rows = _rows(n=4_000, seed=1)
    draw = sr.WeightDrawer.draw
    monkeypatch.setattr(sr.WeightDrawer, "draw", lambda self, *a: np.roll(draw(self, *a), 1))
    fit = style.style_fit(battles, n_bootstrap=12, sandwich=False, seed=2, chunk=5)
    reps, _ = _loop_of_full_refits(battles, rows, 12, seed=2)
    assert np.abs(fit.replicates - reps).max() > 1e-3


def test_float32_tanh_series_is_accurate_and_unbiased():
    x = np.random.default_rng(0).normal(size=200_000).astype(np.float32) * 0.05
    t = np.asarray(sr._tanh(jnp.asarray(x)), np.float64)
    ref = np.tanh(x.astype(np.float64))
    rel = (t - ref) / np.where(ref == 0, 1, ref)
    assert np.abs(rel).max() < 3e-7 and abs(rel.mean()) < 1e-8  # jnp.tanh's float32 mean is ~ -9e-8
