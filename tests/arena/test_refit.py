"""Fast Poisson tables, the dense bootstrap refit and device sharding, against exact answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from arena.bootstrap import dense as refit
from arena.bootstrap import refits as bs
from arena.bootstrap import weights as wt
from arena.bootstrap.poisson import BUCKETS, PoissonTable, buckets, inversion_table, poisson_cdf
from arena.bt import elo
from arena.bt import likelihood as bt
from tests.arena.test_bt import simulated_counts

pytestmark = pytest.mark.usefixtures("jax_float64")  # these tests build JAX arrays themselves
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("mean", [0, 1, 3, 67, 900, 4096])
def test_poisson_cdf_equals_scipy(mean):
    cdf = poisson_cdf(mean)
    ref = stats.poisson.cdf(np.arange(cdf.size), mean)
    np.testing.assert_allclose(cdf[:-1], ref[:-1], atol=1e-12)
    assert stats.poisson.sf(cdf.size - 1, mean) < 1e-30  # the mass folded into the last value


@pytest.mark.parametrize("mean", [0, 1, 7, 67, 2500, 4096])
def test_guide_table_is_the_inversion_of_the_bucket_start(mean):
    lut, cdf = inversion_table(mean)
    start = np.arange(BUCKETS) / BUCKETS
    k_start = np.searchsorted(cdf, start, side="right")  # inversion at the bucket start
    k_end = np.searchsorted(cdf, start + 1 / BUCKETS, side="left")  # ... and just below its end
    decided = lut >= 0
    np.testing.assert_array_equal(lut[decided], k_start[decided])
    assert np.all(k_start[decided] == k_end[decided])
    np.testing.assert_array_equal(-1 - lut[~decided], k_start[~decided])
    assert np.all(k_end[~decided] > k_start[~decided])  # marked exactly where a jump falls inside


def test_table_draws_have_the_poisson_distribution():
    means = np.array([0, 1, 1, 4, 4, 4, 30, 5000], float)  # 5000: numpy's sampler
    draws = PoissonTable(means).draw(60_000, np.random.default_rng(3))
    assert np.all(draws[:, 0] == 0)
    for c in (1, 3, 6, 7):
        lam = means[c]
        values, seen = np.unique(draws[:, c], return_counts=True)
        expected = stats.poisson.pmf(values, lam) * draws.shape[0]
        keep = expected > 20
        chi2 = np.sum((seen[keep] - expected[keep]) ** 2 / expected[keep])
        assert stats.chi2.sf(chi2, keep.sum() - 1) > 1e-4
        assert draws[:, c].mean() == pytest.approx(lam, rel=0.02)
        assert draws[:, c].var() == pytest.approx(lam, rel=0.05)


def test_bucket_draws_are_numpys_16_bit_integers_and_leave_the_same_state():
    for shape in ((1, 1), (1, 2), (3, 5), (5, 14_849), (2, 0)):
        ours, numpys = np.random.default_rng([4, shape[1]]), np.random.default_rng([4, shape[1]])
        b = buckets(ours, shape)
        np.testing.assert_array_equal(b, numpys.integers(0, BUCKETS, shape, dtype=np.uint16))
        assert b.shape == shape and b.dtype.itemsize == 2
        assert ours.random() == numpys.random()  # the stream goes on identically


def test_table_draws_invert_their_uniform_exactly():
    """Every draw is #{m: F(m) <= u} (capped at the table's end), u being the bucket's uniform, refined by a
    fresh one where the bucket straddles a jump: replayed here from the same stream, tail buckets included."""
    means = np.array([0, 1, 4, 67, 67, 300, 4096], float)
    n = 40_000
    draws = PoissonTable(means).draw(n, np.random.default_rng(8))
    rng = np.random.default_rng(8)
    b = rng.integers(0, BUCKETS, (n, means.size), dtype=np.uint16)
    luts = [inversion_table(int(m))[0] for m in means]
    amb = np.flatnonzero(np.stack([lut[b[:, c]] for c, lut in enumerate(luts)], axis=1) < 0)
    u = (b.flat[amb] + rng.random(amb.size)) / BUCKETS
    v = b / BUCKETS
    v.flat[amb] = u
    assert np.any(b.flat[amb] == 0)  # a bucket 0 spanning tens of values (Poisson(300): 0-230) among them
    for c, m in enumerate(means):
        cdf = poisson_cdf(int(m))
        expected = np.minimum(cdf.size - 1, np.searchsorted(cdf, v[:, c], side="right"))
        np.testing.assert_array_equal(draws[:, c], expected)


def _fit_parts(counts):
    d = bt.pair_data(counts)
    x = np.asarray(bt.fit(bt.initial_x(d, counts.n_models, "half"), d).x)
    return d, x, np.linalg.inv(np.asarray(bt.conditioned_hessian(x, d)))


def test_dense_counts_match_the_pair_counts():
    counts, _ = simulated_counts(k=7, n=2_000, seed=8)
    d, _, _ = _fit_parts(counts)
    flat = d.counts.ravel()
    live = np.flatnonzero(flat)
    n, s = refit.dense_counts(refit.dense_layout(d, live, 7), flat[live][None])
    tot = d.counts.sum(axis=1)
    np.testing.assert_array_equal(n[0][d.i, d.j], tot)
    np.testing.assert_array_equal(n[0], n[0].T)
    wins = np.zeros(7)
    np.add.at(wins, d.i, d.counts[:, 0] + d.counts[:, 2] / 2)
    np.add.at(wins, d.j, d.counts[:, 1] + d.counts[:, 2] / 2)
    np.testing.assert_allclose(s[0], wins)


def test_dense_refits_equal_sparse_refits_and_the_exact_mle():
    counts, _ = simulated_counts(k=30, n=20_000, seed=6)
    d, x, h_inv = _fit_parts(counts)
    assert refit.use_dense(30, len(d.i), "half")
    dense = bs.bootstrap_fits(d, x, h_inv, n_bootstrap=40, seed=2, dense=True).x
    sparse = bs.bootstrap_fits(d, x, h_inv, n_bootstrap=40, seed=2, dense=False).x
    np.testing.assert_allclose(elo.to_elo(dense[:, :30]), elo.to_elo(sparse[:, :30]), atol=1e-6)
    flat = d.counts.ravel()
    live = np.flatnonzero(flat)
    for r in (0, 17, 39):  # the exact MLE of the same resample, by full Newton from scratch
        w = np.zeros(flat.size)
        w[live] = wt.block_weights(flat[live], 2, r // wt.BLOCK, wt.BLOCK, "multinomial")[r % wt.BLOCK]
        rep = d._replace(counts=w.reshape(-1, 3))
        ref = np.asarray(bt.fit(bt.initial_x(rep, 30, "half"), rep).x)
        assert np.abs(elo.to_elo(dense[r, :30]) - elo.to_elo(ref[:30])).max() < 1e-3


def test_chunk_plan_is_balanced_and_padded_to_the_devices():
    chunks, width = bs.chunk_plan(1000, 750, 2)
    assert [sum(n for _, n in c) for c in chunks] == [500, 500] and width == 500
    chunks, width = bs.chunk_plan(53, 15, 4)
    assert sum(n for c in chunks for _, n in c) == 53 and width % 4 == 0
    assert width >= max(sum(n for _, n in c) for c in chunks)


SHARDED = """
import json, numpy as np, jax
from arena.bootstrap import refits as bs
from arena.bt import likelihood as bt
from tests.arena.test_bt import simulated_counts
counts, _ = simulated_counts(k=12, n=6_000, seed=4)
d = bt.pair_data(counts)
x = np.asarray(bt.fit(bt.initial_x(d, 12, "half"), d).x)
h = np.linalg.inv(np.asarray(bt.conditioned_hessian(x, d)))
out = {"devices": len(jax.local_devices())}
for dense in (True, False):
    both = bs.bootstrap_fits(d, x, h, n_bootstrap=30, seed=1, dense=dense).x
    one = bs.bootstrap_fits(d, x, h, n_bootstrap=30, seed=1, dense=dense, devices=jax.local_devices()[:1]).x
    out[str(dense)] = float(np.abs(both - one).max())
