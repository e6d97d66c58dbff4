"""Studies on simulated arenas with known truth: recovery, interval coverage, bias, active vs uniform.

Every fit goes through the project's BT code: :func:`arena.leaderboard.fit_leaderboard` per arena (the
path users run, with bootstrap and sandwich intervals), or :func:`arena.bt.likelihood.fit` and
:func:`arena.bt.likelihood.sandwich_covariance` vmapped across thousands of arenas at once (:func:`fit_arenas`).
Ratings are reported on the simulator's natural-log BT scale, anchored so the last model is 0 (the seed's
``arena_sim.py`` convention).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from scipy.stats import norm

from arena.bt import elo
from arena.bt import likelihood as bt
from arena.bt.diagnostics import ford_condition  # noqa: F401  (re-exported: studies use it)
from arena.bt.likelihood import Ties
from arena.jax_setup import float64
from arena.leaderboard import fit_leaderboard
from arena.leaderboard_options import EloScale, IntervalOptions
from arena.simulation.sampling import all_pairs_data, outcome_tensor, pair_probabilities_from_counts
from arena.simulation.simulate import (
    SEED_STRENGTHS,
    ArenaSpec,
    SimulatedCodes,
    codes_to_battles,
    simulate_adaptive,
    simulate_codes,
)

NATURAL = EloScale(scale=1.0, base=math.e, init=0.0)
"""The scale on which :func:`fit_leaderboard` reports natural-log strengths (the simulator's scale)."""


@float64
def fit_natural(battles, intervals: IntervalOptions = IntervalOptions(ci="both", n_bootstrap=500), *,
                ties: Ties = "half", style_control: bool = False, style_features: tuple[str, ...] | None = None,
                anchor: str | None = None) -> pd.DataFrame:
    """The project's leaderboard on the natural-log scale, the last model anchored at 0, in model order."""
    anchor = anchor or battles.models[-1]
    lb = fit_leaderboard(battles, intervals, ties=ties, scale=NATURAL, style_control=style_control,
                         style_features=style_features, anchor=f"{anchor}=0")
    return lb.table.set_index("model").loc[battles.models].reset_index()


@float64
def simulate_arena(spec: ArenaSpec, n: int, rng: np.random.Generator, sampling: str = "uniform") -> SimulatedCodes:
    """One arena of ``n`` battles, uniform or active pair sampling (:mod:`arena.simulation.sampling`)."""
    if sampling == "active":
        return simulate_adaptive(spec, n, rng, pair_probabilities_from_counts)
    return simulate_codes(spec, n, rng)


@partial(jax.jit, static_argnames=("ties",))
def _fit_many(x0: jax.Array, i: jax.Array, j: jax.Array, counts: jax.Array, ties: str):
    def one(c):
        data = bt.PairData(i, j, c)
        res = bt.fit(x0, data, ties)
        return res.x, bt.sandwich_covariance(res.x, data, ties), res.converged

    return jax.vmap(one)(counts)


@float64
def fit_arenas(outcomes: np.ndarray, ties: str = "half") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fit many arenas at once: ``outcomes`` (A, k, k, 3) -> x (A, k+1), sandwich cov (A, k+1, k+1), converged.

    One ``jax.vmap`` of :func:`arena.bt.likelihood.fit` and :func:`arena.bt.likelihood.sandwich_covariance`
    over arenas sharing the all-pairs layout of :func:`arena.simulation.sampling.all_pairs_data`.
    """
    k = outcomes.shape[1]
    datas = [all_pairs_data(o) for o in outcomes]
    counts = np.stack([d.counts for d in datas])
    x0 = bt.initial_x(bt.PairData(datas[0].i, datas[0].j, counts.sum(0)), k, ties)
    x, cov, ok = _fit_many(jnp.asarray(x0), jnp.asarray(datas[0].i), jnp.asarray(datas[0].j),
                           jnp.asarray(counts), ties)
    return np.asarray(x), np.asarray(cov), np.asarray(ok)


@partial(jax.jit, static_argnames=("ties",))
def _refit_many(x0: jax.Array, i: jax.Array, j: jax.Array, counts: jax.Array, ties: str):
    return jax.vmap(lambda c: bt.fit(x0, bt.PairData(i, j, c), ties).x)(counts)


@float64
def bootstrap_arenas(outcomes: np.ndarray, n_bootstrap: int, rng: np.random.Generator, *, anchor: int,
                     level: float = 0.95, ties: str = "half", chunk: int = 20_000) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap intervals for many arenas at once: (lower, upper), each (A, k), anchored.

    The same estimator as :func:`arena.bootstrap.refits.bootstrap_fits` (battles resampled with replacement =
    multinomial over cells, each replicate refitted to convergence by :func:`arena.bt.likelihood.fit`), vmapped over
    arenas x replicates instead of one arena at a time.
    """
    a, k = outcomes.shape[0], outcomes.shape[1]
    datas = [all_pairs_data(o) for o in outcomes]
    i, j = jnp.asarray(datas[0].i), jnp.asarray(datas[0].j)
    flat = np.stack([d.counts.ravel() for d in datas])  # (A, P*3)
    totals = flat.sum(axis=1)
    draws = np.stack([rng.multinomial(int(t), f / t, size=n_bootstrap) for f, t in zip(flat, totals, strict=True)])
    draws = draws.reshape(a * n_bootstrap, -1, 3).astype(np.float64)
    x0 = jnp.asarray(bt.initial_x(bt.PairData(datas[0].i, datas[0].j, flat.sum(0).reshape(-1, 3)), k, ties))
    reps = np.concatenate([np.asarray(_refit_many(x0, i, j, jnp.asarray(draws[s:s + chunk]), ties))
                           for s in range(0, len(draws), chunk)])
    theta = reps[:, :k] @ elo.elo_matrix(k, anchor).T
    lo, hi = np.quantile(theta.reshape(a, n_bootstrap, k), [(1 - level) / 2, (1 + level) / 2], axis=1)
    return lo, hi


def anchored(x: np.ndarray, cov: np.ndarray, anchor: int) -> tuple[np.ndarray, np.ndarray]:
    """Strengths minus the anchor's, and their covariance (batched over leading axes)."""
    k = x.shape[-1] - 1
    m = elo.elo_matrix(k, anchor)
    return x[..., :k] @ m.T, m @ cov[..., :k, :k] @ m.T


# ------------------------------------------------------------------------------------------ recovery


@float64
def recovery_table(strengths: Sequence[float] = SEED_STRENGTHS, n_votes: Sequence[int] = (50, 500, 5000), *,
                   n_bootstrap: int = 1000, seed: int = 0, spec: ArenaSpec | None = None) -> pd.DataFrame:
    """The seed's recovery table: per vote budget and model, true vs fitted strength with both 95% CIs."""
    spec = spec or ArenaSpec(tuple(strengths))
    truth = np.asarray(spec.strengths) - spec.strengths[-1]
    rows = []
    for n in n_votes:
        codes = simulate_codes(spec, n, np.random.default_rng([seed, n]))
        table = fit_natural(codes_to_battles(spec, codes), IntervalOptions("both", n_bootstrap=n_bootstrap, seed=seed))
        for m, row in enumerate(table.itertuples()):
            rows.append({"votes": n, "model": row.model, "true": truth[m], "fitted": row.rating,
                         "error": row.rating - truth[m],
                         "boot_lower": row.lower_bootstrap, "boot_upper": row.upper_bootstrap,
                         "boot_width": row.upper_bootstrap - row.lower_bootstrap,
                         "sandwich_width": row.upper_sandwich - row.lower_sandwich})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------ coverage


@float64
def coverage_study(strengths: Sequence[float] = SEED_STRENGTHS, n_votes: Sequence[int] = (50, 500, 5000), *,
                   n_arenas: int = 1000, n_boot_arenas: int = 200, n_bootstrap: int = 500, level: float = 0.95,
                   seed: int = 0, sampling: str = "uniform", spec: ArenaSpec | None = None) -> pd.DataFrame:
    """Fraction of ``level`` intervals (anchored at the last model) that contain the true strength.

    Sandwich: ``n_arenas`` arenas fitted in one vmapped call (:func:`fit_arenas`). Bootstrap: the first
    ``n_boot_arenas`` of them, ``n_bootstrap`` replicates each, vmapped (:func:`bootstrap_arenas`): the
    leaderboard's percentile intervals (``bootstrap``) and, for comparison, basic intervals
    (``bootstrap-basic``, the percentile interval reflected about the estimate). ``separated`` is the
    share of arenas where the MLE does not exist (Ford's condition fails; the ridge keeps it finite);
    ``mc_se`` is the Monte Carlo standard error of ``coverage`` (arenas as independent units: the models
    of one arena share its draws).
    """
    spec = spec or ArenaSpec(tuple(strengths))
    k = spec.n_models
    truth = np.asarray(spec.strengths) - spec.strengths[-1]
    z = norm.ppf(0.5 + level / 2)
    rows = []
    for n in n_votes:
        rng = np.random.default_rng([seed, n])
        arenas = [simulate_arena(spec, n, rng, sampling) for _ in range(n_arenas)]
        outcomes = np.stack([outcome_tensor(c, k) for c in arenas])
        separated = np.array([not ford_condition(o) for o in outcomes])
        x, cov, ok = fit_arenas(outcomes)
        est, cov_a = anchored(x, cov, k - 1)
        se = np.sqrt(np.clip(np.diagonal(cov_a, axis1=-2, axis2=-1), 0, None))[:, :-1]
        hit = np.abs(est[:, :-1] - truth[:-1]) <= z * se
        rows.append(_coverage_row(n, "sandwich", hit, 2 * z * se, separated))
        if n_boot_arenas:
            m = min(n_boot_arenas, n_arenas)
            lo, hi = bootstrap_arenas(outcomes[:m], n_bootstrap, rng, anchor=k - 1, level=level)
            hit_b = (lo[:, :-1] <= truth[:-1]) & (truth[:-1] <= hi[:, :-1])
            rows.append(_coverage_row(n, "bootstrap", hit_b, (hi - lo)[:, :-1], separated[:m]))
            # 'basic' bootstrap (2 x_hat - quantiles; Davison & Hinkley 1997, 5.2): reflects the MLE's bias
            b_lo, b_hi = 2 * est[:m] - hi, 2 * est[:m] - lo
            hit_basic = (b_lo[:, :-1] <= truth[:-1]) & (truth[:-1] <= b_hi[:, :-1])
            rows.append(_coverage_row(n, "bootstrap-basic", hit_basic, (hi - lo)[:, :-1], separated[:m]))
    return pd.DataFrame(rows)


def _coverage_row(n: int, method: str, hit: np.ndarray, width: np.ndarray, separated: np.ndarray) -> dict:
    ok = ~separated
    return {"votes": n, "method": method, "arenas": hit.shape[0], "coverage": hit.mean(),
            "coverage_if_mle_exists": hit[ok].mean() if ok.any() else float("nan"),
            "mc_se": float(hit.mean(axis=1).std(ddof=1) / math.sqrt(hit.shape[0])),  # arenas are the units
            "median_width": float(np.median(width)),
            "separated": separated.mean(),
            "per_model": np.round(hit.mean(axis=0), 3).tolist()}


# ------------------------------------------------------------------------------------ active vs uniform


@float64
def active_vs_uniform(strengths: Sequence[float], n_votes: int, *, n_arenas: int = 100, level: float = 0.95,
                      seed: int = 0) -> pd.DataFrame:
    """Same votes, two designs: adjacent-gap precision, error, ordering and coverage of uniform vs active.

    Columns per design: ``gap_sd`` (mean sandwich SD of the true-adjacent gaps), ``gap_rmse`` (against the
    truth), ``order_correct`` (share of arenas with the full order right), ``gap_coverage`` (share of gap
    intervals containing the true gap — honesty under adaptive sampling), ``rating_width`` (mean CI width,
    last model anchored). ``attrs["variance_ratio"]`` = uniform / active mean gap variance: how many times
    more votes uniform sampling needs for the same precision.
    """
    spec = ArenaSpec(tuple(strengths))
    k = spec.n_models
    truth = np.asarray(spec.strengths, np.float64)
    order = np.argsort(-truth, kind="stable")
    c = np.zeros((k - 1, k))
    c[np.arange(k - 1), order[:-1]], c[np.arange(k - 1), order[1:]] = 1.0, -1.0
    z = norm.ppf(0.5 + level / 2)
    rows = []
    for design in ("uniform", "active"):
        rng = np.random.default_rng([seed, n_votes])
        outcomes = np.stack([outcome_tensor(simulate_arena(spec, n_votes, rng, design), k) for _ in range(n_arenas)])
        x, cov, _ = fit_arenas(outcomes)
        theta = x[:, :k]
        gap_var = np.einsum("gk,akl,gl->ag", c, cov[:, :k, :k], c)
        gap_err = theta @ c.T - truth @ c.T
        _, cov_a = anchored(x, cov, k - 1)
        width = 2 * z * np.sqrt(np.clip(np.diagonal(cov_a, axis1=-2, axis2=-1), 0, None))[:, :-1]
        rows.append({"design": design, "votes": n_votes, "arenas": n_arenas,
                     "gap_sd": float(np.sqrt(gap_var).mean()), "gap_var": float(gap_var.mean()),
                     "gap_rmse": float(np.sqrt(np.mean(gap_err**2))),
                     "order_correct": float(np.mean(np.all(np.argsort(-theta, axis=1) == order, axis=1))),
                     "gap_coverage": float(np.mean(np.abs(gap_err) <= z * np.sqrt(gap_var))),
                     "rating_width": float(width.mean())})
    table = pd.DataFrame(rows).set_index("design")
    table.attrs["variance_ratio"] = table.at["uniform", "gap_var"] / table.at["active", "gap_var"]
    table.attrs["mse_ratio"] = (table.at["uniform", "gap_rmse"] / table.at["active", "gap_rmse"]) ** 2
    return table


# ------------------------------------------------------------------------------------------------ bias

BIAS_TOKENS: tuple[float, ...] = (450.0, 500.0, 250.0, 1100.0, 500.0)
"""Mean answer lengths for the bias study: model-03 (true 0.4) is verbose, model-02 (true 0.9) terse."""


@float64
def bias_study(strengths: Sequence[float] = SEED_STRENGTHS, n_votes: int = 20_000, *,
               position_bias: float = 0.5, length_bias: float = 1.5,
               mean_tokens: Sequence[float] = BIAS_TOKENS, seed: int = 0) -> pd.DataFrame:
    """How far biased voters move a naive BT fit, and what style control (length feature) recovers.

    Three arenas with the same truth and votes: unbiased, position bias (left answer favoured, sides
    randomised) and length bias (``length_bias`` on ``(len_a - len_b)/(len_a + len_b)``, per-model lengths
    ``mean_tokens``). Each is fitted naively and with :mod:`arena.style.fit` length control (sandwich CIs).
    One row per (scenario, fit, model): fitted, error vs truth, CI and whether it covers the truth.
    """
    base = dict(strengths=tuple(strengths), mean_tokens=tuple(mean_tokens))
    scenarios = {"unbiased": ArenaSpec(**base), "position": ArenaSpec(**base, position_bias=position_bias),
                 "length": ArenaSpec(**base, length_bias=length_bias)}
    truth = np.asarray(strengths) - strengths[-1]
    rows = []
    for name, spec in scenarios.items():
        battles = codes_to_battles(spec, simulate_codes(spec, n_votes, np.random.default_rng([seed, 17])))
        for fit_name, style in (("naive", False), ("style control", True)):
            t = fit_natural(battles, IntervalOptions("sandwich"), style_control=style,
                            style_features=("length",) if style else None)
            for m, row in enumerate(t.itertuples()):
                rows.append({"scenario": name, "fit": fit_name, "model": row.model, "true": truth[m],
                             "mean_tokens": spec.mean_tokens[m], "fitted": row.rating,
                             "error": row.rating - truth[m], "lower": row.lower, "upper": row.upper,
                             "covers": bool(row.lower <= truth[m] <= row.upper)})
    return pd.DataFrame(rows)
