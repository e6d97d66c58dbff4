"""The leaderboard: battles in, a rated table with intervals out. The one entry the CLI and the app call.

``rank_battles`` returns the table; ``fit_leaderboard`` returns it with everything behind it (bootstrap
replicates, rank distribution, covariance, tie parameter, style coefficients, diagnostics, matrices).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple

import jax
import numpy as np
import pandas as pd

from arena.bootstrap import intervals as bootstrap_intervals
from arena.bootstrap import refits as bs
from arena.bt import diagnostics, elo, matrices
from arena.bt import likelihood as bt
from arena.bt.units import ItemUnits, cluster_sandwich, item_units
from arena.io.battles import Battles, PairCounts, aggregate, load_battles
from arena.jax_setup import float64
from arena.leaderboard_options import EloScale, IntervalOptions, check_ridge, check_ties
from arena.leaderboard_table import add_intervals, interval_attrs, normal_quantile, ranked, sandwich_interval


@dataclass(frozen=True)
class Leaderboard:
    """A fitted leaderboard and what stands behind it."""

    table: pd.DataFrame
    counts: PairCounts
    ratings: pd.Series
    covariance: np.ndarray | None = None
    replicates: np.ndarray | None = None
    rank_distribution: pd.DataFrame | None = None
    tie_parameter: dict[str, float] | None = None
    style: pd.DataFrame | None = None
    diagnostics: list[str] = field(default_factory=list)
    hygiene: list[str] = field(default_factory=list)
    scale: EloScale = EloScale()
    separation: diagnostics.Separation | None = None
    excluded: dict[str, int] | None = None

    def battle_counts(self) -> pd.DataFrame:
        return matrices.battle_counts(self.counts).loc[self.table["model"], self.table["model"]]

    def observed_win_rates(self, ties: str = "exclude") -> pd.DataFrame:
        return matrices.observed_win_rates(self.counts, ties).loc[self.table["model"], self.table["model"]]

    def predicted_win_rates(self) -> pd.DataFrame:
        return matrices.predicted_win_rates(self.ratings, self.scale.scale, self.scale.base)


def parse_anchor(anchor: Any, models: list[str] | tuple[str, ...], init: float) -> tuple[int | None, float]:
    """``None`` | ``"NAME=RATING"`` | ``"NAME"`` | ``(name, rating)`` -> (model index or None, rating)."""
    if anchor is None:
        return None, init
    if isinstance(anchor, str):
        name, _, value = anchor.partition("=")
        rating = float(value) if value.strip() else init
    else:
        name, rating = anchor[0], float(anchor[1])
    name = name.strip()
    if name not in models:
        shown = ", ".join(list(models)[:8]) + (", ..." if len(models) > 8 else "")
        raise ValueError(f"anchor model {name!r} is not among the {len(models)} models ({shown}); "
                         "use --anchor NAME=RATING with a model from the data")
    return list(models).index(name), rating


def _as_battles(battles: Battles | pd.DataFrame) -> Battles:
    return battles if isinstance(battles, Battles) else load_battles(battles)


def _tie_summary(ties: str, x: np.ndarray, cov: np.ndarray | None, reps: np.ndarray | None,
                 level: float) -> dict[str, float] | None:
    if ties == "half":
        return None
    out = {"value": float(bt.tie_parameter(x, ties))}
    if cov is not None:
        z, se = normal_quantile(level), math.sqrt(max(cov[-1, -1], 0.0))
        out["lower_sandwich"] = float(bt.tie_parameter(np.array([x[-1] - z * se]), ties))
        out["upper_sandwich"] = float(bt.tie_parameter(np.array([x[-1] + z * se]), ties))
    if reps is not None:
        lo, hi = bootstrap_intervals.percentile_interval(reps[:, -1:], level)
        out["lower_bootstrap"] = float(bt.tie_parameter(lo, ties))
        out["upper_bootstrap"] = float(bt.tie_parameter(hi, ties))
    return out


class _Estimate(NamedTuple):
    """A fit's parameters, sandwich covariance, bootstrap replicates, style coefficients and notes."""

    x: np.ndarray
    cov: np.ndarray | None
    boot: bs.Replicates | None
    style: pd.DataFrame | None
    notes: list[str]
    unit_text: str | None = None  # the resampling unit when the caller named one (cluster=)


