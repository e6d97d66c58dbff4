"""Fast bootstrap refits for style control (ties counted half): battles in pair blocks, chord-Newton steps.

Style features are continuous per battle, so battles do not compress into (pair, outcome) cells. Instead
each battle is oriented to its unordered pair ``i < j`` (a battle won by ``j`` with features ``f`` is the
battle won by ``i`` with features ``-f``) and the battles of each pair are laid out in blocks of ``M``
slots (the last block of a pair padded with zero weight). In a block ``theta_i - theta_j`` is one number,
so a gradient pass needs no per-battle gather or scatter: a broadcast, a sum over the block and a small
matrix product for the feature coefficients; per-block sums go to the models through the pairs.

Each replicate is refitted from the full-data fit ``z_hat`` by chord-Newton steps ``z <- z - H^-1 g(z)``
with the full-data Hessian held fixed (Kelley 1995, 'Iterative methods for linear and nonlinear
equations', 5.4), replicates trailing so the steps are matrix products. The gradient at ``z_hat + delta``
is split as ``sum w (s_hat - y) x`` (linear in the weights ``w``, one float64 pass) plus
``sum w (sigmoid(d_hat + e) - s_hat) x`` with ``e = x . delta``, computed as
``2 s (1 - s) t / (1 + (2 s - 1) t)``, ``t = tanh(e / 2)``, ``s = s_hat`` (exact algebra; every factor is
relatively accurate near ``e = 0``): a small correction (``|e|`` ~ 0.05), so its float32 rounding moves
the root by ~1e-9 (Higham 2002, 'Accuracy and stability of numerical algorithms', 3.1, for the error of
the sums, which are finished in float64 per block). Once the float32 steps are below ``3 tol``, float64
passes of the same formula finish, and a replicate counts as converged only when a float64 step is below
``tol``: the criterion of :func:`arena.style.fit.style_refit_chunk`.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from arena.bootstrap.poisson import BUCKETS, PoissonTable, inversion_table
from arena.bootstrap.weights import draw_weights
from arena.bt.diagnostics import replicate_separation
from arena.jax_setup import float64

SLOTS_PER_CHUNK = 8192
"""Battle slots per step of the inner loop: the (R, slots) temporaries stay in cache."""
F32_PASSES = 12
"""At most this many passes (the linear one included) in float32 before the float64 finish."""


class Blocks(NamedTuple):
    """Battles laid out by oriented pair: ``slot`` (S,) battle index per slot (-1 = padding, S = B * M),
    ``pair`` (B,) pair of each block, ``i``, ``j`` (P,) models of each pair (``i < j``), ``features``
    (F, B, M) oriented features, ``y`` (B, M) oriented score (1 = i won, 0 = j won, 1/2 tie)."""

    slot: np.ndarray
    pair: np.ndarray
    i: np.ndarray
    j: np.ndarray
    features: np.ndarray
    y: np.ndarray


def block_size(pair_sizes: np.ndarray, n: int) -> int:
    """Largest block of 8..64 slots whose padding adds at most 15% slots (8 when none does)."""
    for m in (64, 32, 16):
        if np.sum(-(-pair_sizes // m) * m) <= 1.15 * n:
            return m
    return 8


def make_blocks(a: np.ndarray, b: np.ndarray, features: np.ndarray, outcome: np.ndarray) -> Blocks:
    """The block layout of battles (model codes ``a``, ``b``, features (N, F), outcome 0 a, 1 b, 2 tie)."""
    a, b, outcome = (np.asarray(v, np.int64) for v in (a, b, outcome))
    n, n_feat = features.shape
    flip = a > b
    lo, hi = np.where(flip, b, a), np.where(flip, a, b)
    o = np.where(flip & (outcome < 2), 1 - outcome, outcome)  # 0: i won, 1: j won, 2: tie
    k = int(max(a.max(initial=0), b.max(initial=0))) + 1
    order = np.lexsort((o, lo * k + hi))
    key = (lo * k + hi)[order]
    pairs, pair_first, pair_size = np.unique(key, return_index=True, return_counts=True)
    m = block_size(pair_size, n)
    n_blocks = -(-pair_size // m)
    chunk_blocks = max(1, SLOTS_PER_CHUNK // m)
    total = -(-int(n_blocks.sum()) // chunk_blocks) * chunk_blocks  # whole chunks; extra blocks are empty
    block_pair = np.zeros(total, np.int32)
    block_pair[:n_blocks.sum()] = np.repeat(np.arange(pairs.size), n_blocks)
    block_first = np.concatenate([[0], np.cumsum(n_blocks)[:-1]]) * m  # first slot of each pair
    rank = np.arange(n) - np.repeat(pair_first, pair_size)  # position of each sorted battle in its pair
    where = np.repeat(block_first, pair_size) + rank
    slot = np.full(total * m, -1, np.int64)
    slot[where] = order
    sign = np.where(flip[order], -1.0, 1.0)
    feat = np.zeros((n_feat, total * m))
    feat[:, where] = (features[order] * sign[:, None]).T
    y = np.zeros(total * m)
    y[where] = np.array([1.0, 0.0, 0.5])[o[order]]
    return Blocks(slot, block_pair, (pairs // k).astype(np.int32), (pairs % k).astype(np.int32),
                  feat.reshape(n_feat, total, m), y.reshape(total, m))


# --------------------------------------------------------------------------------------------- weights


class WeightDrawer:
    """:func:`arena.style.fit.battle_weights` (the same random stream, value for value) as small integers,
    placed straight into the block layout (R, S).

    The Poisson(1) draws use :class:`arena.bootstrap.poisson.PoissonTable`'s inversion table directly (one mean: no
    per-cell offsets) and the multinomial's correction reuses one cumulative table, as
    :func:`arena.bootstrap.weights.draw_weights` does for ``np.ones(m)``.
    """

    def __init__(self, n: int, clusters: np.ndarray | None, slot: np.ndarray):
        self.m = n if clusters is None else int(clusters.max()) + 1
        self.table = PoissonTable(np.ones(self.m))
        self.lut, self.cdf = inversion_table(1)
        self.p_cum = np.cumsum(np.ones(self.m)) / self.m
        battle = np.where(slot >= 0, slot, 0)
        self.take = battle if clusters is None else np.asarray(clusters)[battle]
        self.pad = np.flatnonzero(slot < 0)

    def _poisson(self, rng: np.random.Generator) -> np.ndarray:
        """``PoissonTable(np.ones(m)).draw(1, rng)[0]`` as int16."""
        b = rng.integers(0, BUCKETS, (1, self.m), dtype=np.uint16)[0]
        k = self.lut[b]
        amb = np.flatnonzero(k < 0)
        if amb.size:
            res = (-1 - k[amb]).astype(np.int64)
            u = (b[amb] + rng.random(amb.size)) / BUCKETS
            size = self.cdf.size
            while True:
                more = (self.cdf[np.minimum(res, size - 1)] <= u) & (res < size - 1)
                if not more.any():
                    break
                res += more
            k[amb] = res
        return k

    def draw(self, seed: int, replicate: int, kind: str) -> np.ndarray:
        """Weights of one replicate per slot, uint8 (int32 where a count exceeds 255)."""
        rng = np.random.default_rng([seed, replicate, 7])
        if kind == "multinomial":
            w = self._poisson(rng)
            extra = int(w.sum(dtype=np.int64)) - self.m
            if extra > 0:  # as draw_weights: drop `extra` battles chosen uniformly without replacement
                pos = rng.choice(self.m + extra, extra, replace=False)
                np.subtract.at(w, np.searchsorted(np.cumsum(w, dtype=np.int32), pos, side="right"), 1)
            elif extra < 0:
                cells = np.searchsorted(self.p_cum, rng.random(-extra), side="right")
                np.add.at(w, np.minimum(cells, w.size - 1), 1)
        else:
            w = draw_weights(np.ones(self.m), 1, rng, kind, self.table)[0].astype(np.int32)
        w = w.astype(np.uint8) if w.max(initial=0) <= 255 else w.astype(np.int32)
        out = w[self.take]
        out[self.pad] = 0
        return out


def battle_weights_of(w_slots: np.ndarray, slot: np.ndarray, n: int) -> np.ndarray:
    """Slot weights (S,) back to per-battle weights (N,) in the battles' order."""
    out = np.zeros(n)
    real = slot >= 0
    out[slot[real]] = w_slots[real]
    return out


