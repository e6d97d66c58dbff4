"""Bootstrap refits for many models: dense per-replicate count matrices and a division-only gradient.

For ``ties="half"`` a replicate is summed up by its beat matrix ``W`` (a's wins over b plus half their
ties), formed on the host: its battle matrix is ``N = W + W^T`` and its score vector ``S = W 1`` (wins
plus half the ties per model), and ``W > 0`` is its 'beat or tied' digraph, whose strong connectivity
(Ford's condition) is checked on the device in the same pass. Writing strengths as ``p = exp(theta)``,
the gradient of the negative log-likelihood is
``g_i = p_i sum_j N_ij / (p_i + p_j) - S_i`` (Hunter 2004, Ann. Stat. 32:384, eq. 3, the MM form), so an
iteration costs one add and one division per (pair, replicate), with no per-pair exp and no scatter:
dense, fused and vectorised on CPU and GPU alike, where the sparse gather/scatter form of
:func:`arena.bootstrap.refit_chunk` is bound by XLA's serial scatter. Replicates are refitted by the same
chord-Newton steps from the full-data MLE with its Hessian inverse held fixed (Kelley 1995, 5.4).

Chosen by :func:`use_dense`: half ties and a graph dense enough that evaluating every ordered pair costs
less than the sparse form (measured: the dense form is ~8x cheaper per element on CPU).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import arena._jax  # noqa: F401  (x64 + compilation cache)
from arena import bt
from arena._jax import stored_jit

DENSE_MAX_MODELS = 4096
"""Above this a (K, K) matrix per replicate (and H^-1) is too large to be worth it."""
EXACT_F32 = 1 << 24
"""Counts below this are exact in float32: the count matrices travel and sit in float32 below it."""


def use_dense(n_models: int, n_pairs: int, ties: str) -> bool:
    """Dense refits for half ties when at least 1/8 of all model pairs met (K^2 <= 16 * pairs played)."""
    return ties == "half" and 1 < n_models <= DENSE_MAX_MODELS and n_models * n_models <= 16 * max(n_pairs, 1)


class DenseLayout(NamedTuple):
    """Where a replicate's live-cell counts go in its beat matrix ``W`` (K, K), flattened: ``W[a, b]`` is
    a's wins over b plus half their ties, so ``N = W + W^T`` (battles) and ``S = W 1`` (scores)."""

    n_models: int
    n_cells: int
    pos: np.ndarray  # flat positions a * K + b that any live cell reaches, ascending
    win: np.ndarray  # the live cell of a's wins over b there, or n_cells (a zero)
    tied: np.ndarray  # the positions (flat, a subset of pos) where a and b tied
    tie: np.ndarray  # the live cell of those ties
    dtype: type


def dense_layout(data: bt.PairData, cells: np.ndarray, n_models: int) -> DenseLayout:
    """Layout for the flat (P, 3) cells ``cells`` of ``data`` (column 0: i wins, 1: j wins, 2: tie);
    float32 beat matrices when no resampled pair total can reach 2^24 (exact integers and halves)."""
    k, n_cells = n_models, len(cells)
    pair, col = np.divmod(np.asarray(cells, np.int64), 3)
    i, j = data.i[pair].astype(np.int64), data.j[pair].astype(np.int64)
    up, down, idx = i * k + j, j * k + i, np.arange(n_cells)
    reached = np.zeros(k * k, bool)  # (np.unique is ~10x slower here)
    reached[up] = reached[down] = True
    pos = np.flatnonzero(reached)
    win = np.full(pos.size, n_cells)
    for c, where in ((0, up), (1, down)):
        win[np.searchsorted(pos, where[col == c])] = idx[col == c]
    ties = col == 2
    tied, tie = np.r_[up[ties], down[ties]], np.r_[idx[ties], idx[ties]]
    dtype = np.float32 if 2 * float(np.sum(data.counts)) < EXACT_F32 else np.float64
    return DenseLayout(k, n_cells, pos, win, tied, tie, dtype)