class _BootstrapSummary(NamedTuple):
    bounds: tuple[np.ndarray, np.ndarray]
    good: np.ndarray  # the usable replicates' ratings
    reps: np.ndarray  # the usable replicates' parameters
    rank_distribution: pd.DataFrame | None
    excluded: dict[str, int]
    notes: list[str]


@float64
def fit_leaderboard(
    battles: Battles | pd.DataFrame | PairCounts,
    intervals: IntervalOptions = IntervalOptions(),
    *,
    ties: bt.Ties = "half",
    scale: EloScale = EloScale(),
    anchor: Any = None,
    ridge: float = bt.DEFAULT_RIDGE,
    style_control: bool = False,
    style_features: tuple[str, ...] | None = None,
    min_battles: int = 10,
    filters: Any = None,
    device: jax.Device | str | None = None,
    progress: Callable[[int], None] | None = None,
) -> Leaderboard:
    """Fit a BT leaderboard with sandwich and/or bootstrap intervals (see :func:`rank_battles`).

    ``intervals`` (:class:`IntervalOptions`): ``ci``, ``level``, ``n_bootstrap``, ``seed``, the sampling
    ``unit`` of both intervals (:mod:`arena.bt.units`: ``"item"`` clusters the sandwich and resamples items
    (question id x model pair) whenever an item holds several battles, else it is the battle; ``"battle"``
    treats every battle as independent; ``table.attrs["unit"]`` names the one used), bootstrap ``weights``, and
    ``cluster``, a battle column (e.g. ``question_id``) whose values are the bootstrap's resampling unit (style
    control only: the aggregated fit resamples battles).
    ``battles`` may also be their :class:`PairCounts` (e.g. counted by a database; the bootstrap resamples
    cells, so the fit is the same), without style control or filters, which need the battles themselves.
    """
    check_ties(ties)
    check_ridge(ridge)
    if intervals.cluster is not None and not style_control:
        raise ValueError("cluster= resampling is only available with style_control=True")
    dev = jax.devices(device)[0] if isinstance(device, str) else device
    battles, counts, hygiene_report = _counted(battles, filters, style_control)
    notes = diagnostics.check_counts(counts, min_battles)
    anchor_idx, anchor_rating = parse_anchor(anchor, counts.models, scale.init)

    data = bt.pair_data(counts)
    sep = diagnostics.separation(counts.models, data.i, data.j, data.counts)
    regularised = ridge > bt.DEFAULT_RIDGE  # the user asked for a ridge prior: finite fits by design
    if sep is not None:
        msg = diagnostics.separation_message(sep, ridge, regularised, scale.per_nat)
        warnings.warn(msg, diagnostics.SeparatedGraphWarning, stacklevel=3)
        notes.append(msg)

    units = None
    if intervals.unit == "item" and not isinstance(battles, PairCounts):
        units = item_units(battles.df, data, counts.n_models)
    if style_control:
        est = _style_estimate(battles, intervals, units, ties, ridge, style_features, dev, progress)
    else:
        est = _plain_estimate(data, counts.n_models, intervals, units, ties, ridge, dev, progress)
    x, cov = est.x, est.cov
    notes += est.notes
    diagnostics.nonfinite_guard(x, "the fitted parameter vector")
    k = counts.n_models
    identified = np.full(k, sep is None or regularised)
    to_elo = partial(elo.to_elo, scale=scale.scale, base=scale.base, init=scale.init, anchor=anchor_idx,
                     anchor_rating=anchor_rating)
    ratings = to_elo(x[:k])
    per = counts.per_model()
    cov_r, se, boot = None, None, None
    if intervals.sandwich:
        se, cov_r = sandwich_interval(x, cov, anchor_idx, scale)
    if intervals.bootstrap:
        boot = _bootstrap_summary(est.boot, to_elo, counts.models, ridge, regularised, sep, intervals.level)
        notes += boot.notes
    table = per.assign(rating=ratings)
    if boot is None:
        add_intervals(table, intervals, se=se, identified=identified)
    else:
        add_intervals(table, intervals, se=se, bounds=boot.bounds, replicate_ratings=boot.good, identified=identified)
    if style_control:  # near-collinear style and models: ratings anywhere within thousands of points
        notes += _too_wide(table, WIDE_INTERVAL * scale.scale / 400)
    table = ranked(table)
    notes += diagnostics.check_unbounded(per, dict(zip(per["model"], ratings, strict=True)), ridge)
    reps = None if boot is None else boot.reps
    tie = _tie_summary(ties, x, cov, reps if reps is None or len(reps) >= 2 else None, intervals.level)
    excluded = None if boot is None else boot.excluded
    unit_text = est.unit_text or (units.describe() if units is not None else (
        "battle" if intervals.unit == "battle" else "battle (no item id holds two battles)"))
    table.attrs.update({"unit": intervals.cluster or ("battle" if units is None else "item"),
                        "unit_text": unit_text, **interval_attrs(intervals, ties),
                        "anchor": None if anchor_idx is None else counts.models[anchor_idx],
                        "ridge": ridge, "tie_parameter": tie,
                        "style_coefficients": None if est.style is None else est.style.to_dict("index"),
                        "diagnostics": list(notes), "hygiene": hygiene_report,
                        "separation": None if sep is None else sep.as_dict(), "bootstrap_excluded": excluded})
    return Leaderboard(table, counts, pd.Series(ratings, index=list(counts.models)).loc[table["model"]],
                       cov_r, reps, None if boot is None else boot.rank_distribution, tie, est.style, notes,
                       hygiene_report, scale, sep, excluded)


