"""Bootstrap refits for many models: dense per-replicate count matrices and a division-only gradient.

For ``ties="half"`` a replicate is summed up by its beat matrix ``W`` (a's wins over b plus half their
ties), formed on the host: its battle matrix is ``N = W + W^T`` and its score vector ``S = W 1`` (wins
plus half the ties per model), and ``W > 0`` is its 'beat or tied' digraph, whose strong connectivity
(Ford's condition) is checked on the device in the same pass. Writing strengths as ``p = exp(theta)``,
the gradient of the negative log-likelihood is
``g_i = p_i sum_j N_ij / (p_i + p_j) - S_i`` (Hunter 2004, Ann. Stat. 32:384, eq. 3, the MM form), so an
iteration costs one add and one division per (pair, replicate), with no per-pair exp and no scatter:
dense, fused and vectorised on CPU and GPU alike, where the sparse gather/scatter form of
:func:`arena.bootstrap.refits.refit_chunk` is bound by XLA's serial scatter. Replicates are refitted by the same
chord-Newton steps from the full-data MLE with its Hessian inverse held fixed (Kelley 1995, 5.4): float32
steps first (the counts are exact in float32), float64 steps to the same stopping rule after them.

Chosen by :func:`use_dense`: half ties and a graph dense enough that evaluating every ordered pair costs
less than the sparse form (measured: the dense form is ~8x cheaper per element on CPU).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from arena.bt import likelihood as bt
from arena.jax_setup import float64, stored_jit

DENSE_MAX_MODELS = 4096
"""Above this a (K, K) matrix per replicate (and H^-1) is too large to be worth it."""
SPARSE_SCORES_FROM = 1 << 16
"""Layouts with more live cells sum replicate scores by a scipy CSR product (:func:`replicate_scores`)."""
GATHER_MAX_MODELS = 2048
"""Up to this many models a battle matrix is written by one gather through :attr:`DenseLayout.gather` (8 bytes a
position: 8 MiB at 1,000 models), a third cheaper than two scatters, the transposed one striding (measured at
1,000 models); above, by the scatters.
"""
INT8_PAIR_TOTAL = 63
"""Signed battles travel as int8 (a quarter of float32's memory traffic, in the refit's ~11 passes too: ~12% of
its time at 1,000 models) when no pair met more than this often: a resampled pair total then passes 127 with
probability below 1e-12 (Poisson tail), and a block where one does raises OverflowError (rebuilt in float32)."""
EXACT_F32 = 1 << 24
"""Counts below this are exact in float32: the battle matrices travel and sit in float32 when every resampled
pair total stays below it (fewer battles in all), the score sums when twice the battles do (their halves)."""


def use_dense(n_models: int, n_pairs: int, ties: str) -> bool:
    """Dense refits for half ties when at least 1/8 of all model pairs met (K^2 <= 16 * pairs played)."""
    return ties == "half" and n_models <= DENSE_MAX_MODELS and bt.dense_pairs(n_models, n_pairs)


class DenseLayout(NamedTuple):
    """Where a replicate's live-cell counts go: per pair met (i < j) its live cells of i's wins, j's wins and
    ties (``cells`` (3, P), n_cells where a cell is absent: a zero), its flat positions ``up = i K + j`` and
    ``down = j K + i`` in the (K, K) battle matrix, the positions no pair reaches (``zero``), and the
    scores' terms (``score_model``, ``score_cell``, ``score_weight``): a model's wins plus half its ties,
    ``S = W 1``; ``score`` is the same sum as a scipy CSR matrix for large layouts (:func:`replicate_scores`);
    ``gather``, for matrices up to :data:`GATHER_MAX_MODELS` models, maps every position of the battle matrix to
    its pair's value (up, then down) or to a trailing zero, so a replicate is written in one sequential pass."""

    n_models: int
    n_cells: int
    cells: np.ndarray
    up: np.ndarray
    down: np.ndarray
    zero: np.ndarray
    score_model: np.ndarray
    score_cell: np.ndarray
    score_weight: np.ndarray
    score: object  # scipy.sparse.csr_matrix (K, cells) or None
    dtype: type
    gather: np.ndarray | None  # (K * K,) intp: position -> index into [up values, down values, 0], or None
    matrix_dtype: type  # of the signed battles: int8 where pair totals are small (:data:`INT8_PAIR_TOTAL`)