def beat_matrices(layout: DenseLayout, w: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Resampled live-cell counts ``w`` (R, cells) -> beat matrices ``W`` (R, K, K), written into ``out``
    (R, K * K, zero off ``layout.pos``: it may be reused) when given. ``W[r, a, b] > 0`` exactly when a
    beat or tied b in replicate r. Row by row, gathers and an ascending scatter: ~3x numpy's 2-d fancy
    indexing."""
    k, n_rep = layout.n_models, w.shape[0]
    if out is None:
        out = np.zeros((n_rep, k * k), layout.dtype)
    padded = np.empty((n_rep, layout.n_cells + 1), layout.dtype)  # last column: the absent cell's zero
    padded[:, :-1] = w
    padded[:, -1] = 0
    for r in range(n_rep):
        row, o = padded[r], out[r]
        o[layout.pos] = row[layout.win]
        if layout.tie.size:  # tied positions are distinct: the buffered += adds once each
            o[layout.tied] += 0.5 * row[layout.tie]
    return out.reshape(n_rep, k, k)


def signed_battles(layout: DenseLayout, w: np.ndarray, out: np.ndarray | None = None,
                   scratch: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Resampled live-cell counts ``w`` (R, cells) -> signed battles ``M`` (R, K, K), written into ``out``
    (R, K * K) when given, and scores ``S = W 1`` (R, K): ``|M| = N = W + W^T`` and ``M[a, b] > 0``
    exactly when a beat or tied b (``W[a, b] > 0``), so one matrix carries the refit and Ford's condition.
    ``scratch`` (R, K * K) holds W (see :func:`beat_matrices`; reusing it saves the page faults of a fresh
    one). (The transposed sum is ~6x faster in numpy than in XLA on CPU.)"""
    k, n_rep = layout.n_models, w.shape[0]
    beats = beat_matrices(layout, w, scratch)
    m = np.add(beats, np.swapaxes(beats, 1, 2), out=None if out is None else out.reshape(n_rep, k, k))
    np.copysign(m, beats - 0.25, out=m)  # beats are 0 or >= 1/2: M = -N where a never beat nor tied b
    return m, beats.sum(axis=2, dtype=np.float64)


def dense_counts(layout: DenseLayout, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Resampled live-cell counts ``w`` (R, cells) -> battles N (R, K, K) and half-tie scores S (R, K)."""
    m, s = signed_battles(layout, w)
    return np.abs(m), s


def strongly_connected(beats: jax.Array) -> jax.Array:
    """(R,) True where the digraph ``a -> b`` iff ``beats[r, a, b] > 0`` (R, K, K) is strongly connected.

    Ford's condition for the BT MLE (Ford 1957; Hunter 2004, Ann. Stat. 32:384): every model is reached
    from model 0 along the edges and reaches it. Breadth-first search from model 0 in both directions at
    once, one matrix-vector product per direction and level (``beats >= 0``, so a positive product means
    an edge from a reached model), until nothing grows: exact, and one or two levels on an arena where
    most pairs met.
    """
    k = beats.shape[1]
    first = jnp.arange(k)[None, :] == 0
    fwd = first | (beats[:, 0, :] > 0)
    bwd = first | (beats[:, :, 0] > 0)

    def body(state):
        f, b, it, _ = state
        f2 = f | (jnp.einsum("rk,rkj->rj", f.astype(beats.dtype), beats) > 0)
        b2 = b | (jnp.einsum("rj,rkj->rk", b.astype(beats.dtype), beats) > 0)
        return f2, b2, it + 1, jnp.any(f2 != f) | jnp.any(b2 != b)

    def go(state):
        f, b, it, grew = state
        return grew & (it < k) & ~(jnp.all(f) & jnp.all(b))

    f, b, _, _ = jax.lax.while_loop(go, body, (fwd, bwd, 0, jnp.bool_(True)))
    return jnp.all(f, axis=1) & jnp.all(b, axis=1)


def dense_gradient(x: jax.Array, n: jax.Array, s: jax.Array, ridge: float) -> jax.Array:
    """Half-ties gradient for x (R, K+1) from battles ``n`` (R, K, K) and scores ``s`` (R, K).

    Equal to :func:`arena.bt.gradient` per replicate; strengths are shifted by their per-replicate maximum
    before ``exp`` so none overflows (the ratio p_i / (p_i + p_j) is shift-free).
    """
    theta = x[:, :-1]
    p = jnp.exp(theta - jnp.max(theta, axis=1, keepdims=True))
    denom = jnp.sum(n / (p[:, :, None] + p[:, None, :]), axis=2, dtype=x.dtype)
    g = p * denom - s + ridge * theta
    return jnp.concatenate([g, x[:, -1:]], axis=1)


def _chord(n: jax.Array, s: jax.Array, x_hat: jax.Array, h_inv: jax.Array, ridge: float, tol: float,
           max_iter: int):
    n_rep = n.shape[0]
    x0 = jnp.broadcast_to(x_hat[None, :], (n_rep, x_hat.shape[0]))

    def body(state):
        x, it, _ = state
        step = dense_gradient(x, n, s, ridge) @ h_inv  # h_inv is symmetric
        return x - step, it + 1, jnp.max(jnp.abs(step), axis=1)

    def go(state):
        return jnp.any(state[2] >= tol) & (state[1] < max_iter)

    x, _, last = jax.lax.while_loop(go, body, (x0, 0, jnp.full(n_rep, jnp.inf)))
    return x, (last < tol) & jnp.all(jnp.isfinite(x), axis=1)


@partial(jax.jit, static_argnames=("max_iter",))
def refit_dense_chunk(n: jax.Array, s: jax.Array, x_hat: jax.Array, h_inv: jax.Array,
                      ridge: float = bt.DEFAULT_RIDGE, tol: float = 1e-9, max_iter: int = 50):
    """Chord-Newton refits of battles ``n`` (R, K, K) and scores ``s`` (R, K) (:func:`dense_counts`);
    returns x (R, K+1) and converged (R,). Same iteration and stopping rule as
    :func:`arena.bootstrap.refit_chunk` (max step below ``tol``).
    """
    return _chord(n, s, x_hat, h_inv, ridge, tol, max_iter)


@stored_jit(static_argnames=("max_iter",))
def refit_signed_chunk(m: jax.Array, s: jax.Array, x_hat: jax.Array, h_inv: jax.Array,
                       ridge: float = bt.DEFAULT_RIDGE, tol: float = 1e-9, max_iter: int = 50):
    """:func:`refit_dense_chunk` from signed battles ``m`` (R, K, K) and scores ``s`` (R, K)
    (:func:`signed_battles`), with Ford's condition per replicate: returns x (R, K+1), converged (R,)
    and strongly connected (R,)."""
    # N in float64 once per chunk: XLA's fused float32 -> float64 division loop is ~1.5x slower per step
    x, ok = _chord(jnp.abs(m).astype(x_hat.dtype), s, x_hat, h_inv, ridge, tol, max_iter)
    return x, ok, strongly_connected(jnp.maximum(m, 0))


def bytes_per_replicate(n_models: int) -> int:
    """Bytes one dense replicate needs: M on the host and the device (float32, shared on CPU), N on the
    device (float64), and temporaries."""
    return (4 + 8) * n_models * n_models + 64 * n_models