def _counted(battles: Battles | pd.DataFrame | PairCounts, filters: Any,
             style_control: bool) -> tuple[Battles | PairCounts, PairCounts, list[str]]:
    """(the battles after the filters, their counts, the hygiene report); counts pass through unchanged."""
    if isinstance(battles, PairCounts):  # already aggregated (e.g. counted by a database): the same fit
        if style_control or filters is not None:
            raise ValueError("style control and filters need the battles themselves, not their counts")
        if battles.count.sum() == 0:
            raise ValueError("no battles to rank (every count is zero)")
        return battles, battles, []
    battles, report = _as_battles(battles), []
    if filters is not None:
        from arena.bt.hygiene import apply_filters

        battles, report = apply_filters(battles, filters)
    if len(battles) == 0:
        raise ValueError("no battles left to rank (empty input, or every battle was filtered out)")
    return battles, aggregate(battles), report


def _style_estimate(battles: Battles, intervals: IntervalOptions, units: ItemUnits | None, ties: str, ridge: float,
                    features: tuple[str, ...] | None, device: jax.Device | None,
                    progress: Callable[[int], None] | None) -> _Estimate:
    """The contextual (style-controlled) fit, its intervals resampling items, the caller's clusters or battles."""
    from arena.style.fit import style_fit

    clusters, unit_text = None if units is None else units.battle_item, None
    if intervals.cluster is not None:  # the caller's unit (e.g. Arena-Hard's prompts), for both intervals
        clusters = _cluster_codes(battles, intervals.cluster)
        unit_text = f"{intervals.cluster} (each value one cluster)"
    sf = style_fit(battles, features=features, ties=ties, ridge=ridge, n_bootstrap=intervals.replicates,
                   sandwich=intervals.sandwich, seed=intervals.seed, weights=intervals.weights,
                   level=intervals.level, device=device, progress=progress, clusters=clusters, item_codes=clusters)
    boot = None if sf.replicates is None else bs.Replicates(sf.replicates, 0, sf.rep_converged, sf.rep_separated,
                                                            sf.rep_outside)
    return _Estimate(sf.x, sf.covariance, boot, sf.coefficients, list(sf.warnings), unit_text)


