"""Bootstrap by vmapped refits: chunked refits over resampling weights (:mod:`arena.bootstrap.weights`); what the
replicates say (percentile intervals, ranks) is :mod:`arena.bootstrap.intervals`.

Each replicate is refitted from the full-data MLE by chord-Newton steps with the full-data Hessian held
fixed (Kelley 1995, 'Iterative methods for linear and nonlinear equations', 5.4): replicates lie within
O(1/sqrt(n)) of the MLE, so a few matrix products replace a factorisation per replicate. Replicates that
do not converge (rare; e.g. a model that never lost in the resample) are refitted by full Newton; those
that still do not converge, and those whose resample breaks Ford's condition (no MLE), are flagged so the
caller can count and exclude them (:func:`usable_interval`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from arena.bootstrap import dense as refit
from arena.bootstrap.poisson import PoissonTable
from arena.bootstrap.weights import BLOCK, INT16_MAX, WeightKind, block_weights
from arena.bt import likelihood as bt
from arena.bt.diagnostics import beat_edges, replicate_separation
from arena.bt.units import ItemCellMap, ItemUnits, item_cell_matrix
from arena.jax_setup import float64

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


@float64
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


@float64
@partial(jax.jit, static_argnames=("ties",))
def newton_refit_chunk(counts: jax.Array, x_hat: jax.Array, data: bt.PairData, ties: str = "half",
                       ridge: float = bt.DEFAULT_RIDGE):
    """Full Newton refits of ``counts`` (R, P, 3), one ``vmap`` (the fallback for unsettled replicates)."""
    res = jax.vmap(lambda c: bt.fit(x_hat, data._replace(counts=c), ties, ridge))(counts)
    return res.x, res.converged


CACHE_CHUNK = 4 << 20
"""Dense refits on CPU: a chunk's float32 battles fit in this (the steps re-read them from cache: at 300
models 15-40 replicates cost ~0.8 ms each, 125 ~1.5 ms), but at least :data:`MIN_DENSE_CHUNK` replicates."""
MIN_DENSE_CHUNK = 15
"""Fewer replicates a chunk re-read H^-1 too often (1,000 models: 10-15 is fastest, 5 and 30 slower)."""


@float64
def chunk_size(n_cells: int, n_models: int, device: jax.Device | None = None, dense: bool = False) -> int:
    """Replicates per chunk from device memory: a quarter of the accelerator's, or 1 GiB on CPU (256 MiB
    for the dense form, whose chunks gain nothing from being larger, and on CPU no more than stay in cache:
    :data:`CACHE_CHUNK`)."""
    device = device or jax.devices()[0]
    budget = (1 << 28) if dense else (1 << 30)
    try:
        stats = device.memory_stats() or {}
        budget = max(budget, int(stats.get("bytes_limit", 0)) // 4)
    except Exception:  # CPU devices have no memory stats
        pass
    if dense:
        per_replicate = refit.bytes_per_replicate(n_models) + 8 * n_cells  # + the host draws
    else:
        per_replicate = 8 * (12 * n_cells + 4 * n_models)  # counts, gap, sigmoid, scatter buffers
    n = min(4000, budget // per_replicate)
    if dense and device.platform == "cpu":
        n = min(n, max(MIN_DENSE_CHUNK, CACHE_CHUNK // (4 * n_models * n_models)))
    return int(max(BLOCK, n) // BLOCK * BLOCK)


def chunk_plan(n_bootstrap: int, chunk: int, n_devices: int = 1) -> tuple[list[list[tuple[int, int]]], int]:
    """Blocks of :data:`BLOCK` replicates grouped into balanced chunks, and the padded chunk width.

    Every chunk is padded to the same width (a multiple of ``n_devices``), so a run compiles one refit
    shape and every device gets the same share.
    """
    blocks = [(b, min(BLOCK, n_bootstrap - b * BLOCK)) for b in range(math.ceil(n_bootstrap / BLOCK))]
    n_chunks = math.ceil(len(blocks) / max(1, chunk // BLOCK))
    per_chunk = math.ceil(len(blocks) / n_chunks)
    chunks = [blocks[c:c + per_chunk] for c in range(0, len(blocks), per_chunk)]
    width = math.ceil(per_chunk * BLOCK / n_devices) * n_devices
    return chunks, width


@float64
def bootstrap_fits(data: bt.PairData, x_hat: np.ndarray, h_inv: np.ndarray, *, n_bootstrap: int = 1000,
                   seed: int = 0, ties: str = "half", ridge: float = bt.DEFAULT_RIDGE,
                   weights: WeightKind = "multinomial", chunk: int | None = None, threads: int = 2,
                   device: jax.Device | None = None, devices: list[jax.Device] | None = None,
                   dense: bool | None = None, progress: Callable[[int], None] | None = None,
                   units: ItemUnits | None = None) -> Replicates:
    """Refit ``n_bootstrap`` resamples of ``data``: replicates and their convergence/separation flags.

    ``h_inv`` is the inverse of :func:`arena.bt.likelihood.conditioned_hessian` at ``x_hat``. Weight draws run in
    ``threads`` background threads, at most two chunks ahead, overlapping the JAX refits. Replicates are
    sharded over ``devices`` (default: ``[device]`` if given, else every local device); the dense refit
    of :mod:`arena.bootstrap.dense` is used where :func:`arena.bootstrap.dense.use_dense` says (``dense`` forces
    either way).
    Results depend on ``seed`` only: not on chunking, threads, devices or the refit form (to 1e-9).
    With ``units`` (:func:`arena.bt.units.item_units`) items are resampled, not battles.
    """
    devs = replicate_devices(device, devices)
    run = _ChunkRefits(data, x_hat, h_inv, seed, ties, ridge, weights, devs, units)
    run.plan(n_bootstrap, chunk, dense)
    out, flags, n_fallback = [], [], 0
    with ThreadPoolExecutor(max(1, threads)) as pool:
        pending = [run.submit(pool, c) for c in range(min(2, len(run.chunks)))]
        for c in range(len(run.chunks)):
            mats, parts = run.collect(c, *pending.pop(0))
            if c + 2 < len(run.chunks):
                pending.append(run.submit(pool, c + 2))
            n_real = sum(len(p) for p in parts)
            x, ok, connected, w_live = run.refit(mats, parts, n_real)
            del mats
            x, ok, w_live, n_bad = run.fallback(x, ok, parts, w_live)
            n_fallback += n_bad
            flags.append((ok, *run.separation(connected, parts, w_live, n_real)))
            out.append(x)
            if progress:
                progress(n_real)
    ok, sep, outside = (np.concatenate(f) for f in zip(*flags, strict=True))
    return Replicates(np.concatenate(out), n_fallback, ok, sep, outside)


class _ChunkRefits:
    """One bootstrap run: its live cells, device copies and weight tables; draws, refits and flags a chunk."""

    def __init__(self, data: bt.PairData, x_hat: np.ndarray, h_inv: np.ndarray, seed: int, ties: str,
                 ridge: float, weights: WeightKind, devs: list[jax.Device], units: ItemUnits | None) -> None:
        self.data, self.x_hat, self.seed, self.ties, self.ridge, self.weights = data, x_hat, seed, ties, ridge, weights
        self.devs, self.units = devs, units
        self.n_models = len(x_hat) - 1
        self.flat = np.asarray(data.counts).ravel()
        self.live = np.flatnonzero(self.flat)
        self.mesh = Mesh(np.array(devs), ("rep",))
        one = NamedSharding(self.mesh, PartitionSpec())  # replicated
        self.xh, self.hi = jax.device_put(np.asarray(x_hat), one), jax.device_put(np.asarray(h_inv), one)
        self.d_data = bt.PairData(*(jax.device_put(np.asarray(a), one) for a in data))
        self.table = PoissonTable(self.flat[self.live])
        self.item_map = None if units is None else item_cell_matrix(units, self.live)
        self.item_table = None if units is None else PoissonTable(np.ones(units.n_items))
        self.src, self.dst, _ = beat_edges(np.asarray(data.i), np.asarray(data.j), np.asarray(data.counts))
        self.local = threading.local()  # per thread: the signed-battle scratch, reused across blocks

    def plan(self, n_bootstrap: int, chunk: int | None, dense: bool | None) -> None:
        """Choose the refit form (dense or sparse) and split the replicates into chunks of blocks."""
        k, data = self.n_models, self.data
        self.dense = refit.use_dense(k, len(data.i), self.ties) if dense is None else dense and self.ties == "half"
        chunk = chunk or chunk_size(self.live.size, k, self.devs[0], self.dense)
        self.chunks, self.width = chunk_plan(n_bootstrap, chunk, len(self.devs))
        self.layout = refit.dense_layout(data, self.live, k) if self.dense else None
        # the dense refit checks Ford's condition itself
        self.screen = None if self.dense else _tree_screen(data, self.live)

    def block(self, b: int, n: int, mats: tuple[np.ndarray, np.ndarray] | None, row: int) -> np.ndarray:
        """Block ``b``'s ``n`` weight draws; with ``mats``, also its rows of the signed battles and scores."""
        integer = mats is not None
        if self.item_map is None:
            w = block_weights(self.flat[self.live], self.seed, b, n, self.weights, self.table, integer=integer)
        else:
            draws = block_weights(np.ones(self.units.n_items), self.seed, b, n, self.weights, self.item_table)
            w = item_weights(self.item_map, draws, integer=integer)
        if mats is not None:  # this block's rows of the chunk's signed battles and scores, in place
            scratch = vars(self.local).setdefault((n, w.dtype), np.empty((n, self.live.size + 1), w.dtype))
            mats[1][row:row + n] = refit.signed_battles(self.layout, w, mats[0][row:row + n], scratch)[1]
        return w

    def chunk_mats(self, dtype: type) -> tuple[np.ndarray, np.ndarray] | None:
        k = self.n_models
        return (_aligned((self.width, k * k), dtype), _aligned((self.width, k), np.float64)) if self.dense else None

    def _rows(self, c: int) -> np.ndarray:
        return np.cumsum([0] + [n for _, n in self.chunks[c]])

    def submit(self, pool: ThreadPoolExecutor, c: int):
        """Start drawing chunk ``c``'s blocks on ``pool``: (its matrices or None, the futures)."""
        mats = self.chunk_mats(self.layout.matrix_dtype) if self.dense else None
        return mats, [pool.submit(self.block, b, n, mats, int(r))
                      for (b, n), r in zip(self.chunks[c], self._rows(c), strict=False)]

    def collect(self, c: int, mats, futures) -> tuple[tuple[np.ndarray, np.ndarray] | None, list[np.ndarray]]:
        """Chunk ``c``'s draws; a resampled pair total past int8 (never seen) redraws it in float32."""
        try:
            return mats, [f.result() for f in futures]
        except OverflowError:
            for f in futures:
                f.exception()  # (wait: no thread still writes the int8 buffers)
            mats = self.chunk_mats(self.layout.dtype)
            return mats, [self.block(b, n, mats, int(r)) for (b, n), r in zip(self.chunks[c], self._rows(c),
                                                                               strict=False)]

    def refit(self, mats, parts: list[np.ndarray], n_real: int):
        """Refit the chunk on the devices: (x, converged, connected (dense) or None, live weights or None)."""
        k, width = self.n_models, self.width
        if self.dense:  # needs no copy of the chunk's draws: made only for a fallback or a separated one
            for m in mats if n_real < width else ():  # padding rows: copies of real ones (results dropped)
                m[n_real:] = m[np.arange(width - n_real) % n_real]
            m_d, s_d = _to_devices([mats[0].reshape(width, k, k), mats[1]], self.mesh)
            x, ok, connected = refit.refit_signed_chunk(m_d, s_d, self.xh, self.hi, self.ridge)
            w_live = None
        else:
            w_live, connected = np.concatenate(parts), None
            counts = jax.device_put(_sparse_counts(self.flat.size, self.live, _pad(w_live, width)),
                                    NamedSharding(self.mesh, PartitionSpec(None, None, "rep")))
            x, ok = refit_chunk(counts, self.xh, self.hi, self.d_data, self.ties, self.ridge)
        return np.array(x)[:n_real], np.asarray(ok)[:n_real], connected, w_live

    def fallback(self, x: np.ndarray, ok: np.ndarray, parts: list[np.ndarray], w_live: np.ndarray | None):
        """Refit the replicates that did not converge by full Newton: (x, ok, live weights, how many)."""
        if ok.all():
            return x, ok, w_live, 0
        bad = np.flatnonzero(~ok)
        # pad to a power of two: a handful of compiled shapes instead of one per count of failures
        padded = np.resize(bad, 1 << (bad.size - 1).bit_length())
        w_live = np.concatenate(parts) if w_live is None else w_live
        dev = self.devs[0]
        sub = jax.device_put(_sparse_counts(self.flat.size, self.live, w_live[padded]).transpose(2, 0, 1), dev)
        xb, okb = newton_refit_chunk(sub, jax.device_put(np.asarray(self.x_hat), dev),
                                     bt.PairData(*(jax.device_put(np.asarray(a), dev) for a in self.data)),
                                     self.ties, self.ridge)
        x[bad] = np.asarray(xb)[: bad.size]
        ok = ok.copy()
        ok[bad] = np.asarray(okb)[: bad.size]
        return x, ok, w_live, bad.size

    def separation(self, connected, parts: list[np.ndarray], w_live: np.ndarray | None, n_real: int):
        """(separated (R,), outside (R, K)): replicates whose resample breaks Ford's condition."""
        k, flat, live = self.n_models, self.flat, self.live
        if not self.dense:
            return _separation_flags(k, self.screen, self.src, self.dst, self.data, flat.size, live, w_live)
        separated = ~np.asarray(connected)[:n_real]
        if separated.any() and w_live is None:
            w_live = np.concatenate(parts)
        return separated, _outside(k, self.src, self.dst, self.data, flat.size, live, w_live, separated, n_real)


