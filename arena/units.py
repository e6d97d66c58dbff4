"""Sampling units: the battle, or the item (question id x unordered model pair) when an item repeats.

Votes on one item share its prompt and its two answers, so they are correlated (several voters on one
pair: the app's overlap, LLMFAO's ~4 crowd votes a pair); treating them as independent makes intervals too
narrow. With items as the unit the sandwich's meat sums each item's score before the outer product
(cluster-robust covariance: Liang & Zeger 1986, Biometrika 73:13; Cameron & Miller 2015, J. Human Resources
50:317, with the G / (G - 1) factor) and the bootstrap resamples items with replacement (Davison & Hinkley
1997, 'Bootstrap methods', 3.8). The same unit as the PPI path (:mod:`arena.ppi_board`).
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

import arena._jax  # noqa: F401  (x64 + compilation cache)
from arena import bt
from arena.counts import A_WINS

Unit = Literal["item", "battle"]
UNITS: tuple[str, ...] = ("item", "battle")
ITEM_COLUMNS: tuple[str, ...] = ("question_id", "item_id")
"""Battle columns that name the item (prompt) a battle was judged on, in order of preference."""


class ItemUnits(NamedTuple):
    """Items of a fit: ``pair`` (C,) the :class:`arena.bt.PairData` row each item's battles fall in,
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
    :func:`arena.bt.pair_data`), or None when no item holds two battles (then the unit is the battle).
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


def cluster_score_outer(x: jax.Array, data: bt.PairData, units: ItemUnits, ties: str = "half") -> jax.Array:
    """The cluster-robust meat: ``G / (G - 1) sum_items s_c s_c^T``, ``s_c`` the item's summed score (every
    battle of an item is on one model pair, so ``s_c`` lives on that pair's gap and on psi)."""
    i, j = jnp.asarray(data.i)[units.pair], jnp.asarray(data.j)[units.pair]
    _, g_d, g_p, *_ = bt.outcome_derivatives(x[i] - x[j], x[-1], ties)
    c = jnp.asarray(units.counts)
    s_d, s_p = jnp.sum(c * g_d, -1), jnp.sum(c * g_p, -1)
    g = units.n_items
    size = x.shape[0]
    if ties == "half":  # psi is pinned, not fitted
        meat = bt.assemble(i, j, size, s_d * s_d, None, None)
    else:
        meat = bt.assemble(i, j, size, s_d * s_d, s_d * s_p, s_p * s_p)
    return meat * (g / max(g - 1, 1))


def cluster_sandwich(x: np.ndarray, data: bt.PairData, units: ItemUnits, ties: str = "half",
                     ridge: float = bt.DEFAULT_RIDGE) -> np.ndarray:
    """Cluster-robust ``H^-1 B H^-1`` (:func:`arena.bt.sandwich_covariance` with items as the unit)."""
    h_inv = np.linalg.inv(np.asarray(bt.conditioned_hessian(jnp.asarray(x), data, ties, ridge)))
    cov = h_inv @ np.asarray(cluster_score_outer(jnp.asarray(x), data, units, ties)) @ h_inv
    return (cov + cov.T) / 2


def item_cell_matrix(units: ItemUnits, live: np.ndarray):
    """Sparse (items, live cells) map: an item's draw count times its counts gives a replicate's cells."""
    from scipy.sparse import coo_matrix

    cells = 3 * units.pair[:, None].astype(np.int64) + np.arange(3)[None, :]
    keep = units.counts > 0
    pos = np.searchsorted(live, cells[keep])
    rows = np.broadcast_to(np.arange(units.n_items)[:, None], cells.shape)[keep]
    return coo_matrix((units.counts[keep], (rows, pos)), shape=(units.n_items, live.size)).tocsr()