def _plain_estimate(data: bt.PairData, n_models: int, intervals: IntervalOptions, units: ItemUnits | None,
                    ties: str, ridge: float, device: jax.Device | None,
                    progress: Callable[[int], None] | None) -> _Estimate:
    """The Newton fit on the pair counts, its (clustered) sandwich and bootstrap refits."""
    put = (lambda a: jax.device_put(a, device)) if device is not None else (lambda a: a)
    result = bt.fit(put(bt.initial_x(data, n_models, ties)), data, ties, ridge)
    x, notes = np.asarray(result.x), []
    if not bool(result.converged):
        notes.append(f"the Newton fit stopped after {int(result.n_iter)} iterations without converging")
    h = np.asarray(bt.conditioned_hessian(x, data, ties, ridge))
    cov, boot = None, None
    if intervals.sandwich:
        cov = (np.asarray(bt.sandwich_covariance(x, data, ties, ridge)) if units is None
               else cluster_sandwich(x, data, units, ties, ridge))
    if intervals.bootstrap:
        boot = bs.bootstrap_fits(data, x, np.linalg.inv(h), n_bootstrap=intervals.n_bootstrap,
                                 seed=intervals.seed, ties=ties, ridge=ridge, weights=intervals.weights,
                                 device=device, progress=progress, units=units)
    return _Estimate(x, cov, boot, None, notes)


def _bootstrap_summary(boot: bs.Replicates, to_elo: Callable[[np.ndarray], np.ndarray], models: tuple[str, ...],
                       ridge: float, regularised: bool, sep: diagnostics.Separation | None,
                       level: float) -> _BootstrapSummary:
    """Bounds, usable replicates, rank distribution and the exclusion report of the bootstrap refits."""
    k = len(models)
    reps, usable = boot.x, bootstrap_intervals.usable_replicates(boot.converged, boot.separated, ridge)
    rep_ratings = to_elo(reps[:, :k])
    above, below = (None, None) if regularised else bootstrap_intervals.separation_sides(reps[:, :k], boot.outside)
    bounds = bootstrap_intervals.usable_interval(rep_ratings, usable, above, below, level)
    good = rep_ratings[usable]
    rank_dist = None
    if len(good) >= 2:
        rank_dist = pd.DataFrame(bootstrap_intervals.rank_distribution(good), index=list(models),
                                 columns=np.arange(1, k + 1))
    excluded = {"not_converged": int((~boot.converged).sum()), "separated": int(boot.separated.sum()),
                "used": int(len(good)), "replicates": int(len(reps)), "fallback": int(boot.n_fallback)}
    notes = []
    if sep is None or regularised:  # else every resample is separated too: the separation warning says it all
        notes = _excluded_notes(excluded, models, above, below, regularised, level, len(reps))
    return _BootstrapSummary(bounds, good, reps[usable], rank_dist, excluded, notes)


WIDE_INTERVAL = 1000.0
"""Elo points (at scale 400) past which a style-controlled interval says the rating is not identified."""


def _too_wide(table: pd.DataFrame, limit: float) -> list[str]:
    """Mark ratings whose interval spans more than ``limit`` points as not identified (in place); the note."""
    width = table["upper"] - table["lower"]
    wide = table["identified"] & np.isfinite(width) & (width > limit)
    if not wide.any():
        return []
    table.loc[wide, "identified"] = False
    names = ", ".join(f"{m} ({w:,.0f} points)" for m, w in zip(table["model"][wide], width[wide], strict=True))
    msg = (f"not identified: the style-controlled intervals of {names} span more than {limit:,.0f} points, so those "
           "ratings are not results; control for fewer style features (style_features=length) or collect battles "
           "where style varies within models")
    from arena.style.features import ConfoundedStyleWarning

    warnings.warn(msg, ConfoundedStyleWarning, stacklevel=3)
    return [msg]