def item_weights(item_map: ItemCellMap, draws: np.ndarray, integer: bool = False) -> np.ndarray:
    """Live-cell counts (R, L) of item draws (R, C): each drawn item brings all its battles."""
    w = item_map.apply(draws)
    if integer:
        w = np.rint(w).astype(np.int16 if w.max(initial=0) <= INT16_MAX else np.int32)
    return w


def _tree_screen(data: bt.PairData, live: np.ndarray) -> np.ndarray | None:
    """Live-cell indices (3, T) of the (i-wins, j-wins, tie) cells of a spanning tree of pairs played both
    ways, the tree maximising the weaker direction's count; None when those pairs do not span all models.

    A resample in which every tree pair is still played both ways satisfies Ford's condition (the tree's
    two-way edges make the beat digraph strongly connected), so only the others need the full check.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components, minimum_spanning_tree

    c = np.asarray(data.counts)
    k = int(max(data.i.max(initial=0), data.j.max(initial=0))) + 1
    weak = np.minimum(c[:, 0] + c[:, 2], c[:, 1] + c[:, 2])
    two = np.flatnonzero(weak > 0)
    g = coo_matrix((1.0 / (1.0 + weak[two]), (data.i[two], data.j[two])), shape=(k, k)).tocsr()
    if connected_components(g, directed=False)[0] != 1:
        return None
    tree = minimum_spanning_tree(g).tocoo()
    pair_of = {(a, b): p for p, a, b in zip(two, data.i[two], data.j[two], strict=True)}
    pairs = np.array([pair_of[(min(a, b), max(a, b))] for a, b in zip(tree.row, tree.col, strict=True)], np.int64)
    cells = 3 * pairs[None, :] + np.arange(3)[:, None]
    pos = np.searchsorted(live, cells)
    present = (pos < live.size) & (live[np.minimum(pos, live.size - 1)] == cells)
    return np.where(present, pos, -1)


def _separation_flags(n_models: int, screen: np.ndarray | None, src: np.ndarray, dst: np.ndarray,
                      data: bt.PairData, n_flat: int, live: np.ndarray, w_live: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Separated (R,) and outside (R, K) per replicate (:func:`arena.bt.diagnostics.replicate_separation`),
    the full check run only on replicates that fail the spanning-tree screen."""
    n_rep = w_live.shape[0]
    check = np.ones(n_rep, bool)
    if screen is not None:
        val = np.where(screen[None] >= 0, w_live[:, np.maximum(screen, 0)], 0.0)  # (R, 3, T)
        check = ~((val[:, 0] + val[:, 2] > 0) & (val[:, 1] + val[:, 2] > 0)).all(axis=1)
    separated, outside = np.zeros(n_rep, bool), np.zeros((n_rep, n_models), bool)
    if check.any():
        w3 = _sparse_counts(n_flat, live, w_live[check])
        separated[check], outside[check] = replicate_separation(n_models, src, dst,
                                                                beat_edges(data.i, data.j, w3)[2])
    return separated, outside


