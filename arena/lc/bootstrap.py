"""One complete LC fit under instruction weights, and its bootstrap: every replicate refits everything.

A replicate resamples instructions with replacement (multinomial counts, paired across models and gamed rows).
Counts used as row weights give exactly the fit to the resampled data set: the length sd is the resampled
rows' sd, and the instruction ridge is scaled by the count (``c`` copies of an instruction, each with its
own ``gamma`` and ridge, share one optimum). So the length standardisation, the joint fit (instruction
difficulty and per-model slopes), the prior centre when it is data-driven, and the per-model GLMs are all
refitted, warm-started at the full-data fit and vmapped over replicates.
Reference: Efron & Tibshirani 1993, ch. 6 (nonparametric bootstrap); Dubois et al. 2024 (the GLM).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from arena.jax_setup import float64
from arena.lc.fit import (
    LCData,
    LCPenalty,
    Prior,
    chord_difficulty,
    difficulty_tolerance,
    fit_all_models,
    lc_grid,
    solve_difficulty,
    with_baseline_row,
)

Array = jax.Array


class LCHyper(NamedTuple):
    """Fixed settings of a fit: ridge on ``gamma``, gamed weight, stage-2 ``centre``/``strength`` (centre[1]
    NaN = the median joint-fit slope of the same data)."""

    instruction: Array
    gamed_weight: Array
    centre: Array
    strength: Array


class LCStart(NamedTuple):
    """Starting point: joint ``[theta; beta]`` (2 x (models + 1): the last of each is the baseline's own row,
    see :func:`arena.lc.fit.with_baseline_row`), ``gamma`` (instructions), stage-2 ``params``."""

    joint: Array
    gamma: Array
    params: Array


@float64
def hyper_from_penalty(penalty: LCPenalty) -> LCHyper:
    centre = np.nan if penalty.length_centre is None else penalty.length_centre
    return LCHyper(jnp.asarray(penalty.instruction, float), jnp.asarray(penalty.gamed_weight, float),
                   jnp.array([0.0, centre, penalty.difficulty_centre]),
                   jnp.array([penalty.theta, penalty.length, penalty.difficulty], dtype=float))


@float64
def stage2_prior(hyper: LCHyper, joint_beta: Array) -> Prior:
    """The stage-2 ridge; a NaN length centre becomes the median per-model slope of the joint fit."""
    beta0 = jnp.where(jnp.isnan(hyper.centre[1]), jnp.median(joint_beta), hyper.centre[1])
    return Prior(hyper.centre.at[1].set(beta0), hyper.strength)


@float64
def cold_start(n_models: int, n_instr: int, hyper: LCHyper, gamma: Array | None = None) -> LCStart:
    centre = jnp.nan_to_num(hyper.centre, nan=1.0)
    return LCStart(jnp.zeros(2 * (n_models + 1)), jnp.zeros(n_instr) if gamma is None else jnp.asarray(gamma, float),
                   jnp.tile(centre, (n_models, 1)))


@float64
def fit_lc(data: LCData, gamed: LCData, instr_weight: Array, hyper: LCHyper, start: LCStart,
           fixed_gamma: bool = False, n_iter: int = 25, warm: bool = False) -> dict[str, Array]:
    """Both stages under instruction weights (ones = the data; counts = a bootstrap replicate).

    ``warm``: ``start`` is near the optimum (a bootstrap warm start), so the joint fit takes chord-Newton
    steps, refactored twice (:func:`arena.lc.fit.chord_difficulty`, 3 rounds of 3; rounds of 6 diverged on
    some resamples of AlpacaEval's results folder), instead of damped Newton; ``joint_ok`` says if that converged.

    The joint fit also sees the baseline judged against itself (:func:`arena.lc.fit.with_baseline_row`).
    Returns ``lc``, ``raw``, ``params`` (models), ``grad_norm`` (stage 2, per model), ``joint`` (theta; beta,
    baseline row included), ``joint_beta`` (the models' joint slopes), ``gamma``, ``beta0`` (the prior centre
    used) and ``joint_ok`` (stage 1 converged).
    """
    n = data.y.shape[0]
    w = data.mask * instr_weight[None, :]
    grid = lc_grid(data, w)
    joint_grid = with_baseline_row(grid, instr_weight)
    gamed_grid = lc_grid(gamed, gamed.mask * instr_weight[None, :])
    ridge = hyper.instruction * jnp.where(instr_weight > 0, instr_weight, 1.0)
    if warm:
        a, gamma, gnorm = chord_difficulty(joint_grid, ridge, start.joint, start.gamma, fixed_gamma, 3, 3)
    else:
        a, gamma, gnorm = solve_difficulty(joint_grid, ridge, start.joint, start.gamma, fixed_gamma)
    joint_beta = a[n + 1:2 * n + 1]
    prior = stage2_prior(hyper, joint_beta)
    res = fit_all_models(grid, w, gamma, gamed_grid, hyper.gamed_weight, prior, start.params, n_iter,
                         damped=not warm)
    return {**res, "joint": a, "joint_beta": joint_beta, "gamma": gamma, "beta0": prior.centre[1],
            "joint_ok": gnorm < difficulty_tolerance(joint_grid)}


fit_lc_jit = float64(jax.jit(fit_lc, static_argnames=("fixed_gamma", "n_iter", "warm")))


@float64
def bootstrap_counts(key: Array, n_bootstrap: int, n_instr: int) -> Array:
    """Multinomial instruction counts, (n_bootstrap, n_instr): resampling instructions with replacement."""
    return jax.vmap(lambda r: jnp.bincount(r, length=n_instr))(bootstrap_indices(key, n_bootstrap, n_instr)
                                                                ).astype(jnp.float64)


@float64
def bootstrap_indices(key: Array, n_bootstrap: int, n_instr: int) -> Array:
    """The resampled instruction positions behind :func:`bootstrap_counts` (same key, same replicates)."""
    return jax.random.randint(key, (n_bootstrap, n_instr), 0, n_instr)


@float64
def bootstrap_lc(data: LCData, gamed: LCData, hyper: LCHyper, start: LCStart, n_bootstrap: int, seed: int = 0,
                 fixed_gamma: bool = False, chunk: int = 20, n_iter: int = 4) -> dict:
    """Refit everything on ``n_bootstrap`` instruction resamples (paired across models), vmapped in chunks.

    Warm starts at the full-data fit ``start``: the joint fit takes 9 chord-Newton steps and the per-model
    GLMs ``n_iter`` full Newton steps, no line search (both reach machine precision on AlpacaEval-sized data);
    replicates whose gradients are still large are refitted with damped Newton and 25 steps, one by one
    (:func:`refit_each`, ``n_fallback``).
    ``n_unconverged`` counts replicates still not converged after that (excluded by the caller).
    Returns ``lc``, ``raw`` (n_bootstrap, models), ``converged`` (n_bootstrap,), and the two counts.
    """
    counts = bootstrap_counts(jax.random.PRNGKey(seed), n_bootstrap, data.y.shape[1])
    width = resampled_width(counts)
    out = _run_chunks(data, gamed, hyper, start, counts, chunk, fixed_gamma, n_iter, True, width)
    bad = np.flatnonzero(~out["converged"])
    if bad.size:
        redo = refit_each(data, gamed, hyper, start, counts[bad], fixed_gamma, width)
        out = {k: v.copy() for k, v in out.items()}
        for k, v in redo.items():
            out[k][bad] = v
    return {**out, "n_fallback": int(bad.size), "n_unconverged": int((~out["converged"]).sum())}


def refit_each(data: LCData, gamed: LCData, hyper: LCHyper, start: LCStart, counts: Array,
               fixed_gamma: bool, width: int | None = None) -> dict[str, np.ndarray]:
    """The fallback: damped Newton (25 stage-2 steps) on each resample alone, one compiled program of one
    replicate (``width`` columns, default enough for all of ``counts``; see :func:`resampled_columns`) for any
    number of them. (Before, one chunk of exactly that many: a new program for every count, and a vmapped
    damped Newton runs as long as its slowest replicate.)"""
    width = resampled_width(counts) if width is None else width
    outs = [_run_chunks(data, gamed, hyper, start, counts[i:i + 1], 1, fixed_gamma, 25, False, width)
            for i in range(counts.shape[0])]
    return {k: np.concatenate([o[k] for o in outs]) for k in outs[0]}


def _run_chunks(data: LCData, gamed: LCData, hyper: LCHyper, start: LCStart, counts: Array, chunk: int,
                fixed_gamma: bool, n_iter: int, warm: bool, width: int | None = None) -> dict[str, np.ndarray]:
    """Replicates in chunks of ``chunk``, each on ``width`` columns (default: enough for all of ``counts``)."""
    n = counts.shape[0]
    chunk = min(chunk, n)
    n_chunks = -(-n // chunk)
    counts = jnp.concatenate([counts, jnp.ones((n_chunks * chunk - n, counts.shape[1]))])
    out = _bootstrap_chunks(data, gamed, hyper, start, counts.reshape(n_chunks, chunk, -1), fixed_gamma, n_iter,
                            warm, resampled_width(counts) if width is None else width)
    return {k: np.asarray(v).reshape(n_chunks * chunk, *v.shape[2:])[:n] for k, v in out.items()}


def resampled_width(counts: Array, step: int = 32) -> int:
    """Columns enough for every replicate's resampled instructions (most distinct in one replicate, rounded up to
    ``step``; at most all). A resample of n instructions holds about 63% of them once or more (1 - 1/e)."""
    most = int(np.max(np.count_nonzero(np.asarray(counts), axis=1)))
    return min(counts.shape[1], -(-most // step) * step)


def resampled_columns(data: LCData, gamed: LCData, start: LCStart, counts: Array,
                      width: int) -> tuple[LCData, LCData, LCStart, Array]:
    """One replicate on its resampled instructions only (``width`` columns, the rest padding at weight 0).

    Exact: an instruction drawn 0 times has weight 0 in every sum, and its ``gamma`` (ridge only) is 0, so it
    changes no estimate; dropping it saves about a third of every pass over the rows.
    """
    drawn = counts > 0
    idx = jnp.nonzero(drawn, size=width, fill_value=0)[0]
    weight = jnp.where(jnp.arange(width) < drawn.sum(), counts[idx], 0.0)
    return (LCData(*(x[:, idx] for x in data)), LCData(*(x[:, idx] for x in gamed)),
            LCStart(start.joint, start.gamma[idx], start.params), weight)


@partial(jax.jit, static_argnames=("fixed_gamma", "n_iter", "warm", "width"))
def _bootstrap_chunks(data: LCData, gamed: LCData, hyper: LCHyper, start: LCStart, counts: Array,
                      fixed_gamma: bool, n_iter: int, warm: bool, width: int) -> dict[str, Array]:
    def rep(c: Array) -> dict[str, Array]:
        sub, sub_gamed, sub_start, weight = resampled_columns(data, gamed, start, c, width)
        res = fit_lc(sub, sub_gamed, weight, hyper, sub_start, fixed_gamma, n_iter, warm)
        return {"lc": res["lc"], "raw": res["raw"],
                "converged": res["joint_ok"] & (jnp.max(res["grad_norm"]) < 1e-6)}

    return jax.lax.map(jax.vmap(rep), counts)