def dense_layout(data: bt.PairData, cells: np.ndarray, n_models: int) -> DenseLayout:
    """Layout for the flat (P, 3) cells ``cells`` (ascending) of ``data`` (column 0: i wins, 1: j wins, 2: tie);
    float32 matrices when no resampled pair total can reach 2^24 (a pair has at most the resample's battles:
    exact integers), float32 score sums when no score can (exact halves), float64 otherwise."""
    k, n_cells = n_models, len(cells)
    pair, col = np.divmod(np.asarray(cells, np.int64), 3)
    met = pair[np.r_[True, pair[1:] != pair[:-1]]] if n_cells else pair  # unique pairs (sorted: no hashing)
    where = np.full((3, len(data.i)), n_cells)
    where[col, pair] = np.arange(n_cells)
    i, j = data.i[met].astype(np.int64), data.j[met].astype(np.int64)
    up, down = i * k + j, j * k + i
    reached = np.zeros(k * k, bool)
    reached[up] = reached[down] = True
    n_battles = float(np.sum(data.counts))
    # the Poisson weights' total, as arena.bootstrap.poisson bounds a draw
    most = n_battles + 12 * np.sqrt(n_battles) + 20
    dtype = np.float32 if most < EXACT_F32 else np.float64
    score_dtype = np.float32 if 2 * most < EXACT_F32 else np.float64
    ties = col == 2
    who = np.where(col == 1, data.j[pair], data.i[pair])  # the winner, or i for a tie (j added below)
    rows = np.r_[who, data.j[pair][ties]]
    vals = np.r_[np.where(ties, 0.5, 1.0), np.full(ties.sum(), 0.5)]
    cols = np.r_[np.arange(n_cells), np.flatnonzero(ties)]
    score = None
    if n_cells > SPARSE_SCORES_FROM:
        from scipy.sparse import csr_matrix

        score = csr_matrix((vals.astype(score_dtype), (rows, cols)), shape=(k, n_cells))
    gather = None
    if k <= GATHER_MAX_MODELS:
        gather = np.full(k * k, 2 * len(met), np.intp)
        gather[up], gather[down] = np.arange(len(met)), len(met) + np.arange(len(met))
    small = dtype == np.float32 and float(np.max(data.counts.sum(axis=1), initial=0)) <= INT8_PAIR_TOTAL
    return DenseLayout(k, n_cells, where[:, met], up, down, np.flatnonzero(~reached), rows, cols, vals, score,
                       dtype, gather, np.int8 if small else dtype)


def replicate_scores(layout: DenseLayout, row: np.ndarray) -> np.ndarray:
    """``S = W 1`` (K,) for one replicate's live-cell counts ``row`` (cells,): exact (integers and halves
    below 2^24, see :func:`dense_layout`). A CSR product for large layouts (~3.5x ``np.bincount`` at 1M
    cells); ``np.bincount`` below, where it is cheap and spares the CLI scipy.sparse's import (~0.2 s)."""
    if layout.score is not None:
        return layout.score @ row
    return np.bincount(layout.score_model, row[layout.score_cell] * layout.score_weight, layout.n_models)