def _outside(n_models: int, src: np.ndarray, dst: np.ndarray, data: bt.PairData, n_flat: int, live: np.ndarray,
             w_live: np.ndarray | None, separated: np.ndarray, n_rep: int) -> np.ndarray:
    """(R, K) models outside each ``separated`` replicate's largest strongly connected group (Tarjan's
    components for those replicates only; :func:`arena.bt.diagnostics.replicate_separation`)."""
    outside = np.zeros((n_rep, n_models), bool)
    if separated.any():
        w3 = _sparse_counts(n_flat, live, w_live[separated])
        outside[separated] = replicate_separation(n_models, src, dst, beat_edges(data.i, data.j, w3)[2])[1]
    return outside


def _aligned(shape: tuple[int, ...], dtype: type, align: int = 64) -> np.ndarray:
    """An uninitialised array whose data start on an ``align``-byte boundary (XLA's CPU alignment)."""
    n_bytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.empty(n_bytes + align, np.uint8)
    off = (-raw.ctypes.data) % align
    return raw[off:off + n_bytes].view(dtype).reshape(shape)


def _to_devices(arrays: list[np.ndarray], mesh: Mesh) -> list[jax.Array]:
    """Host arrays sharded over ``mesh`` on their leading axis; on a single CPU device, aligned arrays are
    handed over without a copy (DLPack; ~2 ms per replicate at K=1000). The caller must not change them."""
    devices = mesh.devices.ravel()
    if devices.size == 1 and devices[0].platform == "cpu":
        return [jax.dlpack.from_dlpack(a) for a in arrays]
    return jax.device_put(arrays, NamedSharding(mesh, PartitionSpec("rep")))


def _pad(a: np.ndarray, width: int) -> np.ndarray:
    """Pad the replicate axis (first) to ``width`` with copies of the first rows (results dropped)."""
    return a if a.shape[0] == width else a[np.arange(width) % a.shape[0]]


def _sparse_counts(n_flat: int, live: np.ndarray, w_live: np.ndarray) -> np.ndarray:
    """Live-cell draws (R, L) -> pair counts (P, 3, R), replicates trailing (the sparse refit's layout)."""
    w = np.zeros((n_flat, w_live.shape[0]))
    w[live] = w_live.T
    return w.reshape(-1, 3, w.shape[1])


@float64
def replicate_devices(device: jax.Device | None = None, devices: list[jax.Device] | None = None
                      ) -> list[jax.Device]:
    """Devices to shard replicates over: ``devices``, else ``[device]``, else all local devices."""
    if devices:
        return list(devices)
    return [device] if device is not None else jax.local_devices()
