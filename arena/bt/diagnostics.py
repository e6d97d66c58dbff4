"""Diagnostics that explain when a Bradley-Terry leaderboard cannot be trusted, with clear messages.

Existence of the BT MLE: every model must have won (or tied) and lost (or tied) at least once, and
more generally the directed 'beat or tied' graph must be strongly connected (Ford 1957; Hunter 2004).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from arena.io.battles import PairCounts, warn_if_disconnected
from arena.io.counts import reaches_all


class InfiniteMLEWarning(UserWarning):
    """A model never lost (or never won): its maximum-likelihood rating is infinite."""


class TooFewBattlesWarning(UserWarning):
    """A model has fewer battles than the chosen minimum: its rating is very uncertain."""


def unbounded_models(per_model: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(never lost, never won) model names: no losses and no ties, or no wins and no ties."""
    no_tie = per_model["ties"] <= 0
    never_lost = per_model.loc[no_tie & (per_model["losses"] <= 0) & (per_model["battles"] > 0), "model"]
    never_won = per_model.loc[no_tie & (per_model["wins"] <= 0) & (per_model["battles"] > 0), "model"]
    return list(never_lost), list(never_won)


def check_counts(counts: PairCounts, min_battles: int = 10) -> list[str]:
    """Warnings that need no fit: disconnected graph and too few battles; returns their messages."""
    messages = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_if_disconnected(counts)
    for w in caught:
        messages.append(str(w.message))
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    per = counts.per_model()
    few = per.loc[per["battles"] < min_battles]
    if len(few):
        shown = ", ".join(f"{m} ({int(n)})" for m, n in zip(few["model"][:10], few["battles"][:10], strict=True))
        msg = (f"{len(few)} model(s) have fewer than {min_battles} battles: {shown}"
               f"{', ...' if len(few) > 10 else ''}. Their intervals are wide; collect more votes or drop them "
               "with exclude_models.")
        _warn_noted(messages, msg, TooFewBattlesWarning)
    return messages


def check_unbounded(per_model: pd.DataFrame, ratings: dict[str, float], ridge: float) -> list[str]:
    """Warn for each model whose MLE is infinite, showing the ridge-regularised rating actually reported."""
    never_lost, never_won = unbounded_models(per_model)
    messages = []
    for names, side, sign in ((never_lost, "never lost", "+"), (never_won, "never won", "-")):
        for m in names:
            msg = (f"model {m!r} {side} (no ties either): its maximum-likelihood rating is {sign}infinity. "
                   f"The rating shown, {ratings[m]:.1f}, is finite only because of the ridge {ridge:g}; "
                   "treat it as a bound, or collect battles it loses/wins.")
            _warn_noted(messages, msg, InfiniteMLEWarning)
    return messages


def _warn_noted(messages: list[str], msg: str, category: type[Warning]) -> None:
    """Warn at the caller's caller (the leaderboard's) and keep the message for the table's diagnostics."""
    warnings.warn(msg, category, stacklevel=3)
    messages.append(msg)


def nonfinite_guard(values: np.ndarray, what: str) -> None:
    """Raise a clear error when a fit produced NaN/inf instead of silently printing them."""
    if not np.all(np.isfinite(values)):
        raise FloatingPointError(f"{what} is not finite; check the input for empty or degenerate data")


# ------------------------------------------------------------------------ Ford's condition (separation)


class SeparatedGraphWarning(UserWarning):
    """Ford's condition fails: some group of models won every battle against the rest, so no MLE exists."""


class ExcludedReplicatesWarning(UserWarning):
    """Some bootstrap replicates did not converge or had no MLE and were left out of the intervals."""


