"""Judge-assisted leaderboards: human battles plus judge verdicts in, a PPI++ rated table out.

Items are (question_id, unordered model pair). Human battles on an item are one cluster; judge rows on an
item are averaged into one label (both orders of a verdict file, or several judge battles). Items with
human votes and a judge label are the labelled set, judge-only items the unlabelled set. The math is
:mod:`arena.ppi.estimator`; the rank rule and the interval helpers are the leaderboard's (:mod:`arena.leaderboard`).
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd

from arena.bootstrap import intervals as bootstrap_intervals
from arena.bt import elo
from arena.bt.likelihood import Ties
from arena.io.battles import Battles
from arena.io.counts import model_tallies
from arena.jax_setup import float64
from arena.leaderboard_options import EloScale, IntervalOptions, check_ties
from arena.leaderboard_table import COLUMNS, add_intervals, interval_attrs, normal_quantile, ranked, sandwich_interval
from arena.ppi import bootstrap as ppi_bootstrap
from arena.ppi import estimator as ppi
from preflab.errors import InputError
from preflab.outcomes import BATTLE_LABELS, Outcome

PROB_COLUMNS = ("p_a", "p_b", "p_tie")
"""Soft judge labels: probabilities that model_a wins, model_b wins, tie (rows are normalised)."""


def _item_key(frame: pd.DataFrame, source: str) -> pd.Series:
    for col in ("question_id", "item_id"):
        if col in frame.columns and frame[col].notna().all():
            return frame[col].astype(str)
    raise InputError(source, None, "question_id", "missing or blank on some rows",
                          "PPI matches human and judge rows by question_id (or item_id) and the model pair; "
                          "give every row one")


def _oriented(a: np.ndarray, b: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lo, hi, labels (n, 3) as lo wins, hi wins, tie) from model codes and (a wins, b wins, tie) labels."""
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    swap = a != lo
    out = labels.copy()
    out[swap, 0], out[swap, 1] = labels[swap, 1], labels[swap, 0]
    return lo, hi, out


def _one_hot(codes: np.ndarray) -> np.ndarray:
    out = np.zeros((len(codes), 3))
    out[np.arange(len(codes)), np.where(codes >= 2, 2, codes)] = 1.0
    return out


def _sum_by(inverse: np.ndarray, n: int, values: np.ndarray) -> np.ndarray:
    """Column sums of ``values`` (rows, c) per group ``inverse`` (np.bincount, no pandas grouping)."""
    return np.stack([np.bincount(inverse, values[:, c], n) for c in range(values.shape[1])], axis=1)


