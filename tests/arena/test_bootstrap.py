"""Bootstrap weights, vmapped refits, percentile intervals and ranks, checked against exact answers."""

from __future__ import annotations

import numpy as np
import pytest

from arena.bootstrap import intervals as bootstrap_intervals
from arena.bootstrap import refits as bs
from arena.bootstrap import weights as wt
from arena.bt import elo
from arena.bt import likelihood as bt
from arena.leaderboard import fit_leaderboard
from arena.leaderboard_options import IntervalOptions
from tests.arena.test_bt import simulated_counts


def test_multinomial_weights_have_multinomial_moments():
    counts = np.array([5.0, 1.0, 30.0, 64.0])
    n = counts.sum()
    w = wt.draw_weights(counts, 40_000, np.random.default_rng(0), "multinomial")
    assert np.all(w.sum(axis=1) == n) and np.all(w >= 0)
    p = counts / n
    np.testing.assert_allclose(w.mean(axis=0), counts, rtol=0.02)
    cov = np.cov(w.T)
    expected = n * (np.diag(p) - np.outer(p, p))
    np.testing.assert_allclose(cov, expected, atol=0.05 * expected.max())


def test_poisson_weights_have_poisson_moments():
    counts = np.array([3.0, 40.0])
    w = wt.draw_weights(counts, 40_000, np.random.default_rng(1), "poisson")
    np.testing.assert_allclose(w.mean(axis=0), counts, rtol=0.02)
    np.testing.assert_allclose(w.var(axis=0), counts, rtol=0.05)
    assert w.sum(axis=1).std() > 0  # totals vary, unlike the multinomial


def test_unknown_weight_kind_is_an_error():
    with pytest.raises(ValueError, match="multinomial"):
        wt.draw_weights(np.ones(3), 2, np.random.default_rng(0), "bayesian")  # type: ignore[arg-type]


def _fit_parts(counts, ties="half"):
    d = bt.pair_data(counts)
    x = np.asarray(bt.fit(bt.initial_x(d, counts.n_models, ties), d, ties).x)
    h_inv = np.linalg.inv(np.asarray(bt.conditioned_hessian(x, d, ties)))
    return d, x, h_inv