def _cluster_codes(battles: Battles, column: str) -> np.ndarray:
    if column not in battles.df:
        raise ValueError(f"{battles.source}: no column {column!r} to resample by")
    return pd.factorize(battles.df[column].astype(str))[0].astype(np.int64)


def _excluded_notes(excluded: dict[str, int], models: tuple[str, ...], above, below, regularised: bool,
                    level: float, n_rep: int) -> list[str]:
    """Warn how many bootstrap replicates were left out of the intervals, why, and which bounds that opened."""
    n_bad = excluded["replicates"] - excluded["used"]
    notes = []
    if excluded["fallback"]:
        notes.append(f"{excluded['fallback']} of {n_rep} bootstrap replicates needed a full Newton refit")
    if not n_bad and not excluded["not_converged"]:
        return notes
    why = [f"{excluded['not_converged']} did not converge"] if excluded["not_converged"] else []
    if excluded["separated"] and not regularised:
        why.append(f"{excluded['separated']} have no MLE (Ford's condition fails in the resample)")
    msg = (f"{n_bad} of {n_rep} bootstrap replicates are excluded from the intervals and ranks ({'; '.join(why)}); "
           f"they use the other {excluded['used']}")
    if above is not None:
        tail = (1 - level) / 2 * n_rep
        opened = [f"{models[m]} (upper +inf: above the rest in {int(above[:, m].sum())})"
                  for m in np.flatnonzero(above.sum(axis=0) > tail)]
        opened += [f"{models[m]} (lower -inf: below the rest in {int(below[:, m].sum())})"
                   for m in np.flatnonzero(below.sum(axis=0) > tail)]
        if opened:
            share = (1 - level) / 2
            msg += (f"; where more than {share:.1%} of replicates put a model beyond the rest with no loss (or "
                    "win), that bound is unknown and reported infinite: " + ", ".join(opened[:8]))
    warnings.warn(msg, diagnostics.ExcludedReplicatesWarning, stacklevel=5)
    return notes + [msg]


@float64
def rank_battles(battles: Battles | pd.DataFrame | PairCounts, intervals: IntervalOptions = IntervalOptions(), *,
                 ties: bt.Ties = "half", scale: EloScale = EloScale(), anchor: Any = None,
                 ridge: float = bt.DEFAULT_RIDGE, style_control: bool = False,
                 style_features: tuple[str, ...] | None = None, min_battles: int = 10, filters: Any = None,
                 device: jax.Device | str | None = None) -> pd.DataFrame:
    """Rank models from pairwise battles: a DataFrame sorted by rating, best first.

    Columns ``model, rating, lower, upper, rank, battles, wins, losses, ties`` plus ``se`` and
    ``lower_/upper_sandwich`` (sandwich CIs), ``lower_/upper_bootstrap`` and ``rank_lower/rank_upper``
    (bootstrap), as requested by ``intervals.ci``. ``lower``/``upper`` are the bootstrap interval when there
    is one. ``rank`` is Chatbot Arena's: 1 + number of models whose lower bound exceeds this model's upper
    bound. ``df.attrs`` holds ``tie_parameter`` (Rao-Kupper theta or Davidson nu with its interval),
    ``style_coefficients``, ``diagnostics`` and the ``hygiene`` report. Ratings are on the Elo ``scale``
    (``EloScale(400, 10, 1000)``; mean ``init`` unless ``anchor="NAME=RATING"`` pins one model).
    The options are :func:`fit_leaderboard`'s, which returns the table with everything behind it.
    """
    return fit_leaderboard(battles, intervals, ties=ties, scale=scale, anchor=anchor, ridge=ridge,
                           style_control=style_control, style_features=style_features, min_battles=min_battles,
                           filters=filters, device=device).table
