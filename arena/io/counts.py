"""Battles aggregated to unique (model_a, model_b, outcome) cells, and the comparison graph.

Part of the data model (re-exported by :mod:`arena.io.battles`); the arena's fits consume :class:`PairCounts`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from arena.io.battles import Battles

from preflab.outcomes import Outcome


class DisconnectedGraphWarning(UserWarning):
    """The comparison graph has several components: ratings across components are not comparable."""


@dataclass(frozen=True)
class PairCounts:
    """Battles aggregated to unique (model_a, model_b, outcome) cells: the arena's hot path.

    ``a`` and ``b`` are int32 indices into ``models``; ``outcome`` int8 codes; ``count`` float64.
    """

    models: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    count: np.ndarray

    @property
    def n_models(self) -> int:
        return len(self.models)

    def per_model(self) -> pd.DataFrame:
        """Battles, wins, losses and ties per model (both tie kinds count as ties)."""
        c, tie = self.count, self.outcome >= Outcome.TIE
        a_wins, b_wins = c * (self.outcome == Outcome.FIRST), c * (self.outcome == Outcome.SECOND)
        return model_tallies(self.models, self.a, self.b, a_wins, b_wins, c * tie)


def model_tallies(models: Sequence[str], a: np.ndarray, b: np.ndarray, a_wins: np.ndarray, b_wins: np.ndarray,
                  ties: np.ndarray) -> pd.DataFrame:
    """Battles, wins, losses and ties per model from cells of model codes ``a``, ``b`` with their counts of
    ``a`` wins, ``b`` wins and ties (each cell counts for both its models)."""
    k = len(models)
    total = a_wins + b_wins + ties
    battles = np.bincount(a, total, k) + np.bincount(b, total, k)
    wins = np.bincount(a, a_wins, k) + np.bincount(b, b_wins, k)
    tied = np.bincount(a, ties, k) + np.bincount(b, ties, k)
    return pd.DataFrame({"model": list(models), "battles": whole(battles), "wins": whole(wins),
                         "losses": whole(battles - wins - tied), "ties": whole(tied)})


def whole(counts: np.ndarray) -> np.ndarray:
    """Counts as int64 when every one is a whole number (votes), else as they are (soft or weighted labels):
    files and pages then write ``628``, not ``628.0``."""
    counts = np.asarray(counts)
    if counts.dtype.kind == "f" and np.all(np.isfinite(counts)) and np.all(counts == np.round(counts)):
        return counts.astype(np.int64)
    return counts


def aggregate(battles: Battles, weights: np.ndarray | None = None) -> PairCounts:
    """Count battles per unique (model_a, model_b, outcome) cell, vectorised (10M rows in about a second).

    ``weights`` optionally weights each battle (e.g. a sample weight); counts are then weighted sums.
    """
    df = battles.df
    k = len(df["model_a"].cat.categories)
    a = df["model_a"].cat.codes.to_numpy(np.int64)
    b = df["model_b"].cat.codes.to_numpy(np.int64)
    o = df["winner"].cat.codes.to_numpy(np.int64)
    return aggregate_codes(a, b, o, battles.models if k else [], weights)


def aggregate_codes(
    a: np.ndarray, b: np.ndarray, outcome: np.ndarray, models: list[str] | tuple[str, ...],
    weights: np.ndarray | None = None,
) -> PairCounts:
    """:func:`aggregate` on integer codes (for simulators and callers that already hold codes)."""
    k = len(models)
    key = (np.asarray(a, np.int64) * k + np.asarray(b, np.int64)) * 4 + np.asarray(outcome, np.int64)
    if k * k * 4 <= 50_000_000:
        counts = np.bincount(key, weights=weights, minlength=k * k * 4)
        cells = np.flatnonzero(counts)
        count = counts[cells].astype(np.float64)
    else:
        cells, inverse = np.unique(key, return_inverse=True)
        count = np.bincount(inverse, weights=weights).astype(np.float64)
    pair, out = np.divmod(cells, 4)
    ia, ib = np.divmod(pair, k)
    return PairCounts(tuple(models), ia.astype(np.int32), ib.astype(np.int32), out.astype(np.int8), count)


def reaches_all(n_nodes: int, src: np.ndarray, dst: np.ndarray, max_steps: int = 64) -> bool | None:
    """Whether every node is reached from node 0 along the edges ``src -> dst``: breadth-first, one
    vectorised pass over the edges per level. None when ``max_steps`` levels did not settle it (a long
    chain: the caller falls back to scipy), so the common case needs no scipy import (~0.2 s)."""
    seen = np.zeros(n_nodes, bool)
    seen[:1] = True
    for _ in range(max_steps):
        grown = seen.copy()
        grown[dst[seen[src]]] = True
        if grown.all():
            return True
        if (grown == seen).all():
            return False
        seen = grown
    return None


def comparison_components(counts: PairCounts) -> list[list[str]]:
    """Connected components of the comparison graph, largest first (models with no battle are alone)."""
    k = counts.n_models
    if k == 1 or (k > 1 and reaches_all(k, np.r_[counts.a, counts.b], np.r_[counts.b, counts.a])):
        return [sorted(counts.models)]
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    graph = coo_matrix((np.ones(len(counts.a)), (counts.a, counts.b)), shape=(k, k))
    n, labels = connected_components(graph, directed=False)
    groups = [sorted(counts.models[i] for i in np.flatnonzero(labels == c)) for c in range(n)]
    return sorted(groups, key=len, reverse=True)


def warn_if_disconnected(counts: PairCounts) -> list[list[str]]:
    """Warn (:class:`DisconnectedGraphWarning`) naming the components when there are several."""
    comps = comparison_components(counts)
    if len(comps) > 1:
        shown = "; ".join("{" + ", ".join(c[:6]) + (", ..." if len(c) > 6 else "") + "}" for c in comps[:5])
        warnings.warn(
            f"the comparison graph has {len(comps)} disconnected components: {shown}. Ratings across "
            "components are not comparable; add battles between them or rank each component alone.",
            DisconnectedGraphWarning, stacklevel=2,
        )
    return comps
