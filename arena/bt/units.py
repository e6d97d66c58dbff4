"""Sampling units: the battle, or the item (question id x unordered model pair) when an item repeats.

Votes on one item share its prompt and its two answers, so they are correlated (several voters on one
pair: the app's overlap, LLMFAO's ~4 crowd votes a pair); treating them as independent makes intervals too
narrow. With items as the unit the sandwich's meat sums each item's score before the outer product
(cluster-robust covariance: Liang & Zeger 1986, Biometrika 73:13; Cameron & Miller 2015, J. Human Resources
50:317, with the G / (G - 1) factor) and the bootstrap resamples items with replacement (Davison & Hinkley
1997, 'Bootstrap methods', 3.8). The same unit as the PPI path (:mod:`arena.ppi.board`).
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from arena.bt import likelihood as bt
from arena.io.counts import A_WINS
from arena.jax_setup import stored_jit

Unit = Literal["item", "battle"]
UNITS: tuple[str, ...] = ("item", "battle")
ITEM_COLUMNS: tuple[str, ...] = ("question_id", "item_id")
"""Battle columns that name the item (prompt) a battle was judged on, in order of preference."""


class ItemUnits(NamedTuple):
    """Items of a fit: ``pair`` (C,) the :class:`arena.bt.likelihood.PairData` row each item's battles fall in,
    ``counts`` (C, 3) their (i wins, j wins, tie) counts, ``battle_item`` (N,) each battle's item code,
    and the item ``column`` used."""

    pair: np.ndarray
    counts: np.ndarray
    battle_item: np.ndarray
    column: str

    @property
    def n_items(self) -> int:
        return len(self.pair)

    def describe(self) -> str:
        n = float(self.counts.sum())
        return (f"item ({self.column} x model pair): {self.n_items:,} items, {n:,.0f} battles, up to "
                f"{self.counts.sum(axis=1).max():,.0f} on one item")


def item_column(df: pd.DataFrame) -> str | None:
    """The first of :data:`ITEM_COLUMNS` the battles have with at least one value."""
    return next((c for c in ITEM_COLUMNS if c in df and df[c].notna().any()), None)


def item_units(df: pd.DataFrame, data: bt.PairData, n_models: int) -> ItemUnits | None:
    """The items of battles ``df`` (validated: categorical model codes, winner) over ``data`` (their
    :func:`arena.bt.likelihood.pair_data`), or None when no item holds two battles (then the unit is the battle).
    A battle without an item id is an item of its own."""
    column = item_column(df)
    if column is None:
        return None
    a = df["model_a"].cat.codes.to_numpy(np.int64)
    b = df["model_b"].cat.codes.to_numpy(np.int64)
    o = df["winner"].cat.codes.to_numpy(np.int64)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    q = pd.factorize(df[column].astype("string"), use_na_sentinel=True)[0].astype(np.int64)
    q = np.where(q < 0, q.max(initial=0) + 1 + np.arange(len(q)), q)  # no id: an item of its own
    k = max(n_models, 1)
    codes, keys = pd.factorize(q * (k * k) + lo * k + hi)  # one int64 key per (item id, pair): a hash, no sort
    if np.bincount(codes).max(initial=0) <= 1:
        return None
    col = np.where(o >= 2, 2, np.where((o == A_WINS) == (a == lo), 0, 1))
    counts = np.zeros((len(keys), 3))
    np.add.at(counts, (codes, col), 1.0)
    pair = np.searchsorted(np.asarray(data.i, np.int64) * k + np.asarray(data.j), np.asarray(keys) % (k * k))
    return ItemUnits(pair.astype(np.int32), counts, codes, column)


def item_score_outer(x: jax.Array, data: bt.PairData, pair: jax.Array, counts: jax.Array,
                     ties: str = "half") -> jax.Array:
    """``sum_items s_c s_c^T``, ``s_c`` an item's summed score (every battle of an item is on one model
    pair, so ``s_c`` lives on that pair's gap and on psi); ``pair`` and ``counts`` as in :class:`ItemUnits`."""
    i, j = data.i[pair], data.j[pair]
    _, g_d, g_p, *_ = bt.outcome_derivatives(x[i] - x[j], x[-1], ties)
    s_d, s_p = jnp.sum(counts * g_d, -1), jnp.sum(counts * g_p, -1)
    if ties == "half":  # psi is pinned, not fitted
        return bt.assemble(i, j, x.shape[0], s_d * s_d, None, None)
    return bt.assemble(i, j, x.shape[0], s_d * s_d, s_d * s_p, s_p * s_p)