# ---------------------------------------------------------------------------------------------- refits


class Fixed(NamedTuple):
    """Device arrays of the full-data fit in block layout: features (F, B, M), 2 s_hat - 1 and
    2 s_hat (1 - s_hat) (B, M) in float64 and float32, ``resid`` = s_hat - y, ``beats`` (2, B, M): 1 where i won
    or tied, where j won or tied (padding 0), block pairs, pair models."""

    features: jax.Array
    features32: jax.Array
    s64: jax.Array
    q64: jax.Array
    s32: jax.Array
    q32: jax.Array
    resid: jax.Array
    beats: jax.Array
    pair: jax.Array
    i: jax.Array
    j: jax.Array


@float64
def fixed_arrays(blocks: Blocks, z_hat: np.ndarray, n_models: int, put=jnp.asarray) -> Fixed:
    """:class:`Fixed` for ``z_hat = [theta, beta, psi]`` (ties counted half)."""
    n_feat = blocks.features.shape[0]
    theta, beta = z_hat[:n_models], z_hat[n_models:n_models + n_feat]
    d = (theta[blocks.i] - theta[blocks.j])[blocks.pair][:, None] + np.tensordot(beta, blocks.features, 1)
    s = 1 / (1 + np.exp(-d))
    real = (blocks.slot >= 0).reshape(blocks.y.shape)
    resid = np.where(real, s - blocks.y, 0.0)
    s, q = np.where(real, 2 * s - 1, 0.0), np.where(real, 2 * s * (1 - s), 0.0)  # as the pass uses them
    f32 = np.float32
    beats = np.stack([real & (blocks.y >= 0.5), real & (blocks.y <= 0.5)]).astype(f32)
    return Fixed(put(blocks.features), put(blocks.features.astype(f32)), put(s), put(q), put(s.astype(f32)),
                 put(q.astype(f32)), put(resid), put(beats), put(blocks.pair), put(blocks.i), put(blocks.j))