def _cells(pair: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Items with the same pair and labels as one cell: (pair, labels, multiplicity), in order of first
    appearance (a hash grouping on the numeric columns; ``np.unique(axis=0)`` sorts and is 10x slower)."""
    frame = pd.DataFrame(np.column_stack([pair.astype(float), labels]))
    size = frame.groupby(list(frame.columns), sort=False).size()
    cells = np.asarray(size.index.to_list(), dtype=float).reshape(len(size), frame.shape[1])
    return cells[:, 0].astype(np.int64), cells[:, 1:], size.to_numpy(float)


def human_items(battles: Battles, qcode: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Items of the human battles: (sorted unique item keys, vote counts (I, 3) as lo wins, hi wins, tie).

    ``qcode``: each battle's integer question code; the key is ``(qcode * K + lo) * K + hi``."""
    df = battles.df
    k = len(battles.models)
    lo, hi, lab = _oriented(df["model_a"].cat.codes.to_numpy(np.int64), df["model_b"].cat.codes.to_numpy(np.int64),
                            _one_hot(battles.outcome.astype(np.int64)))
    keys, inverse = np.unique((qcode * k + lo) * k + hi, return_inverse=True)
    return keys, _sum_by(inverse, len(keys), lab)


def _codes(values: pd.Series, names: list[str]) -> np.ndarray:
    """Index of each value in ``names`` (-1 when absent): factorize once, then map the few distinct values."""
    codes, uniques = pd.factorize(values)
    lookup = np.r_[pd.Index(names).get_indexer(pd.Index(uniques).astype(str)), -1]
    return lookup[codes].astype(np.int64)  # code -1 (missing value) -> the trailing -1


def judge_labels(judge: pd.DataFrame, models: list[str], source: str, labels: str) -> tuple[np.ndarray, ...]:
    """Per judge row: model codes a, b (-1 when unknown) and labels (rows, 3) as a wins, b wins, tie.

    ``labels``: ``soft`` uses ``p_a, p_b, p_tie``; ``hard`` the ``winner`` column; ``auto`` soft when present.
    """
    for col in ("model_a", "model_b"):
        if col not in judge.columns:
            raise InputError(source, None, col, "column missing", "judge rows need model_a, model_b, "
                                  "question_id and winner or p_a/p_b/p_tie")
    soft = all(c in judge.columns for c in PROB_COLUMNS) and labels != "hard"
    if labels == "soft" and not soft:
        raise InputError(source, None, "p_a", "no probability columns", "soft labels need p_a, p_b, p_tie")
    if not soft and "winner" not in judge.columns:
        raise InputError(source, None, "winner", "column missing", "give winner or p_a/p_b/p_tie")
    a, b = _codes(judge["model_a"], models), _codes(judge["model_b"], models)
    if soft:
        lab = judge[list(PROB_COLUMNS)].to_numpy(dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            lab = lab / lab.sum(axis=1, keepdims=True)
    else:
        code = _codes(judge["winner"], list(BATTLE_LABELS))
        if (code < 0).any():
            bad = judge["winner"][code < 0].iloc[0]
            raise InputError(source, int(np.flatnonzero(code < 0)[0]) + 1, "winner",
                                  f"unknown winner {bad!r}", f"use one of {BATTLE_LABELS}")
        lab = _one_hot(code)
    return a, b, lab


def build_items(human: Battles, judge: Battles | pd.DataFrame, labels: str = "auto",
                judge_source: str = "<judge>") -> tuple[ppi.Items, dict[str, int]]:
    """Match human and judge items; labelled = both, unlabelled = judge only; counts of what was set aside.

    An item is (question, unordered model pair). Judge rows on one item are averaged into one label. Keys are
    integers (question codes from one ``pd.factorize`` over both tables), grouped by ``np.unique``: 1M judge
    rows take well under a second (``benchmarks/bench_ppi.py``).
    """
    if isinstance(judge, Battles):
        judge_source, judge = judge.source, judge.df
    models = human.models
    k = len(models)
    a, b, lab = judge_labels(judge, models, judge_source, labels)
    hq, jq = _item_key(human.df, human.source).to_numpy(), _item_key(judge, judge_source).to_numpy()
    qcode = pd.factorize(np.concatenate([hq, jq]))[0].astype(np.int64)
    h_keys, h_votes = human_items(human, qcode[: len(hq)])
    unknown = (a < 0) | (b < 0)
    unparsable = ~unknown & ~np.isfinite(lab).all(axis=1)
    keep = ~unknown & ~unparsable & (a != b)
    dropped = {"judge rows naming a model without human votes": int(unknown.sum()),
               "judge rows without a usable label": int(unparsable.sum())}
    lo, hi, lab = _oriented(a[keep], b[keep], lab[keep])
    j_keys, inverse, per_key = np.unique((qcode[len(hq):][keep] * k + lo) * k + hi, return_inverse=True,
                                         return_counts=True)
    j_labels = _sum_by(inverse, len(j_keys), lab) / per_key[:, None]
    at = np.searchsorted(j_keys, h_keys)
    matched = (at < len(j_keys)) & (np.r_[j_keys, -1][np.minimum(at, len(j_keys))] == h_keys)  # none may match
    dropped["human items without a judge label"] = int((~matched).sum())
    judge_only = np.ones(len(j_keys), bool)
    judge_only[at[matched]] = False
    l_pairs, u_pairs = h_keys[matched] % (k * k), j_keys[judge_only] % (k * k)
    pair_key = np.unique(np.r_[l_pairs, u_pairs])
    lp, lh, lf = np.searchsorted(pair_key, l_pairs), h_votes[matched], j_labels[at[matched]]
    l_pair, l_lab, l_mult = _cells(lp, np.column_stack([lh, lf]))
    u_pair, u_judge, u_mult = _cells(np.searchsorted(pair_key, u_pairs), j_labels[judge_only])
    items = ppi.Items(k, (pair_key // k).astype(np.int32), (pair_key % k).astype(np.int32), l_pair,
                      l_lab[:, :3], l_lab[:, 3:], l_mult, u_pair, u_judge, u_mult)
    return ppi.pad_items(items), dropped


def per_model(items: ppi.Items, models: list[str]) -> pd.DataFrame:
    """Human battles, wins, losses, ties per model over the labelled items (the votes PPI uses)."""
    li, lj, _, _ = ppi.cell_models(items)
    h = items.l_human * items.l_mult[:, None]
    return model_tallies(models, li, lj, h[:, Outcome.FIRST], h[:, Outcome.SECOND], h[:, 2])


@float64
def ppi_leaderboard(human: Battles, judge: Battles | pd.DataFrame, intervals: IntervalOptions = IntervalOptions(), *,
                    ties: Ties = "half", scale: EloScale = EloScale(), lam: float | None = None, labels: str = "auto",
                    include_labelled: bool = True, judge_source: str = "<judge>",
                    bread: str = "exact") -> pd.DataFrame:
    """The PPI++ leaderboard: the usual columns (``model, rating, lower, upper, rank, battles, ...``) plus
    ``ess`` (effective human votes per model: battles x human-only variance / PPI variance) and the human-only
    fit on the same labelled items (``rating_human``, ``lower_human``, ``upper_human``: clustered sandwich
    intervals). ``attrs`` hold
    ``lambda``, ``n_human_items``, ``n_judge_items``, ``ess_gain`` (human-only / PPI total variance).
    ``intervals``: ``ci``, ``level``, ``n_bootstrap`` and ``seed``; the unit is always the item, bootstrap
    weights multinomial."""
    check_ties(ties)
    if intervals.unit != "item" or intervals.cluster is not None or intervals.weights != "multinomial":
        raise ValueError("the PPI leaderboard resamples items (question id x model pair) with multinomial "
                         "weights; leave unit, cluster and weights at their defaults")
    items, dropped = build_items(human, judge, labels, judge_source)
    models = human.models
    k = len(models)
    fit = ppi.fit_ppi(items, lam, ties, include_labelled, bread=bread)
    to_elo = partial(elo.to_elo, scale=scale.scale, base=scale.base, init=scale.init)
    ratings = to_elo(fit.x[:k])
    se, cov_r = sandwich_interval(fit.x, fit.covariance, None, scale)
    se0, cov_r0 = sandwich_interval(fit.x_human, fit.covariance_human, None, scale)
    human_ratings, z = to_elo(fit.x_human[:k]), normal_quantile(intervals.level)
    table = per_model(items, models).assign(rating=ratings, se=se, rating_human=human_ratings,
                                            lower_human=human_ratings - z * se0, upper_human=human_ratings + z * se0)
    table["ess"] = table["battles"] * se0**2 / np.maximum(se, 1e-300) ** 2
    notes = [f"{v} {name} (not used)" for name, v in dropped.items() if v]
    if not fit.converged:
        notes.append("the PPI Newton fit did not converge")
    if intervals.bootstrap:
        reps, n_fallback = ppi_bootstrap.bootstrap_ppi(items, fit.x, fit.lam, n_bootstrap=intervals.n_bootstrap,
                                             seed=intervals.seed, ties=ties, include_labelled=include_labelled)
        rep_ratings = to_elo(reps[:, :k])
        bounds = bootstrap_intervals.percentile_interval(rep_ratings, intervals.level)
        add_intervals(table, intervals, se=se, bounds=bounds, replicate_ratings=rep_ratings)
        if n_fallback:
            notes.append(f"{n_fallback} of {intervals.n_bootstrap} bootstrap replicates needed a full Newton refit")
    else:
        add_intervals(table, intervals, se=se)
    table = ranked(table, (*COLUMNS, "ess"))
    gain = float(np.trace(cov_r0) / np.trace(cov_r)) if np.trace(cov_r) > 0 else 1.0
    table.attrs.update({**interval_attrs(intervals, ties), "method": "ppi++", "lambda": fit.lam,
                        "n_human_items": items.n_labelled, "n_human_votes": float(table["battles"].sum() / 2),
                        "n_judge_items": items.n_labelled + items.n_unlabelled,
                        "n_unlabelled_items": items.n_unlabelled, "ess_gain": gain,
                        "include_labelled": include_labelled, "bread": bread, "diagnostics": notes, "unit": "item",
                        "unit_text": f"item (question id x model pair): {items.n_labelled:,.0f} with votes, "
                                     f"{items.n_unlabelled:,.0f} judged only"})
    return table