def beat_edges(i: np.ndarray, j: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edges ``src -> dst`` of the 'beat or tied' digraph of pair counts ``(P, 3)`` or ``(P, 3, R)``.

    Pair ``(i, j)`` gives ``i -> j`` weighted by i-wins + ties and ``j -> i`` by j-wins + ties; returns
    (src, dst, weight) with weight (2P,) or (2P, R).
    """
    c = np.asarray(counts, np.float64)
    src = np.concatenate([i, j]).astype(np.int64)
    dst = np.concatenate([j, i]).astype(np.int64)
    return src, dst, np.concatenate([c[:, 0] + c[:, 2], c[:, 1] + c[:, 2]])


def strong_groups(n_models: int, src: np.ndarray, dst: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Strongly connected component labels (R, K) of the beat digraph, one graph per column of ``weight``.

    The R graphs are solved at once as one block-diagonal graph (scipy's Tarjan; Ford 1957 and Hunter
    2004, Ann. Stat. 32:384: the BT MLE exists iff the graph is strongly connected, i.e. one label per row).
    Labels are comparable within a row only.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    w = np.asarray(weight, np.float64).reshape(len(src), -1)
    n_rep = w.shape[1]
    e, r = np.nonzero(w > 0)
    rows, cols = r * n_models + src[e], r * n_models + dst[e]
    size = n_rep * n_models
    graph = coo_matrix((np.ones(rows.size), (rows, cols)), shape=(size, size)).tocsr()
    _, labels = connected_components(graph, directed=True, connection="strong")
    return labels.reshape(n_rep, n_models)


def ford_condition(outcomes: np.ndarray) -> bool:
    """True when the MLE exists (Hunter 2004, Ford 1957) for a (K, K, 3) tensor of (a wins, b wins, tie)."""
    k = outcomes.shape[0]
    a, b = np.nonzero(np.ones((k, k), bool))
    labels = strong_groups(k, *beat_edges(a, b, outcomes[a, b]))
    return bool((labels == labels[:, :1]).all())


class Separation(NamedTuple):
    """Groups of models (strongly connected components of the beat digraph), dominating groups first,
    and ``dominance`` rows (g, h, battles): group g won all ``battles`` battles against group h, no ties."""

    groups: list[list[str]]
    dominance: list[tuple[int, int, float]]

    def as_dict(self) -> dict:
        return {"groups": self.groups, "dominance": [list(d) for d in self.dominance]}


def separation(models: Sequence[str], i: np.ndarray, j: np.ndarray, counts: np.ndarray) -> Separation | None:
    """None when Ford's condition holds for pair counts (P, 3); else the groups in dominance order."""
    k = len(models)
    src, dst, w = beat_edges(i, j, counts)
    beat = w > 0
    if k <= 1 or (reaches_all(k, src[beat], dst[beat]) and reaches_all(k, dst[beat], src[beat])):
        return None  # strongly connected: every model reaches model 0 and is reached from it
    labels = strong_groups(k, src, dst, w)[0]
    if (labels == labels[0]).all():
        return None
    n = labels.max() + 1
    between = np.zeros((n, n))  # battles won by group g over group h
    np.add.at(between, (labels[src], labels[dst]), w)
    np.fill_diagonal(between, 0.0)
    order, indeg = [], (between > 0).sum(axis=0)  # Kahn: groups nobody outside beat come first
    ready = sorted(np.flatnonzero(indeg == 0), key=lambda g: -np.flatnonzero(labels == g).size)
    while ready:
        g = ready.pop(0)
        order.append(g)
        for h in np.flatnonzero(between[g] > 0):
            indeg[h] -= 1
            if indeg[h] == 0:
                ready.append(h)
    rank = {g: r for r, g in enumerate(order)}
    groups = [sorted(models[m] for m in np.flatnonzero(labels == g)) for g in order]
    dom = [(rank[g], rank[h], float(between[g, h])) for g, h in zip(*np.nonzero(between > 0), strict=True)]
    return Separation(groups, sorted(dom))


def _group(names: list[str]) -> str:
    return "{" + ", ".join(names[:6]) + (", ..." if len(names) > 6 else "") + "}"


def separation_message(sep: Separation, ridge: float, regularised: bool, scale_per_nat: float) -> str:
    """The warning text: groups, who dominates whom, and what the reported numbers mean."""
    shown = "; ".join(f"{_group(sep.groups[g])} beat {_group(sep.groups[h])} in all {n:g} battles between them"
                      for g, h, n in sep.dominance[:6])
    if not sep.dominance:
        shown = "the groups never met"
    head = (f"Ford's condition fails: the models split into {len(sep.groups)} groups with no win (or tie) "
            f"going the other way ({shown}{'; ...' if len(sep.dominance) > 6 else ''}). The maximum-likelihood "
            "ratings do not exist: the gaps between groups are infinite. ")
    if regularised:
        sd = 1 / np.sqrt(ridge)
        return head + (f"Ratings and intervals shown are regularised by the ridge prior {ridge:g} (a normal "
                       f"prior with SD {sd:.3g} on each natural-log strength, {sd * scale_per_nat:.0f} rating "
                       "points); they describe that prior as much as the data.")
    return head + ("The ratings shown are finite only because of the ridge "
                   f"{ridge:g}; their intervals are reported as unbounded. Rank each group alone, collect "
                   "battles the dominating group loses, or ask for a ridge prior (--ridge 0.01 / ridge=0.01).")


def replicate_separation(n_models: int, src: np.ndarray, dst: np.ndarray, weight: np.ndarray,
                         ) -> tuple[np.ndarray, np.ndarray]:
    """Per bootstrap replicate (columns of ``weight``): separated (R,), and (R, K) True for the models
    outside the replicate's largest strongly connected group (their gap to it is infinite there)."""
    labels = strong_groups(n_models, src, dst, weight)
    separated = (labels != labels[:, :1]).any(axis=1)
    outside = np.zeros(labels.shape, bool)
    for r in np.flatnonzero(separated):
        values, sizes = np.unique(labels[r], return_counts=True)
        outside[r] = labels[r] != values[np.argmax(sizes)]
    return separated, outside