def _tanh(x: jax.Array) -> jax.Array:
    """tanh, by its Taylor series to x^7 where ``|x| < 0.1`` (truncation below 3e-10 relative; XLA's float32
    tanh and expm1 on CPU are biased by about -1e-7 relative there, which would shift the refits' roots by
    ~5e-9), by :func:`jax.numpy.tanh` elsewhere."""
    x2 = x * x
    series = x * (1 + x2 * (-1 / 3 + x2 * (2 / 15 + x2 * (-17 / 315))))
    return jnp.where(jnp.abs(x) < 0.1, series, jnp.tanh(x))


def _pass(w: jax.Array, fx: Fixed, dth: jax.Array | None, dbeta: jax.Array | None, kind: str):
    """One pass over the battles for weights ``w`` (chunks, cb, M, R): per-block sums (B, R) and feature
    sums (F, R) of ``w * r`` with r = s_hat - y (``kind='linear'``), or of the sigmoid's change at ``e``."""
    n_chunks, cb, m, n_rep = w.shape
    n_feat = fx.features.shape[0]
    dt = jnp.float32 if kind == "f32" else jnp.float64
    feats = fx.features32 if kind == "f32" else fx.features
    s_hat, q_hat = (fx.s32, fx.q32) if kind == "f32" else (fx.s64, fx.q64)

    def chunked(a):
        return a.reshape((a.shape[0], n_chunks, cb, m) if a.ndim == 3 else (n_chunks, cb, m))

    def body(gb, xs):
        wc, fc, pc, sc, qc, rc, bc = xs
        wc = wc.astype(dt)
        extra = ()
        if kind == "linear":
            val = wc * rc[:, :, None]
            extra = ((bc[:, :, :, None] * wc.astype(jnp.float32)[None]).sum(axis=2),)  # exact: small integers
        else:
            e = dth[pc][:, None, :]
            for f in range(n_feat):
                e = e + fc[f][:, :, None] * dbeta[f]
            t = _tanh(0.5 * e)
            val = wc * (qc[:, :, None] * t / (1 + sc[:, :, None] * t))
        gb = gb + (fc.reshape(n_feat, cb * m) @ val.reshape(cb * m, n_rep)).astype(jnp.float64)
        return gb, (val.sum(axis=1).astype(jnp.float64),) + extra

    xs = (w, jnp.moveaxis(chunked(feats), 0, 1), fx.pair.reshape(n_chunks, cb), chunked(s_hat),
          chunked(q_hat), chunked(fx.resid), jnp.moveaxis(chunked(fx.beats), 0, 1))
    gb, out = jax.lax.scan(body, jnp.zeros((n_feat, n_rep)), xs)
    if kind == "linear":  # battles per block where i (j) won or tied: the beat-or-tied digraph's edges
        beat = jnp.moveaxis(out[1], 1, 0).reshape(2, n_chunks * cb, n_rep)
        return out[0].reshape(n_chunks * cb, n_rep), gb, beat
    return out[0].reshape(n_chunks * cb, n_rep), gb