@pytest.mark.parametrize("ties", bt.TIES)
def test_chord_refits_equal_full_newton_fits(ties):
    counts, _ = simulated_counts(k=10, n=5_000, seed=5)
    d, x, h_inv = _fit_parts(counts, ties)
    reps, fallback, *_ = bs.bootstrap_fits(d, x, h_inv, n_bootstrap=30, seed=3, ties=ties, chunk=25)
    assert reps.shape == (30, 11) and fallback == 0
    # redo some replicates by full Newton on the same weights (block r // BLOCK of the random streams)
    flat = d.counts.ravel()
    live = np.flatnonzero(flat)
    for r in (0, 7, 29):
        w = np.zeros(flat.size)
        w[live] = wt.block_weights(flat[live], 3, r // wt.BLOCK, wt.BLOCK, "multinomial")[r % wt.BLOCK]
        rep = d._replace(counts=w.reshape(-1, 3))
        ref = np.asarray(bt.fit(bt.initial_x(rep, 10, ties), rep, ties).x)
        np.testing.assert_allclose(elo.to_elo(reps[r, :10]), elo.to_elo(ref[:10]), atol=1e-6)
        if ties != "half":
            assert reps[r, -1] == pytest.approx(ref[-1], abs=1e-8)


def test_bootstrap_is_reproducible_and_independent_of_chunking():
    counts, _ = simulated_counts(k=6, n=3_000, seed=2)
    d, x, h_inv = _fit_parts(counts)
    a, *_ = bs.bootstrap_fits(d, x, h_inv, n_bootstrap=60, seed=9, chunk=20, threads=1)
    b, *_ = bs.bootstrap_fits(d, x, h_inv, n_bootstrap=60, seed=9, chunk=50, threads=2)
    c, *_ = bs.bootstrap_fits(d, x, h_inv, n_bootstrap=60, seed=10, chunk=50)
    np.testing.assert_allclose(a, b, atol=1e-12)
    assert np.abs(a - c).max() > 1e-3


def test_newton_fallback_handles_a_replicate_where_a_model_never_loses():
    # model 2 lost once and won otherwise: many resamples drop that loss, so its MLE goes to +infinity
    counts, _ = simulated_counts(k=4, n=400, seed=4)
    d, x, h_inv = _fit_parts(counts)
    resample = d.counts.copy()
    resample[d.i == 0, 1] = 0.0  # model 0 never loses in this resample...
    resample[d.j == 0, 0] = 0.0
    resample[(d.i == 0) | (d.j == 0), 2] = 0.0  # ... and never ties
    x_b, ok = bs.newton_refit_chunk(resample[None], x, d)
    assert bool(ok[0])
    assert x_b[0, 0] - x_b[0, 1:4].max() > 5  # huge but finite (ridge-regularised)


def test_percentile_interval_and_rank_rules():
    samples = np.arange(1, 1001, dtype=float)[:, None] * np.array([1.0, 2.0])
    lo, hi = bootstrap_intervals.percentile_interval(samples, 0.9)
    np.testing.assert_allclose(lo, np.quantile(samples, 0.05, axis=0))
    np.testing.assert_allclose(hi, np.quantile(samples, 0.95, axis=0))
    lower = np.array([10.0, 8.0, 1.0, 0.5])
    upper = np.array([12.0, 11.0, 9.0, 2.0])
    # model 2's upper (9) is below model 0's lower (10) only; model 3's (2) below those of 0 and 1, not 2
    np.testing.assert_array_equal(bootstrap_intervals.rank_from_intervals(lower, upper), [1, 1, 2, 3])


def test_rank_distribution_rows_are_probabilities():
    rng = np.random.default_rng(0)
    samples = rng.normal([3.0, 2.0, 0.0], 0.8, size=(2000, 3))
    dist = bootstrap_intervals.rank_distribution(samples)
    np.testing.assert_allclose(dist.sum(axis=1), 1.0)
    np.testing.assert_allclose(dist.sum(axis=0), 1.0)  # each rank is held by one model per replicate
    assert dist[0, 0] > 0.7 and dist[2, 2] > 0.9


@pytest.mark.slow
def test_bootstrap_and_sandwich_agree_on_a_large_simulated_arena():
    counts, _ = simulated_counts(k=20, n=300_000, seed=8)
    d, x, h_inv = _fit_parts(counts)
    reps, *_ = bs.bootstrap_fits(d, x, h_inv, n_bootstrap=400, seed=0)
    boot_sd = elo.to_elo(reps[:, :20]).std(axis=0)
    cov = np.asarray(bt.sandwich_covariance(x, d))[:20, :20]
    m = elo.elo_matrix(20) * 400 / np.log(10)
    sw_sd = np.sqrt(np.diag(m @ cov @ m.T))
    np.testing.assert_allclose(boot_sd, sw_sd, rtol=0.12)
    assert abs(np.mean(boot_sd / sw_sd) - 1) < 0.03


def test_leaderboard_bootstrap_matches_sandwich_intervals():
    from tests.arena.test_leaderboard import battles_frame

    lb = fit_leaderboard(battles_frame(k=8, n=40_000, seed=1), IntervalOptions(ci="both", n_bootstrap=300))
    t = lb.table
    width_b = t["upper_bootstrap"] - t["lower_bootstrap"]
    width_s = t["upper_sandwich"] - t["lower_sandwich"]
    assert np.all(np.abs(width_b / width_s - 1) < 0.25)
    assert lb.rank_distribution.shape == (8, 8)


def test_fallback_refits_on_a_tiny_arena_are_exact_and_chunking_free():
    # 40 votes among 4 models: many resamples leave some model unbeaten, so the Newton fallback runs
    counts, _ = simulated_counts(k=4, n=40, seed=1)
    d, x, h_inv = _fit_parts(counts)
    reps_a, fb_a, *_ = bs.bootstrap_fits(d, x, h_inv, n_bootstrap=200, seed=5, chunk=wt.BLOCK)
    reps_b, fb_b, *_ = bs.bootstrap_fits(d, x, h_inv, n_bootstrap=200, seed=5, chunk=4 * wt.BLOCK)
    assert fb_a == fb_b > 0
    assert np.isfinite(reps_a).all()
    np.testing.assert_allclose(reps_a, reps_b, atol=1e-8)


def test_replicate_separation_flags_match_an_independent_ford_check():
    from arena.bt.diagnostics import ford_condition

    counts, _ = simulated_counts(k=4, n=40, seed=1)
    d, x, h_inv = _fit_parts(counts)
    res = bs.bootstrap_fits(d, x, h_inv, n_bootstrap=60, seed=5, chunk=4 * wt.BLOCK)
    assert 0 < res.separated.sum() < 60 and res.converged.all()
    flat = d.counts.ravel()
    live = np.flatnonzero(flat)
    for r in range(60):
        w = np.zeros(flat.size)
        w[live] = wt.block_weights(flat[live], 5, r // wt.BLOCK, wt.BLOCK, "multinomial")[r % wt.BLOCK]
        tensor = np.zeros((4, 4, 3))
        tensor[d.i, d.j] = w.reshape(-1, 3)
        assert res.separated[r] == (not ford_condition(tensor))
        assert res.outside[r].any() == res.separated[r]


def test_usable_interval_excludes_and_opens_the_unknown_side():
    samples = np.tile(np.arange(100.0)[:, None], (1, 2))
    usable = np.arange(100) >= 10  # 10 replicates excluded
    above = np.zeros((100, 2), bool)
    above[:10, 0] = True  # ... where model 0 had an infinite lead: 10% > 2.5%, its upper bound is unknown
    lo, hi = bootstrap_intervals.usable_interval(samples, usable, above, np.zeros_like(above), 0.95)
    ref_lo, ref_hi = np.quantile(samples[10:], [0.025, 0.975], axis=0)
    assert lo == pytest.approx(ref_lo) and hi[1] == pytest.approx(ref_hi[1]) and hi[0] == np.inf
    lo, hi = bootstrap_intervals.usable_interval(samples, np.zeros(100, bool))
    assert (lo == -np.inf).all() and (hi == np.inf).all()


def champion_frame(n_loss: int = 1):
    """A connected arena where 'champ' lost only ``n_loss`` of its 40 battles: resamples often drop them."""
    import pandas as pd

    from tests.arena.test_leaderboard import battles_frame

    champ = pd.DataFrame({"model_a": ["champ"] * 40, "model_b": [f"model-{i % 4}" for i in range(40)],
                          "winner": ["model_b"] * n_loss + ["model_a"] * (40 - n_loss)})
    return pd.concat([battles_frame(k=4, n=400, seed=3), champ], ignore_index=True)


def test_leaderboard_excludes_separated_replicates_and_reports_them():
    from arena.bt.diagnostics import ExcludedReplicatesWarning

    # before: champ [1416, 3218] (ridge artefact) and model-1 dragged to [95, 588] by those replicates; now
    # champ [1414, +inf], model-1 [471, 596], and a warning
    with pytest.warns(ExcludedReplicatesWarning,
                      match=r"excluded from the intervals.*have no MLE.*champ \(upper \+inf"):
        lb = fit_leaderboard(champion_frame(), IntervalOptions(n_bootstrap=200, seed=1))
    t = lb.table.set_index("model")
    ex = lb.excluded
    assert ex["replicates"] == 200 and ex["separated"] > 40 and ex["used"] == 200 - ex["separated"]
    assert lb.table.attrs["bootstrap_excluded"] == ex and lb.replicates.shape[0] == ex["used"]
    assert t.at["champ", "upper"] == np.inf and np.isfinite(t.at["champ", "lower"])
    assert np.isfinite(t.drop(index="champ")[["lower", "upper"]].to_numpy()).all()
    assert t["identified"].all()  # the full data satisfy Ford's condition


def test_replicates_whose_fallback_fails_are_counted_and_excluded(monkeypatch):
    from arena.bt.diagnostics import ExcludedReplicatesWarning

    chord, newton = bs.refit_chunk, bs.newton_refit_chunk

    def flaky_chord(counts, *a, **k):  # the first 3 replicates of every chunk do not settle ...
        x, ok = chord(counts, *a, **k)
        return x, np.asarray(ok) & (np.arange(len(ok)) >= 3)

    def failing_newton(*a, **k):  # ... and their full-Newton fallback does not converge either
        x, ok = newton(*a, **k)
        return x, np.zeros_like(np.asarray(ok))

    dense = bs.refit.refit_signed_chunk

    def flaky_dense(*a, **k):  # the same for the dense refit (half ties on a dense graph)
        x, ok, connected = dense(*a, **k)
        return x, np.asarray(ok) & (np.arange(len(ok)) >= 3), connected

    monkeypatch.setattr(bs, "refit_chunk", flaky_chord)
    monkeypatch.setattr(bs.refit, "refit_signed_chunk", flaky_dense)
    monkeypatch.setattr(bs, "newton_refit_chunk", failing_newton)
    from tests.arena.test_leaderboard import battles_frame

    with pytest.warns(ExcludedReplicatesWarning, match=r"3 of 40 bootstrap replicates are excluded .*3 did not "
                                                        r"converge.*the other 37"):
        lb = fit_leaderboard(battles_frame(k=4, n=2_000), IntervalOptions(n_bootstrap=40))
    assert lb.excluded["not_converged"] == 3 and lb.replicates.shape[0] == 37


def test_battle_cells_equal_the_search_over_the_full_cumulative_sum():
    rng = np.random.default_rng(9)
    for n in (1, 5, 63, 64, 65, 130, 5_000, 60_000):
        row = rng.poisson(rng.choice([0.2, 1.0, 4.0], n)).astype(float)
        row[-1] += 1  # at least one battle, the last cell included
        every = np.arange(int(row.sum()))
        # every battle (the full sum's branch) and a few (the blocks' branch, on long rows)
        for pos in (every, rng.choice(every, min(every.size, 20), replace=False), every[-1:]):
            want = np.searchsorted(np.cumsum(row), pos, side="right")
            np.testing.assert_array_equal(wt._battle_cells(row, pos), want)
            # int16 rows with their block sums made beforehand (draw_weights shares them with the row totals)
            small = row.astype(np.int16)
            np.testing.assert_array_equal(wt._battle_cells(small, pos, wt._block_sums(small[None])[0]), want)