def signed_battles(layout: DenseLayout, w: np.ndarray, out: np.ndarray | None = None,
                   scratch: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Resampled live-cell counts ``w`` (R, cells) (integers, any dtype: int16 draws are read as they are)
    -> signed battles ``M`` (R, K, K), written into ``out`` (R, K * K) when given, and scores ``S = W 1``
    (R, K), ``W[a, b]`` being a's wins over b plus half their ties: ``|M| = N = W + W^T`` and
    ``M[a, b] > 0`` exactly when a beat or tied b (``W[a, b] > 0``), so one matrix carries the refit and
    Ford's condition. Pair values from one gather per cell kind, then every element of ``out`` written once
    (:attr:`DenseLayout.gather`, else a scatter per direction). ``M`` has ``out``'s dtype, else the layout's
    ``matrix_dtype``: int8 raises OverflowError for a pair total past 127. ``scratch`` (R, cells + 1) of
    ``w``'s dtype may be passed to reuse."""
    k, n_rep, n = layout.n_models, w.shape[0], layout.n_cells
    out = np.empty((n_rep, k * k), layout.matrix_dtype) if out is None else out.reshape(n_rep, k * k)
    padded = np.empty((n_rep, n + 1), w.dtype) if scratch is None else scratch[:n_rep]
    padded[:, :-1] = w
    padded[:, -1] = 0  # the absent cell's zero
    ci, cj, ct = layout.cells
    n_pairs = ci.size
    values = np.empty(2 * n_pairs + 1, layout.dtype)  # up values, down values, the unreached positions' 0
    values[-1] = 0
    up, down = values[:n_pairs], values[n_pairs:-1]
    total = np.empty(n_pairs, layout.dtype)
    small = np.empty(values.size, out.dtype) if out.dtype != layout.dtype else None
    scores = np.empty((n_rep, k))
    for r in range(n_rep):
        row, o = padded[r], out[r]
        scores[r] = replicate_scores(layout, row[:-1])
        a, b, t = row[ci], row[cj], row[ct]
        np.add(a, t, out=up, dtype=layout.dtype)  # a beat or tied b: a + t > 0 (exact: integers below 2^24)
        np.add(b, t, out=down, dtype=layout.dtype)
        np.add(up, b, out=total)
        up -= 0.25
        down -= 0.25
        np.copysign(total, up, out=up)
        np.copysign(total, down, out=down)
        source = values
        if small is not None:
            if total.max(initial=0) > np.iinfo(small.dtype).max:
                raise OverflowError(f"a resampled pair total of {total.max():.0f} does not fit {small.dtype}")
            source = small
            np.copyto(small, values, casting="unsafe")  # integers (the sign of a zero is not needed)
        if layout.gather is not None:
            np.take(source, layout.gather, out=o, mode="clip")  # (clip: 'raise' buffers ``out``)
        else:
            n_p = n_pairs
            o[layout.up], o[layout.down], o[layout.zero] = source[:n_p], source[n_p:2 * n_p], 0
    return out.reshape(n_rep, k, k), scores


def dense_counts(layout: DenseLayout, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Resampled live-cell counts ``w`` (R, cells) -> battles N (R, K, K) and half-tie scores S (R, K)."""
    m, s = signed_battles(layout, w)
    return np.abs(m), s


@float64
def strongly_connected(beats: jax.Array) -> jax.Array:
    """(R,) True where the digraph ``a -> b`` iff ``beats[r, a, b] > 0`` (R, K, K) is strongly connected.

    Ford's condition for the BT MLE (Ford 1957; Hunter 2004, Ann. Stat. 32:384): every model is reached
    from model 0 along the edges and reaches it. Breadth-first search from model 0 in both directions at
    once, one pass over ``beats`` per direction and level (a fused any-reduction: signed battles work
    as they are), until nothing grows: exact, and one or two levels on an arena where most pairs met.
    """
    k = beats.shape[1]
    first = jnp.arange(k)[None, :] == 0
    fwd = first | (beats[:, 0, :] > 0)
    bwd = first | (beats[:, :, 0] > 0)

    def body(state):
        f, b, it, _ = state
        edges, f, b = jax.lax.optimization_barrier((beats, f, b))  # (not hoisted: see _steps)
        f2 = f | jnp.any(f[:, :, None] & (edges > 0), axis=1)
        b2 = b | jnp.any((edges > 0) & b[:, None, :], axis=2)
        return f2, b2, it + 1, jnp.any(f2 != f) | jnp.any(b2 != b)

    def go(state):
        f, b, it, grew = state
        return grew & (it < k) & ~(jnp.all(f) & jnp.all(b))

    f, b, _, _ = jax.lax.while_loop(go, body, (fwd, bwd, 0, jnp.bool_(True)))
    return jnp.all(f, axis=1) & jnp.all(b, axis=1)


@float64
def dense_gradient(x: jax.Array, n: jax.Array, s: jax.Array, ridge: float) -> jax.Array:
    """Half-ties gradient for x (R, K+1) from battles ``n`` (R, K, K) and scores ``s`` (R, K).

    Equal to :func:`arena.bt.likelihood.gradient` per replicate; strengths are shifted by their per-replicate maximum
    before ``exp`` so none overflows (the ratio p_i / (p_i + p_j) is shift-free).
    """
    theta = x[:, :-1]
    p = jnp.exp(theta - jnp.max(theta, axis=1, keepdims=True))
    # |n|: signed battles (:func:`signed_battles`) are read as they are, the sign dropped in the fused loop
    denom = jnp.sum(jnp.abs(n) / (p[:, :, None] + p[:, None, :]), axis=2, dtype=x.dtype)
    g = p * denom - s + ridge * theta
    return jnp.concatenate([g, x[:, -1:]], axis=1)


COARSE_STEP = 1e-5
"""The float32 start stops once every step is below this (float32 gradients settle ~1e-6 in theta)."""
COARSE_ITER = 8
"""At most this many float32 steps: the float64 steps decide convergence whatever they left."""


def _steps(n: jax.Array, s: jax.Array, x0: jax.Array, h_inv: jax.Array, ridge: float, tol: float,
           max_iter: int):
    """Chord steps ``x <- x - grad(x) H^-1`` (in ``x0``'s dtype) until every step is below ``tol``."""
    def body(state):
        x, it, _ = state
        # tied to x so XLA does not hoist |n| (and its float64 copy) out of the loop: a fresh (R, K, K)
        # buffer per call costs more in page faults than the fused conversion costs per step
        n_here, x = jax.lax.optimization_barrier((n, x))
        step = dense_gradient(x, n_here, s, ridge) @ h_inv  # h_inv is symmetric
        return x - step, it + 1, jnp.max(jnp.abs(step), axis=1)

    def go(state):
        return jnp.any(state[2] >= tol) & (state[1] < max_iter)

    x, _, last = jax.lax.while_loop(go, body, (x0, 0, jnp.full(x0.shape[0], jnp.inf, x0.dtype)))
    return x, last


def _chord(n: jax.Array, s: jax.Array, x_hat: jax.Array, h_inv: jax.Array, ridge: float, tol: float,
           max_iter: int, coarse: jax.Array | None = None):
    """Chord-Newton refits from ``x_hat``; with float32 battles ``coarse`` (R, K, K), float32 steps first
    (half the memory traffic, twice the vector width) and float64 steps from where they stopped, so the
    answer and the stopping rule are the float64 ones (mixed-precision refinement, as in style_refit)."""
    x = jnp.broadcast_to(x_hat[None, :], (n.shape[0], x_hat.shape[0]))
    if coarse is not None:
        f32 = jnp.float32
        x32, _ = _steps(coarse, s.astype(f32), x.astype(f32), h_inv.astype(f32), ridge, COARSE_STEP, COARSE_ITER)
        x32 = x32.astype(x.dtype)
        # float32 rounding moves the strengths' mean, a direction the float64 steps barely act on (only the
        # ridge pins it): put it back where the float64 steps keep it, x_hat's
        drift = jnp.mean(x32[:, :-1], axis=1, keepdims=True) - jnp.mean(x_hat[:-1])
        x32 = x32.at[:, :-1].add(-drift)
        # a replicate the float32 steps threw off (overflow on a separated resample) restarts from x_hat
        x = jnp.where(jnp.all(jnp.isfinite(x32), axis=1, keepdims=True), x32, x)
    x, last = _steps(n, s, x, h_inv, ridge, tol, max_iter)
    return x, (last < tol) & jnp.all(jnp.isfinite(x), axis=1)


@float64
@partial(jax.jit, static_argnames=("max_iter",))
def refit_dense_chunk(n: jax.Array, s: jax.Array, x_hat: jax.Array, h_inv: jax.Array,
                      ridge: float = bt.DEFAULT_RIDGE, tol: float = 1e-9, max_iter: int = 50):
    """Chord-Newton refits of battles ``n`` (R, K, K) and scores ``s`` (R, K) (:func:`dense_counts`);
    returns x (R, K+1) and converged (R,). Same iteration and stopping rule as
    :func:`arena.bootstrap.refits.refit_chunk` (max step below ``tol``).
    """
    return _chord(n, s, x_hat, h_inv, ridge, tol, max_iter)


@float64
@stored_jit(static_argnames=("max_iter",))
def refit_signed_chunk(m: jax.Array, s: jax.Array, x_hat: jax.Array, h_inv: jax.Array,
                       ridge: float = bt.DEFAULT_RIDGE, tol: float = 1e-9, max_iter: int = 50):
    """:func:`refit_dense_chunk` from signed battles ``m`` (R, K, K) and scores ``s`` (R, K)
    (:func:`signed_battles`), with Ford's condition per replicate: returns x (R, K+1), converged (R,)
    and strongly connected (R,)."""
    # the steps read M itself (float32 or int8, exact; its sign dropped in the fused loop): no N copy is made, the
    # float64 steps convert on the fly (cheaper than a float64 copy when the float32 steps leave only a few)
    coarse = m if m.dtype in (jnp.float32, jnp.int8) and x_hat.dtype == jnp.float64 else None
    x, ok = _chord(m, s, x_hat, h_inv, ridge, tol, max_iter, coarse)
    return x, ok, strongly_connected(m)


def bytes_per_replicate(n_models: int) -> int:
    """Bytes one dense replicate needs: M on the host and the device (float32, shared on CPU) and 8 bytes a
    pair of temporaries (the budget the chunk sizes were measured with; N is no longer copied)."""
    return (4 + 8) * n_models * n_models + 64 * n_models