def _gradient_part(w: jax.Array, fx: Fixed, delta: jax.Array | None, n_models: int, kind: str) -> jax.Array:
    """The pass's share of the gradient, (size, R): strengths through the pairs, then beta, psi 0."""
    n_feat, n_rep = fx.features.shape[0], w.shape[-1]
    dth = dbeta = None
    if delta is not None:
        th = delta[:n_models]
        dth = (th[fx.i] - th[fx.j]).astype(jnp.float32 if kind == "f32" else jnp.float64)
        dbeta = delta[n_models:n_models + n_feat].astype(dth.dtype)
    blk, gb, *beat = _pass(w, fx, dth, dbeta, kind)
    per_pair = jax.ops.segment_sum(blk, fx.pair, fx.i.shape[0], indices_are_sorted=True)  # (P, R)
    g_theta = jnp.zeros((n_models, n_rep)).at[fx.i].add(per_pair).at[fx.j].add(-per_pair)
    g = jnp.concatenate([g_theta, gb, jnp.zeros((1, n_rep))])
    if beat:  # (2, P, R): battles where i, j won or tied
        return g, jax.vmap(lambda b: jax.ops.segment_sum(b, fx.pair, fx.i.shape[0], indices_are_sorted=True))(
            beat[0])
    return g


@float64
@partial(jax.jit, static_argnames=("n_models", "max_iter"))
def refit_blocks(w: jax.Array, fx: Fixed, z_hat: jax.Array, h_inv: jax.Array, n_models: int,
                 ridge: float, tol: float = 1e-9, max_iter: int = 50):
    """Chord-Newton refits for slot weights ``w`` (R, S) (any integer or float dtype; S = B * M slots):
    (R, size), converged (R,), the beat-or-tied battle counts (2, P, R) of each pair (i over j, j over i)
    and the passes taken (linear + float32, float64).

    A float64 linear pass gives the gradient at ``z_hat``; float32 correction passes run while any step
    is at least ``3 tol`` (their roots are within ~3e-10 of the float64 ones; at most :data:`F32_PASSES` passes);
    float64 passes then run until every step is below ``tol`` (or ``max_iter`` passes in all), usually one.
    Converged: the last float64 step is below ``tol`` and every value finite.
    """
    n_rep = w.shape[0]
    size = z_hat.shape[0]
    m = fx.features.shape[2]
    cb = max(1, SLOTS_PER_CHUNK // m)
    w = w.T.reshape(-1, cb, m, n_rep)  # replicates trailing: whole rows per slot
    ridge_mask = jnp.zeros(size).at[:n_models].set(ridge)[:, None]
    base, beat = _gradient_part(w, fx, None, n_models, "linear")  # sum w (s_hat - y) x

    def grad(delta, kind):
        z = z_hat[:, None] + delta
        g = base + _gradient_part(w, fx, delta, n_models, kind) + ridge_mask * z
        return g.at[-1].set(z[-1])  # psi is pinned by its prior (ties counted half)

    step = h_inv @ (base + ridge_mask * z_hat[:, None]).at[-1].set(z_hat[-1])
    delta0 = -step
    last0 = jnp.max(jnp.abs(step), axis=0)

    def stage(kind, threshold, cap):
        def body(state):
            delta, it, _ = state
            step = h_inv @ grad(delta, kind)
            return delta - step, it + 1, jnp.max(jnp.abs(step), axis=0)

        return lambda state: jax.lax.while_loop(
            lambda s: jnp.any(s[2] >= threshold) & (s[1] < cap), body, state)

    delta, it32, _ = stage("f32", 3 * tol, F32_PASSES)((delta0, 1, last0))
    delta, it, last = stage("f64", tol, max_iter)((delta, it32, jnp.full(n_rep, jnp.inf)))
    z = z_hat[:, None] + delta
    return z.T, (last < tol) & jnp.all(jnp.isfinite(z), axis=0), beat, jnp.stack([it32, it - it32])


def replicate_flags(beat: np.ndarray, blocks: Blocks, n_models: int) -> tuple[np.ndarray, np.ndarray]:
    """Separated (R,) and outside (R, K) from the beat-or-tied counts (2, P, R) of :func:`refit_blocks`
    (:func:`arena.bt.diagnostics.replicate_separation` on the pairs' digraph, as :func:`beat_edges` lays it out)."""
    src = np.concatenate([blocks.i, blocks.j]).astype(np.int64)
    dst = np.concatenate([blocks.j, blocks.i]).astype(np.int64)
    return replicate_separation(n_models, src, dst, np.concatenate([beat[0], beat[1]]))


@float64
def bootstrap_blocks(blocks: Blocks, fx: Fixed, z_hat: jax.Array, h_inv: jax.Array, n_models: int, *,
                     n: int, n_bootstrap: int, seed: int, kind: str, ridge: float, clusters: np.ndarray | None,
                     chunk: int, put, fallback: Callable[[np.ndarray], tuple[np.ndarray, bool]],
                     progress: Callable[[int], None] | None = None):
    """Refit ``n_bootstrap`` resamples in chunks of ``chunk`` replicates (the last padded with copies of its
    first rows, so one shape compiles), weights drawn in two threads, two chunks ahead. Replicates the chord steps leave
    unconverged go to ``fallback(battle weights)`` (full Newton). Returns replicates (R, size),
    converged, separated, outside."""
    drawer = WeightDrawer(n, clusters, blocks.slot)
    starts = list(range(0, n_bootstrap, chunk))
    out, flags, running = [], [], []

    def finish(w: np.ndarray, n_real: int, result) -> None:
        zr, ok, beat, _ = result
        zr, ok, beat = np.array(zr)[:n_real], np.array(ok)[:n_real], np.asarray(beat)[:, :, :n_real]
        for r in np.flatnonzero(~ok):  # rare: refit by full Newton with those weights
            zr[r], ok[r] = fallback(battle_weights_of(w[r], blocks.slot, n))
        out.append(zr)
        flags.append((ok, *replicate_flags(beat, blocks, n_models)))
        if progress:
            progress(n_real)

    with ThreadPoolExecutor(2) as pool:
        def submit(c0: int):
            return [pool.submit(drawer.draw, seed, r, kind) for r in range(c0, min(c0 + chunk, n_bootstrap))]

        pending = [submit(c0) for c0 in starts[:2]]
        for c, _ in enumerate(starts):
            rows = [f.result() for f in pending.pop(0)]
            if c + 2 < len(starts):
                pending.append(submit(starts[c + 2]))
            n_real = len(rows)
            dtype = np.result_type(*(r.dtype for r in rows))
            w = np.stack([rows[r % n_real] for r in range(chunk)]).astype(dtype, copy=False)
            # dispatch is asynchronous: up to two chunks refit at once (one per core) while weights are drawn
            running.append((w, n_real, refit_blocks(put(w), fx, z_hat, h_inv, n_models, ridge)))
            if len(running) > 1:
                finish(*running.pop(0))
        while running:
            finish(*running.pop(0))
    ok, sep, outside = (np.concatenate(f) for f in zip(*flags, strict=True))
    return np.concatenate(out), ok, sep, outside