def cluster_score_outer(x: jax.Array, data: bt.PairData, units: ItemUnits, ties: str = "half") -> jax.Array:
    """The cluster-robust meat: ``G / (G - 1) sum_items s_c s_c^T`` (Liang & Zeger 1986)."""
    g = units.n_items
    meat = item_score_outer(jnp.asarray(x), data, jnp.asarray(units.pair), jnp.asarray(units.counts), ties)
    return meat * (g / max(g - 1, 1))


@stored_jit(static_argnames=("ties",))
def _hessian_and_item_outer(x: jax.Array, data: bt.PairData, pair: jax.Array, counts: jax.Array, ridge: float,
                            ties: str = "half") -> tuple[jax.Array, jax.Array]:
    # one compiled program, stored for the warm CLI, instead of a string of eager operations
    return bt.conditioned_hessian(x, data, ties, ridge), item_score_outer(x, data, pair, counts, ties)


def cluster_sandwich(x: np.ndarray, data: bt.PairData, units: ItemUnits, ties: str = "half",
                     ridge: float = bt.DEFAULT_RIDGE) -> np.ndarray:
    """Cluster-robust ``H^-1 B H^-1`` (:func:`arena.bt.likelihood.sandwich_covariance` with items as the unit)."""
    hess, outer = _hessian_and_item_outer(np.asarray(x), data, units.pair, units.counts, ridge, ties)
    g = units.n_items
    h_inv = np.linalg.inv(np.asarray(hess))
    cov = h_inv @ (np.asarray(outer) * (g / max(g - 1, 1))) @ h_inv
    return (cov + cov.T) / 2


class ItemCellMap(NamedTuple):
    """Which live cells each item's battles fill, and how many: ``apply`` turns item draws into cell counts.

    Entries are sorted by cell, so one ``np.add.reduceat`` sums the items of each cell (numpy only: the
    warm CLI loads no scipy.sparse)."""

    items: np.ndarray  # (E,) item of each entry
    counts: np.ndarray  # (E,) its battles in that cell
    cells: np.ndarray  # (U,) live-cell positions that some item fills
    starts: np.ndarray  # (U,) first entry of each of those cells
    n_live: int

    def apply(self, draws: np.ndarray) -> np.ndarray:
        """(R, n_live) cell counts of (R, n_items) item draws: each drawn item brings all its battles."""
        out = np.zeros((draws.shape[0], self.n_live), dtype=np.result_type(draws.dtype, self.counts.dtype))
        if self.items.size:
            out[:, self.cells] = np.add.reduceat(draws[:, self.items] * self.counts, self.starts, axis=1)
        return out


def item_cell_matrix(units: ItemUnits, live: np.ndarray) -> ItemCellMap:
    """The (items, live cells) map of :class:`ItemCellMap`."""
    cells = 3 * units.pair[:, None].astype(np.int64) + np.arange(3)[None, :]
    keep = units.counts > 0
    pos = np.searchsorted(live, cells[keep])
    rows = np.broadcast_to(np.arange(units.n_items)[:, None], cells.shape)[keep]
    order = np.argsort(pos, kind="stable")
    pos, rows, counts = pos[order], rows[order], units.counts[keep][order]
    cols, starts = np.unique(pos, return_index=True)
    return ItemCellMap(rows, counts, cols, starts, int(live.size))