mesh = jax.sharding.Mesh(np.array(jax.local_devices()), ("rep",))
arr = jax.device_put(np.zeros((4, 3)), jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("rep")))
n = jax.device_put(np.zeros((4, 12, 12), np.float32), arr.sharding)
dense_refit = __import__("arena.bootstrap.dense", fromlist=["x"])
xr, _ = dense_refit.refit_dense_chunk(n, jax.device_put(np.zeros((4, 12)), arr.sharding),
                                      jax.numpy.asarray(x), jax.numpy.asarray(h))
out["used"] = len({s.device for s in xr.addressable_shards})
print(json.dumps(out))
"""


def test_replicates_shard_over_two_cpu_devices_with_equal_results():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu",
               PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-c", SHARDED], env=env, capture_output=True, text=True, cwd=ROOT,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["devices"] == 2 and out["used"] == 2
    assert out["True"] < 1e-9 and out["False"] < 1e-9


def _random_digraphs(n_rep: int, k: int, seed: int) -> np.ndarray:
    """Beat matrices built to break Ford's condition in many ways: sparse random digraphs, a group that
    won every battle against the rest, a model that never lost or never won, a long one-way cycle."""
    rng = np.random.default_rng(seed)
    w = (rng.random((n_rep, k, k)) < rng.uniform(0.02, 0.3, (n_rep, 1, 1))) * rng.integers(1, 4, (n_rep, k, k))
    w = w.astype(np.float32) / 2
    for r in range(n_rep):
        np.fill_diagonal(w[r], 0)
        kind = r % 5
        top = rng.choice(k, rng.integers(1, k), replace=False)
        rest = np.setdiff1d(np.arange(k), top)
        if kind == 1:  # the group 'top' won every battle against the rest
            w[r][np.ix_(rest, top)] = 0
        elif kind == 2:  # one model never lost ...
            w[r][:, top[0]] = 0
        elif kind == 3:  # ... or never won
            w[r][top[0], :] = 0
        elif kind == 4:  # only a one-way cycle: strongly connected, found only after k - 1 levels
            w[r] = 0
            perm = rng.permutation(k)
            w[r][perm, np.roll(perm, 1)] = 1
    return w


@pytest.mark.parametrize("k", [2, 7, 40])
def test_strongly_connected_equals_tarjan_on_graphs_built_to_break_fords_condition(k):
    from arena.bt.diagnostics import strong_groups

    w = _random_digraphs(60, k, seed=k)
    got = np.asarray(jax.jit(refit.strongly_connected)(jnp.asarray(w)))
    a, b = np.nonzero(np.ones((k, k), bool) & ~np.eye(k, dtype=bool))
    labels = strong_groups(k, a, b, w[:, a, b].T)
    want = (labels == labels[:, :1]).all(axis=1)
    np.testing.assert_array_equal(got, want)
    assert 5 < want.sum() < 55  # both answers occur


@pytest.mark.parametrize("sparse_scores, gather, integer", [(False, True, True), (True, True, True),
                                                             (False, False, True), (True, False, False)])
def test_signed_battles_carry_the_battles_scores_and_beat_graph(monkeypatch, sparse_scores, gather, integer):
    # both score kernels (np.bincount; scipy CSR, used for large layouts) give the exact scores; both ways of
    # writing the matrix (one gather through the layout's map; two scatters) and int16 or float64 draws alike
    monkeypatch.setattr(refit, "SPARSE_SCORES_FROM", 0 if sparse_scores else 1 << 16)
    monkeypatch.setattr(refit, "GATHER_MAX_MODELS", 1 << 11 if gather else 0)
    counts, _ = simulated_counts(k=9, n=300, seed=2)
    d, _, _ = _fit_parts(counts)
    flat = d.counts.ravel()
    live = np.flatnonzero(flat)
    w = wt.block_weights(flat[live], 3, 0, 5, "multinomial", integer=integer)
    assert w.dtype == (np.int16 if integer else np.float64)
    layout = refit.dense_layout(d, live, 9)
    assert (layout.score is not None) == sparse_scores and (layout.gather is not None) == gather
    m, s = refit.signed_battles(layout, w)
    for r in range(5):
        c = np.zeros(flat.size)
        c[live] = w[r]
        c = c.reshape(-1, 3)
        beats = np.zeros((9, 9))
        beats[d.i, d.j] += c[:, 0] + c[:, 2] / 2
        beats[d.j, d.i] += c[:, 1] + c[:, 2] / 2
        np.testing.assert_array_equal(np.abs(m[r]), beats + beats.T)
        np.testing.assert_array_equal(m[r] > 0, beats > 0)
        np.testing.assert_array_equal(s[r], beats.sum(axis=1))


def test_int8_battles_give_the_float32_refits_and_fall_back_when_a_pair_total_passes_127(monkeypatch):
    # 9 models, ~70 battles a pair: int8 when forced (every block then overflows and is rebuilt in float32)
    counts, _ = simulated_counts(k=9, n=2_500, seed=4)
    d, x, h_inv = _fit_parts(counts)
    assert refit.dense_layout(d, np.flatnonzero(d.counts.ravel()), 9).matrix_dtype == np.float32

    def run(limit: int) -> bs.Replicates:
        monkeypatch.setattr(refit, "INT8_PAIR_TOTAL", limit)
        return bs.bootstrap_fits(d, x, h_inv, n_bootstrap=30, seed=5, dense=True, chunk=10)

    want, forced = run(63), run(10_000)  # float32 matrices; int8 layout whose resamples all pass 127
    np.testing.assert_array_equal(forced.x, want.x)
    small, _ = simulated_counts(k=30, n=3_000, seed=4)  # a few battles a pair: int8 throughout
    d, x, h_inv = _fit_parts(small)
    layout = refit.dense_layout(d, np.flatnonzero(d.counts.ravel()), 30)
    assert layout.matrix_dtype == np.int8
    int8 = bs.bootstrap_fits(d, x, h_inv, n_bootstrap=30, seed=5, dense=True)
    monkeypatch.setattr(refit, "INT8_PAIR_TOTAL", -1)
    f32 = bs.bootstrap_fits(d, x, h_inv, n_bootstrap=30, seed=5, dense=True)
    np.testing.assert_array_equal(int8.x, f32.x)
    np.testing.assert_array_equal(int8.separated, f32.separated)
    w = wt.block_weights(d.counts.ravel()[np.flatnonzero(d.counts.ravel())], 5, 0, 5, "multinomial", integer=True)
    with pytest.raises(OverflowError, match=r"pair total of 2\d\d does not fit int8"):
        refit.signed_battles(layout, np.where(np.arange(w.shape[1]) == 0, 200, w).astype(np.int16))


def test_dense_separation_flags_equal_the_full_tarjan_check():
    # 30 models, ~13 battles each: many resamples leave some model unbeaten or split the graph
    counts, _ = simulated_counts(k=30, n=200, seed=11)
    d, x, h_inv = _fit_parts(counts)
    assert refit.use_dense(30, len(d.i), "half")
    dense = bs.bootstrap_fits(d, x, h_inv, n_bootstrap=60, seed=4, dense=True)
    sparse = bs.bootstrap_fits(d, x, h_inv, n_bootstrap=60, seed=4, dense=False)  # tree screen + Tarjan
    assert 5 < dense.separated.sum() < 60
    np.testing.assert_array_equal(dense.separated, sparse.separated)
    np.testing.assert_array_equal(dense.outside, sparse.outside)


def test_float32_start_ends_where_float64_steps_alone_do():
    # the float32 steps only move the start: the float64 steps must land on the same refits (their mean too)
    counts, _ = simulated_counts(k=40, n=30_000, seed=5)
    d, x, h_inv = _fit_parts(counts)
    flat = d.counts.ravel()
    live = np.flatnonzero(flat)
    layout = refit.dense_layout(d, live, 40)
    assert layout.dtype == np.float32
    m, s = refit.signed_battles(layout, wt.block_weights(flat[live], 7, 0, 10, "multinomial"))
    x32, ok32, c32 = refit.refit_signed_chunk(jnp.asarray(m), jnp.asarray(s), jnp.asarray(x), jnp.asarray(h_inv))
    x64, ok64, c64 = refit.refit_signed_chunk(jnp.asarray(m.astype(np.float64)), jnp.asarray(s), jnp.asarray(x),
                                              jnp.asarray(h_inv))  # float64 battles: no float32 start
    assert np.all(ok32) and np.all(ok64)
    np.testing.assert_array_equal(c32, c64)
    np.testing.assert_allclose(np.asarray(x32), np.asarray(x64), rtol=0, atol=1e-9)


@pytest.mark.parametrize("sparse_scores", [False, True])
def test_float32_battles_past_2_23_battles_with_exact_float64_scores(monkeypatch, sparse_scores):
    # 12.6M battles (10M rows at 100 models reached float64 matrices before): pair totals are exact in
    # float32 below 2^24, a score's halves above 2^23 are not, so the scores are summed in float64
    monkeypatch.setattr(refit, "SPARSE_SCORES_FROM", 0 if sparse_scores else 1 << 16)
    counts = np.array([[5_000_000, 300_000, 1_000_001], [5_500_000, 800_000, 0], [2_000, 1_000, 999]], float)
    d = bt.PairData(np.array([0, 0, 1], np.int32), np.array([1, 2, 2], np.int32), counts)
    x = np.asarray(bt.fit(bt.initial_x(d, 3, "half"), d).x)
    h_inv = np.linalg.inv(np.asarray(bt.conditioned_hessian(x, d)))
    flat = counts.ravel()
    live = np.flatnonzero(flat)
    layout = refit.dense_layout(d, live, 3)
    assert layout.dtype == np.float32
    w = wt.block_weights(flat[live], 5, 0, 6, "multinomial")
    m, s = refit.signed_battles(layout, w)
    c = np.zeros((6, flat.size))
    c[:, live] = w
    c = c.reshape(6, -1, 3)
    score = np.zeros((6, 3))
    for a, col in ((d.i, 0), (d.j, 1)):
        np.add.at(score.T, a, (c[:, :, col] + c[:, :, 2] / 2).T)
    assert np.any(score % 1 == 0.5) and score.max() > 1 << 23
    np.testing.assert_array_equal(s, score)
    x32, ok32, _ = refit.refit_signed_chunk(jnp.asarray(m), jnp.asarray(s), jnp.asarray(x), jnp.asarray(h_inv))
    x64, ok64, _ = refit.refit_signed_chunk(jnp.asarray(m.astype(np.float64)), jnp.asarray(s), jnp.asarray(x),
                                            jnp.asarray(h_inv))
    assert np.all(ok32) and np.all(ok64)
    np.testing.assert_allclose(np.asarray(x32), np.asarray(x64), rtol=0, atol=1e-9)
    big = d._replace(counts=counts * 1.4)  # 17.6M battles: pair totals could pass 2^24
    assert refit.dense_layout(big, live, 3).dtype == np.float64


@pytest.mark.parametrize("kind", ["multinomial", "poisson"])
def test_integer_draws_are_the_float_draws_as_int16(monkeypatch, kind):
    # the dense refit gathers from the int16 draws: the same numbers, the same random stream after them
    counts = np.r_[np.ones(20_000), np.full(5_000, 3.0), np.arange(0, 200.0)]
    for seed in range(4):
        rng_f, rng_i = np.random.default_rng(seed), np.random.default_rng(seed)
        want = wt.draw_weights(counts, 6, rng_f, kind)
        got = wt.draw_weights(counts, 6, rng_i, kind, integer=True)
        assert got.dtype == np.int16
        np.testing.assert_array_equal(got, want)
        assert rng_f.random() == rng_i.random()
    # battles added to fix the total that could pass int16 (not at arena sizes): float64 from the start
    monkeypatch.setattr(wt, "INT16_MAX", 10)
    rows = [wt.draw_weights(counts, 6, np.random.default_rng(s), "multinomial", integer=True) for s in range(4)]
    assert any(r.dtype == np.float64 for r in rows)
    for s, r in enumerate(rows):
        np.testing.assert_array_equal(r, wt.draw_weights(counts, 6, np.random.default_rng(s), "multinomial"))
    big = PoissonTable(np.array([1.0, 5000.0]))  # a mean above the tables: numpy's sampler, float64
    assert big.draw(3, np.random.default_rng(0), integer=True).dtype == np.float64


def test_two_level_table_draws_equal_the_fine_table_inversion():
    # the coarse table only fetches the same values faster: every draw equals the one-level guide table's
    means = np.r_[np.arange(0, 120), [500, 2500, 4096, 5000]].astype(float)
    table = PoissonTable(means)
    rng = np.random.default_rng(9)
    got = table.draw(300, rng)
    rng = np.random.default_rng(9)
    b = rng.integers(0, BUCKETS, (300, table.small.size), dtype=np.uint16)
    want = np.empty(got.shape)
    want[:, table.big] = np.nan
    amb = []
    for c, mean in enumerate(means[table.small].astype(int)):
        lut, _ = inversion_table(mean)
        want[:, table.small[c]] = lut[b[:, c]]
        amb += [(r, c) for r in np.flatnonzero(lut[b[:, c]] < 0)]
    amb.sort()  # the fresh uniforms are drawn in row-major order of the straddling buckets
    u = rng.random(len(amb))
    for (r, c), v in zip(amb, u, strict=True):
        _, cdf = inversion_table(int(means[table.small[c]]))
        want[r, table.small[c]] = np.searchsorted(cdf, (b[r, c] + v) / BUCKETS, side="right")
    small = table.small
    np.testing.assert_array_equal(got[:, small], want[:, small])
    assert 0.001 < np.mean(table.coarse < 0) < 0.05  # a few coarse buckets need the fine table
    assert PoissonTable(np.arange(1, 10.0)).coarse is None  # few means: their fine tables stay in cache


@pytest.mark.parametrize("kind, std, first_last", [
    ("multinomial", [0.04458199644256503, 0.05806379939710298, 0.05059734208304833],
     [-0.757680239365056, -0.6458035877916032]),
    ("poisson", [0.04434748026514734, 0.05712677683271264, 0.05100860957823459],
     [-0.7528749909201489, -0.6435317291149593])])
def test_dense_bootstrap_replicates_are_those_of_the_recorded_seed(kind, std, first_last):
    # recorded before the speed work of session 22: the same seed must give the same replicates (1e-8 Elo)
    counts, _ = simulated_counts(k=60, n=40_000, seed=21)
    d, x, h_inv = _fit_parts(counts)
    assert refit.use_dense(60, len(d.i), "half")
    r = bs.bootstrap_fits(d, x, h_inv, n_bootstrap=40, seed=13, weights=kind)
    assert r.converged.all() and r.n_fallback == 0
    atol = 1e-8 / (400 / np.log(10))  # 1e-8 Elo in natural-log strength
    np.testing.assert_allclose(r.x[:, :60].std(axis=0)[[0, 17, 59]], std, rtol=0, atol=atol)
    np.testing.assert_allclose(r.x[[0, 39], 5], first_last, rtol=0, atol=atol)


def test_dense_cpu_chunks_stay_in_cache_but_not_below_the_floor():
    cpu = jax.devices("cpu")[0]
    for k in (100, 300, 1000):  # a chunk's float32 battles within CACHE_CHUNK, at least MIN_DENSE_CHUNK
        n = bs.chunk_size(100 * k, k, cpu, dense=True)
        assert n % wt.BLOCK == 0
        assert n == bs.MIN_DENSE_CHUNK or n * 4 * k * k <= bs.CACHE_CHUNK < (n + wt.BLOCK) * 4 * k * k
    assert bs.chunk_size(15_000, 100, cpu, dense=True) == 100  # W1 ran as one chunk of 1,000: no overlap
    assert bs.chunk_size(130_000, 300, cpu, dense=True) == 15
    assert bs.chunk_size(15_000, 100, cpu, dense=False) > 100  # the sparse refit keeps its memory rule
