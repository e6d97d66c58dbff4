"""Bootstrap by vmapped refits: resampling weights over unique cells, chunked refits, percentile CIs, ranks.

Resampling battles with replacement is the same as drawing multinomial counts over the unique
(pair, outcome) cells, so a replicate costs one draw per cell, not per battle (Efron & Tibshirani 1993,
ch. 6). The multinomial is drawn exactly as Poisson counts corrected to the fixed total (a Poisson sample
conditioned on its total is multinomial; removing or adding uniformly chosen battles keeps it so), which
is about twice as fast as conditional binomials. Poisson weights (Hanley & MacGibbon 2006) are an option.

Each replicate is refitted from the full-data MLE by chord-Newton steps with the full-data Hessian held
fixed (Kelley 1995, 'Iterative methods for linear and nonlinear equations', 5.4): replicates lie within
O(1/sqrt(n)) of the MLE, so a few matrix products replace a factorisation per replicate. Replicates that
do not converge (rare; e.g. a model that never lost in the resample) are refitted by full Newton; those
that still do not converge, and those whose resample breaks Ford's condition (no MLE), are flagged so the
caller can count and exclude them (:func:`usable_interval`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import arena  # noqa: F401
from arena import bt
from arena.diagnostics import beat_edges, replicate_separation

WeightKind = Literal["multinomial", "poisson"]
BLOCK = 5
"""Replicates per random stream: results depend on ``seed`` only, never on chunk size or threads."""


# ------------------------------------------------------------------------------------------ weights


def draw_weights(counts: np.ndarray, n_replicates: int, rng: np.random.Generator,
                 kind: WeightKind = "multinomial") -> np.ndarray:
    """Resampled counts, shape (n_replicates, C), for cell counts ``counts`` (C,).

    ``multinomial``: total fixed at ``round(sum(counts))``; ``poisson``: independent Poisson(count) cells.
    """
    counts = np.asarray(counts, np.float64)
    lam = np.broadcast_to(counts, (n_replicates, counts.size))
    draws = rng.poisson(lam).astype(np.float64)
    if kind == "poisson":
        return draws
    if kind != "multinomial":
        raise ValueError(f"unknown weight kind {kind!r}; use 'multinomial' or 'poisson'")
    total = int(round(counts.sum()))
    p_cum = np.cumsum(counts) / counts.sum()
    for r in range(n_replicates):
        row = draws[r]
        extra = int(row.sum()) - total
        if extra > 0:  # drop `extra` battles chosen uniformly without replacement
            pos = rng.choice(int(row.sum()), extra, replace=False)
            cells = np.searchsorted(np.cumsum(row), pos, side="right")
            row -= np.bincount(cells, minlength=row.size)
        elif extra < 0:  # add -extra battles drawn iid from the empirical distribution
            cells = np.searchsorted(p_cum, rng.random(-extra), side="right")
            row += np.bincount(np.minimum(cells, row.size - 1), minlength=row.size)
    return draws


def _block_weights(counts: np.ndarray, seed: int, block: int, n: int, kind: WeightKind) -> np.ndarray:
    rng = np.random.default_rng([seed, block])
    return draw_weights(counts, n, rng, kind)


# ------------------------------------------------------------------------------------------- refits


class Replicates(NamedTuple):
    """Bootstrap refits ``x`` (R, K+1) with their flags: how many needed the full-Newton fallback,
    ``converged`` (R,), ``separated`` (R,) (Ford's condition fails in the resample) and ``outside`` (R, K)
    (models outside that resample's largest strongly connected group)."""

    x: np.ndarray
    n_fallback: int
    converged: np.ndarray
    separated: np.ndarray
    outside: np.ndarray


@partial(jax.jit, static_argnames=("ties", "max_iter"))
def refit_chunk(counts: jax.Array, x_hat: jax.Array, h_inv: jax.Array, data: bt.PairData, ties: str = "half",
                ridge: float = bt.DEFAULT_RIDGE, tol: float = 1e-9, max_iter: int = 50):
    """Refit all replicates of ``counts`` (P, 3, R) at once by chord-Newton steps ``x <- x - H^-1 grad(x)``.

    The replicate axis is trailing so the per-pair gathers and scatters move whole rows (the batched form
    of a ``vmap`` over replicates). Returns x (R, K+1) and converged (R,).
    """
    n_rep = counts.shape[-1]
    rep = data._replace(counts=jnp.transpose(counts, (0, 2, 1)))
    x0 = jnp.broadcast_to(x_hat[:, None], (x_hat.shape[0], n_rep))
    if ties == "half":  # sufficient statistics once, not per iteration
        score, total = counts[:, 0] + 0.5 * counts[:, 2], jnp.sum(counts, axis=1)

        def grad(x):
            return bt.half_gradient(x, data.i, data.j, score, total, ridge)
    else:
        def grad(x):
            return bt.gradient(x, rep, ties, ridge)

    def body(state):
        x, it, _ = state
        step = h_inv @ grad(x)
        return x - step, it + 1, jnp.max(jnp.abs(step), axis=0)

    def go(state):
        return jnp.any(state[2] >= tol) & (state[1] < max_iter)

    x, _, last = jax.lax.while_loop(go, body, (x0, 0, jnp.full(n_rep, jnp.inf)))
    return x.T, (last < tol) & jnp.all(jnp.isfinite(x), axis=0)


@partial(jax.jit, static_argnames=("ties",))
def newton_refit_chunk(counts: jax.Array, x_hat: jax.Array, data: bt.PairData, ties: str = "half",
                       ridge: float = bt.DEFAULT_RIDGE):
    """Full Newton refits of ``counts`` (R, P, 3), one ``vmap`` (the fallback for unsettled replicates)."""
    res = jax.vmap(lambda c: bt.fit(x_hat, data._replace(counts=c), ties, ridge))(counts)
    return res.x, res.converged


def chunk_size(n_cells: int, n_models: int, device: jax.Device | None = None) -> int:
    """Replicates per chunk from device memory: a quarter of the accelerator's, or 1 GiB on CPU."""
    device = device or jax.devices()[0]
    budget = 1 << 30
    try:
        stats = device.memory_stats() or {}
        budget = max(budget, int(stats.get("bytes_limit", 0)) // 4)
    except Exception:  # CPU devices have no memory stats
        pass
    per_replicate = 8 * (12 * n_cells + 4 * n_models)  # counts, gap, sigmoid, scatter buffers
    return int(max(BLOCK, min(4000, budget // per_replicate)) // BLOCK * BLOCK)


def bootstrap_fits(data: bt.PairData, x_hat: np.ndarray, h_inv: np.ndarray, *, n_bootstrap: int = 1000,
                   seed: int = 0, ties: str = "half", ridge: float = bt.DEFAULT_RIDGE,
                   weights: WeightKind = "multinomial", chunk: int | None = None, threads: int = 2,
                   device: jax.Device | None = None,
                   progress: Callable[[int], None] | None = None) -> Replicates:
    """Refit ``n_bootstrap`` resamples of ``data``: replicates and their convergence/separation flags.

    ``h_inv`` is the inverse of :func:`arena.bt.conditioned_hessian` at ``x_hat``. Weight draws run in
    ``threads`` background threads, at most two chunks ahead, overlapping the JAX refits.
    """
    n_models = len(x_hat) - 1
    flat = np.asarray(data.counts).ravel()
    live = np.flatnonzero(flat)
    chunk = chunk or chunk_size(live.size, n_models, device)
    per_chunk = max(1, chunk // BLOCK)
    blocks = [(b, min(BLOCK, n_bootstrap - b * BLOCK)) for b in range(math.ceil(n_bootstrap / BLOCK))]
    chunks = [blocks[c:c + per_chunk] for c in range(0, len(blocks), per_chunk)]
    put = partial(jax.device_put, device=device) if device is not None else jnp.asarray
    d_data = bt.PairData(put(data.i), put(data.j), put(np.asarray(data.counts)))
    xh, hi = put(np.asarray(x_hat)), put(np.asarray(h_inv))
    out, n_fallback, flags = [], 0, []
    src, dst, _ = beat_edges(np.asarray(data.i), np.asarray(data.j), np.asarray(data.counts))
    with ThreadPoolExecutor(max(1, threads)) as pool:
        def submit(c: int):
            return [pool.submit(_block_weights, flat[live], seed, b, n, weights) for b, n in chunks[c]]

        pending = [submit(c) for c in range(min(2, len(chunks)))]
        for c in range(len(chunks)):
            w_live = np.concatenate([f.result() for f in pending.pop(0)])
            if c + 2 < len(chunks):
                pending.append(submit(c + 2))
            w = np.zeros((flat.size, w_live.shape[0]))
            w[live] = w_live.T
            counts = put(w.reshape(-1, 3, w.shape[1]))
            x, ok = refit_chunk(counts, xh, hi, d_data, ties, ridge)
            x, ok = np.array(x), np.asarray(ok)
            if not ok.all():
                bad = np.flatnonzero(~ok)
                # pad to a power of two: a handful of compiled shapes instead of one per count of failures
                padded = np.resize(bad, 1 << (bad.size - 1).bit_length())
                xb, okb = newton_refit_chunk(jnp.transpose(counts[:, :, padded], (2, 0, 1)), xh, d_data, ties, ridge)
                x[bad] = np.asarray(xb)[: bad.size]
                ok = ok.copy()
                ok[bad] = np.asarray(okb)[: bad.size]
                n_fallback += bad.size
            w3 = w.reshape(-1, 3, w.shape[1])
            flags.append((ok, *replicate_separation(n_models, src, dst, beat_edges(data.i, data.j, w3)[2])))
            out.append(x)
            if progress:
                progress(x.shape[0])
    ok, sep, outside = (np.concatenate(f) for f in zip(*flags, strict=True))
    return Replicates(np.concatenate(out), n_fallback, ok, sep, outside)


# -------------------------------------------------------------------------------- intervals and ranks


def percentile_interval(samples: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval per column of ``samples`` (R, K) (Efron & Tibshirani 1993, 13.3)."""
    alpha = (1 - level) / 2
    lo, hi = np.quantile(samples, [alpha, 1 - alpha], axis=0)
    return lo, hi


def rank_from_intervals(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Chatbot Arena's rank: 1 + number of models whose lower bound exceeds this model's upper bound."""
    lower, upper = np.asarray(lower), np.asarray(upper)
    return 1 + (lower[None, :] > upper[:, None]).sum(axis=1)


def replicate_ranks(samples: np.ndarray) -> np.ndarray:
    """Rank of each model in each replicate (1 = best; ties share the better rank), shape (R, K)."""
    samples = np.asarray(samples)
    ordered = np.sort(samples, axis=1)
    k = samples.shape[1]
    # 1 + number strictly better = k + 1 - (number <= value), row by row (no scipy import on the CLI path)
    return np.stack([k + 1 - np.searchsorted(o, s, side="right") for o, s in zip(ordered, samples, strict=True)])


def rank_distribution(samples: np.ndarray) -> np.ndarray:
    """P(rank = r) per model: (K, K) matrix, row = model, column r-1 = rank r, from bootstrap replicates.

    Rank uncertainty by resampling (Hall & Miller 2009, 'Using the bootstrap to quantify the authority of
    an empirical ranking', Ann. Stat. 37:3929)."""
    ranks = replicate_ranks(samples)
    k = ranks.shape[1]
    dist = np.stack([np.bincount(ranks[:, m] - 1, minlength=k) for m in range(k)])
    return dist / ranks.shape[0]


def usable_replicates(converged: np.ndarray | None, separated: np.ndarray | None,
                      ridge: float = bt.DEFAULT_RIDGE) -> np.ndarray | slice:
    """Replicates the intervals use: converged, and with an MLE, unless a ridge prior (> the default
    ridge) was asked for, whose fits exist anyway."""
    if converged is None or separated is None:
        return slice(None)
    return converged & (~separated | (ridge > bt.DEFAULT_RIDGE))


def separation_sides(theta: np.ndarray, outside: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(above, below) masks (R, K): models outside a separated replicate's main group, on the side of it
    where the ridge put them (their MLE gap to the main group is +infinity or -infinity there)."""
    above, below = np.zeros(outside.shape, bool), np.zeros(outside.shape, bool)
    for r in np.flatnonzero(outside.any(axis=1)):
        ref = np.median(theta[r, ~outside[r]])
        above[r] = outside[r] & (theta[r] > ref)
        below[r] = outside[r] & (theta[r] <= ref)
    return above, below


def usable_interval(samples: np.ndarray, usable: np.ndarray, above: np.ndarray | None = None,
                    below: np.ndarray | None = None, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval over the ``usable`` replicates, with a side made infinite where it is not known.

    Excluded replicates are not ignored silently: where more than ``(1 - level) / 2`` of *all* replicates
    put a model above (``above``) or below (``below``) the rest with an infinite gap, the upper (lower)
    percentile of the complete set is infinite, so that bound is reported as +inf (-inf). With fewer
    than two usable replicates every bound is infinite. ``usable`` is (R,) or one mask per model (R, K).
    """
    k, n = samples.shape[1], samples.shape[0]
    if usable.ndim == 2:  # a mask per model: column by column
        lo, hi = np.full(k, -np.inf), np.full(k, np.inf)
        for m in np.flatnonzero(usable.sum(axis=0) >= 2):
            lo[m], hi[m] = (v[0] for v in percentile_interval(samples[usable[:, m], m:m + 1], level))
    elif usable.sum() < 2:
        return np.full(k, -np.inf), np.full(k, np.inf)
    else:
        lo, hi = percentile_interval(samples[usable], level)
    tail = (1 - level) / 2 * n
    if above is not None:
        hi = np.where(above.sum(axis=0) > tail, np.inf, hi)
    if below is not None:
        lo = np.where(below.sum(axis=0) > tail, -np.inf, lo)
    return lo, hi
