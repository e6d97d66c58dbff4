"""The leaderboard: battles in, a rated table with intervals out. The one entry the CLI and the app call.

``rank_battles`` returns the table; ``fit_leaderboard`` returns it with everything behind it (bootstrap
replicates, rank distribution, covariance, tie parameter, style coefficients, diagnostics, matrices).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, Literal

import jax
import numpy as np
import pandas as pd

from arena.bootstrap import refits as bs
from arena.bootstrap.weights import WeightKind
from arena.bt import diagnostics, matrices
from arena.bt import likelihood as bt
from arena.bt.units import UNITS, Unit, cluster_sandwich, item_units
from arena.io.battles import Battles, PairCounts, aggregate, load_battles
from arena.jax_setup import float64

CI = Literal["bootstrap", "sandwich", "both"]


@dataclass(frozen=True)
class EloScale:
    """Rating scale: ``scale * log_base(strength) + init`` (Chatbot Arena: 400, 10, 1000)."""

    scale: float = 400.0
    base: float = 10.0
    init: float = 1000.0

    @property
    def per_nat(self) -> float:
        return self.scale / math.log(self.base)


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


def sandwich_interval(x: np.ndarray, cov: np.ndarray, anchor: int | None, scale: EloScale, level: float):
    k = len(x) - 1
    cov_r = bt.elo_covariance(cov[:k, :k], anchor) * scale.per_nat**2
    se = np.sqrt(np.clip(np.diag(cov_r), 0, None))
    return se, NormalDist().inv_cdf(0.5 + level / 2), cov_r


def _tie_summary(ties: str, x: np.ndarray, cov: np.ndarray | None, reps: np.ndarray | None,
                 level: float) -> dict[str, float] | None:
    if ties == "half":
        return None
    out = {"value": float(bt.tie_parameter(x, ties))}
    if cov is not None:
        z, se = NormalDist().inv_cdf(0.5 + level / 2), math.sqrt(max(cov[-1, -1], 0.0))
        out["lower_sandwich"] = float(bt.tie_parameter(np.array([x[-1] - z * se]), ties))
        out["upper_sandwich"] = float(bt.tie_parameter(np.array([x[-1] + z * se]), ties))
    if reps is not None:
        lo, hi = bs.percentile_interval(reps[:, -1:], level)
        out["lower_bootstrap"] = float(bt.tie_parameter(lo, ties))
        out["upper_bootstrap"] = float(bt.tie_parameter(hi, ties))
    return out


@float64
def fit_leaderboard(
    battles: Battles | pd.DataFrame | PairCounts,
    *,
    n_bootstrap: int = 1000,
    ci: CI = "bootstrap",
    ties: str = "half",
    style_control: bool = False,
    anchor: Any = None,
    level: float = 0.95,
    seed: int = 0,
    scale: float = 400.0,
    base: float = 10.0,
    init: float = 1000.0,
    ridge: float = bt.DEFAULT_RIDGE,
    weights: WeightKind = "multinomial",
    min_battles: int = 10,
    filters: Any = None,
    style_features: tuple[str, ...] | None = None,
    device: jax.Device | str | None = None,
    progress: Callable[[int], None] | None = None,
    cluster: str | None = None,
    unit: Unit = "item",
) -> Leaderboard:
    """Fit a BT leaderboard with sandwich and/or bootstrap intervals (see :func:`rank_battles`).

    ``cluster`` names a battle column (e.g. ``question_id``) whose values are the bootstrap's resampling
    unit (style control only: the aggregated fit resamples battles).
    ``unit``: the sampling unit of both intervals (:mod:`arena.bt.units`): ``"item"`` (default) clusters the
    sandwich and resamples items (question id x model pair) whenever an item holds several battles, else it
    is the battle; ``"battle"`` treats every battle as independent. ``table.attrs["unit"]`` names the one used.
    ``battles`` may also be their :class:`PairCounts` (e.g. counted by a database; the bootstrap resamples
    cells, so the fit is the same), without style control or filters, which need the battles themselves.
    """
    if ci not in ("bootstrap", "sandwich", "both"):
        raise ValueError(f"ci must be 'bootstrap', 'sandwich' or 'both', not {ci!r}")
    if ties not in bt.TIES:
        raise ValueError(f"ties must be one of {bt.TIES}, not {ties!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, not {level}")
    if cluster is not None and not style_control:
        raise ValueError("cluster= resampling is only available with style_control=True")
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, not {unit!r}")
    if not ridge > 0:
        raise ValueError(f"ridge must be positive, not {ridge}")
    if ci != "sandwich" and n_bootstrap < 2:
        raise ValueError("n_bootstrap must be at least 2 for bootstrap intervals (or use ci='sandwich')")
    dev = jax.devices(device)[0] if isinstance(device, str) else device
    hygiene_report: list[str] = []
    if isinstance(battles, PairCounts):  # already aggregated (e.g. counted by a database): the same fit
        if style_control or filters is not None:
            raise ValueError("style control and filters need the battles themselves, not their counts")
        counts = battles
        if counts.count.sum() == 0:
            raise ValueError("no battles to rank (every count is zero)")
    else:
        battles = _as_battles(battles)
        if filters is not None:
            from arena.bt.hygiene import apply_filters

            battles, hygiene_report = apply_filters(battles, filters)
        if len(battles) == 0:
            raise ValueError("no battles left to rank (empty input, or every battle was filtered out)")
        counts = aggregate(battles)
    notes = diagnostics.check_counts(counts, min_battles)
    sc = EloScale(scale, base, init)
    anchor_idx, anchor_rating = parse_anchor(anchor, counts.models, init)
    want_sw, want_bs = ci in ("sandwich", "both"), ci in ("bootstrap", "both")

    data = bt.pair_data(counts)
    sep = diagnostics.separation(counts.models, data.i, data.j, data.counts)
    regularised = ridge > bt.DEFAULT_RIDGE  # the user asked for a ridge prior: finite fits by design
    if sep is not None:
        msg = diagnostics.separation_message(sep, ridge, regularised, sc.per_nat)
        warnings.warn(msg, diagnostics.SeparatedGraphWarning, stacklevel=3)
        notes.append(msg)

    units = None
    if unit == "item" and not isinstance(battles, PairCounts):
        units = item_units(battles.df, data, counts.n_models)
    unit_text = units.describe() if units is not None else (
        "battle" if unit == "battle" else "battle (no item id holds two battles)")

    style_table = None
    if style_control:
        from arena.style.fit import style_fit

        clusters = None if units is None else units.battle_item
        if cluster is not None:  # the caller's unit (e.g. Arena-Hard's prompts), for both intervals
            clusters = _cluster_codes(battles, cluster)
            unit_text = f"{cluster} (each value one cluster)"
        sf = style_fit(battles, features=style_features, ties=ties, ridge=ridge, n_bootstrap=n_bootstrap if
                       want_bs else 0, sandwich=want_sw, seed=seed, weights=weights, level=level,
                       device=dev, progress=progress, clusters=clusters, item_codes=clusters)
        x, cov, style_table = sf.x, sf.covariance, sf.coefficients
        notes += list(sf.warnings)
        boot = None if sf.replicates is None else bs.Replicates(sf.replicates, 0, sf.rep_converged,
                                                                 sf.rep_separated, sf.rep_outside)
    else:
        put = (lambda a: jax.device_put(a, dev)) if dev is not None else (lambda a: a)
        result = bt.fit(put(bt.initial_x(data, counts.n_models, ties)), data, ties, ridge)
        x = np.asarray(result.x)
        if not bool(result.converged):
            notes.append(f"the Newton fit stopped after {int(result.n_iter)} iterations without converging")
        h = np.asarray(bt.conditioned_hessian(x, data, ties, ridge))
        cov = None
        if want_sw:
            cov = (np.asarray(bt.sandwich_covariance(x, data, ties, ridge)) if units is None
                   else cluster_sandwich(x, data, units, ties, ridge))
        boot = None
        if want_bs:
            boot = bs.bootstrap_fits(data, x, np.linalg.inv(h), n_bootstrap=n_bootstrap, seed=seed, ties=ties,
                                     ridge=ridge, weights=weights, device=dev, progress=progress, units=units)
    diagnostics.nonfinite_guard(x, "the fitted parameter vector")
    k = counts.n_models
    identified = np.full(k, sep is None or regularised)
    ratings = bt.to_elo(x[:k], scale=scale, base=base, init=init, anchor=anchor_idx, anchor_rating=anchor_rating)
    per = counts.per_model()
    table = per.assign(rating=ratings)
    cov_r = None
    if want_sw:
        se, z, cov_r = sandwich_interval(x, cov, anchor_idx, sc, level)
        se = np.where(identified, se, np.inf)
        table["se"] = se
        table["lower_sandwich"], table["upper_sandwich"] = ratings - z * se, ratings + z * se
    rank_dist, reps, excluded = None, None, None
    if want_bs:
        reps, usable = boot.x, bs.usable_replicates(boot.converged, boot.separated, ridge)
        rep_ratings = bt.to_elo(reps[:, :k], scale=scale, base=base, init=init, anchor=anchor_idx,
                                anchor_rating=anchor_rating)
        above, below = (None, None) if regularised else bs.separation_sides(reps[:, :k], boot.outside)
        lo, hi = bs.usable_interval(rep_ratings, usable, above, below, level)
        table["lower_bootstrap"] = np.where(identified, lo, -np.inf)
        table["upper_bootstrap"] = np.where(identified, hi, np.inf)
        table["rank_lower"], table["rank_upper"] = 1, k
        good = rep_ratings[usable]
        if len(good) >= 2:
            ranks = bs.replicate_ranks(good)
            table["rank_lower"], table["rank_upper"] = np.quantile(ranks, [(1 - level) / 2, (1 + level) / 2],
                                                                   axis=0, method="nearest").astype(int)
            rank_dist = pd.DataFrame(bs.rank_distribution(good), index=list(counts.models),
                                     columns=np.arange(1, k + 1))
        table.loc[~identified, ["rank_lower", "rank_upper"]] = [1, k]
        excluded = {"not_converged": int((~boot.converged).sum()), "separated": int(boot.separated.sum()),
                    "used": int(len(good)), "replicates": int(len(reps)), "fallback": int(boot.n_fallback)}
        if sep is None or regularised:  # else every resample is separated too: the warning above says it all
            notes += _excluded_notes(excluded, counts.models, above, below, regularised, level, len(reps))
        reps = reps[usable]
    table["identified"] = identified
    primary = "bootstrap" if want_bs else "sandwich"
    table["lower"], table["upper"] = table[f"lower_{primary}"], table[f"upper_{primary}"]
    if style_control:  # near-collinear style and models: ratings anywhere within thousands of points
        notes += _too_wide(table, WIDE_INTERVAL * scale / 400)
    table["rank"] = bs.rank_from_intervals(table["lower"].to_numpy(), table["upper"].to_numpy())
    notes += diagnostics.check_unbounded(per, dict(zip(per["model"], ratings, strict=True)), ridge)
    cols = ["model", "rating", "lower", "upper", "rank", "battles", "wins", "losses", "ties"]
    table = table[cols + [c for c in table.columns if c not in cols]]
    table = table.sort_values(["rating", "model"], ascending=[False, True], ignore_index=True)
    tie = _tie_summary(ties, x, cov, reps if reps is None or len(reps) >= 2 else None, level)
    table.attrs.update({"unit": cluster or ("battle" if units is None else "item"), "unit_text": unit_text,
                        "ties": ties, "ci": ci, "level": level, "n_bootstrap": n_bootstrap if want_bs else 0,
                        "seed": seed, "anchor": None if anchor_idx is None else counts.models[anchor_idx],
                        "ridge": ridge, "tie_parameter": tie,
                        "style_coefficients": None if style_table is None else style_table.to_dict("index"),
                        "diagnostics": list(notes), "hygiene": hygiene_report,
                        "separation": None if sep is None else sep.as_dict(), "bootstrap_excluded": excluded})
    return Leaderboard(table, counts, pd.Series(ratings, index=list(counts.models)).loc[table["model"]],
                       cov_r, reps, rank_dist, tie, style_table, notes, hygiene_report, sc, sep, excluded)


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
    from arena.style.fit import ConfoundedStyleWarning

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
    warnings.warn(msg, diagnostics.ExcludedReplicatesWarning, stacklevel=4)
    return notes + [msg]


@float64
def rank_battles(battles: Battles | pd.DataFrame, *, n_bootstrap: int = 1000, ci: CI = "bootstrap",
                 ties: str = "half", style_control: bool = False, anchor: Any = None, level: float = 0.95,
                 seed: int = 0, **options: Any) -> pd.DataFrame:
    """Rank models from pairwise battles: a DataFrame sorted by rating, best first.

    Columns ``model, rating, lower, upper, rank, battles, wins, losses, ties`` plus ``se`` and
    ``lower_/upper_sandwich`` (sandwich CIs), ``lower_/upper_bootstrap`` and ``rank_lower/rank_upper``
    (bootstrap), as requested by ``ci``. ``lower``/``upper`` are the bootstrap interval when there is one.
    ``rank`` is Chatbot Arena's: 1 + number of models whose lower bound exceeds this model's upper bound.
    ``df.attrs`` holds ``tie_parameter`` (Rao-Kupper theta or Davidson nu with its interval),
    ``style_coefficients``, ``diagnostics`` and the ``hygiene`` report. Ratings are on the Elo scale
    (``scale=400, base=10, init=1000``; mean ``init`` unless ``anchor="NAME=RATING"`` pins one model).
    Further options: see :func:`fit_leaderboard` (``ridge``, ``weights``, ``filters``, ``device`` ...).
    """
    return fit_leaderboard(battles, n_bootstrap=n_bootstrap, ci=ci, ties=ties, style_control=style_control,
                           anchor=anchor, level=level, seed=seed, **options).table
