"""The rated table both leaderboards return (:mod:`arena.leaderboard`, :mod:`arena.ppi.board`).

From per-model counts, ratings, sandwich standard errors and bootstrap bounds: the interval columns, the
rank bounds, the primary ``lower``/``upper``, Chatbot Arena's rank, the column order and the sort. One
builder, so a column means the same in both tables.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pandas as pd

from arena.bootstrap import intervals as bootstrap_intervals
from arena.bt import elo
from arena.leaderboard_options import EloScale, IntervalOptions

COLUMNS: tuple[str, ...] = ("model", "rating", "lower", "upper", "rank", "battles", "wins", "losses", "ties")
"""The leading columns of every leaderboard, in order; the others follow in the order they were added."""


def normal_quantile(level: float) -> float:
    """The two-sided normal quantile ``z`` of a ``level`` interval (1.96 at 0.95)."""
    return NormalDist().inv_cdf(0.5 + level / 2)


def sandwich_interval(x: np.ndarray, cov: np.ndarray, anchor: int | None,
                      scale: EloScale) -> tuple[np.ndarray, np.ndarray]:
    """(standard errors, covariance) of the ratings from the covariance ``cov`` of the parameters ``x``
    (strengths, then the tie parameter), ``anchor`` pinning one model or the mean at ``scale.init``."""
    k = len(x) - 1
    cov_r = elo.elo_covariance(cov[:k, :k], anchor) * scale.per_nat**2
    return np.sqrt(np.clip(np.diag(cov_r), 0, None)), cov_r


def add_intervals(table: pd.DataFrame, intervals: IntervalOptions, *, se: np.ndarray | None = None,
                  bounds: tuple[np.ndarray, np.ndarray] | None = None, replicate_ratings: np.ndarray | None = None,
                  identified: np.ndarray | None = None) -> pd.DataFrame:
    """Add the interval columns to ``table`` (one row per model with ``rating``), in place; return it.

    ``se``: sandwich standard errors (``se``, ``lower_sandwich``, ``upper_sandwich``); ``bounds``: bootstrap
    (lower, upper) (``lower_bootstrap``, ``upper_bootstrap``) with ``replicate_ratings`` (R, K), the usable
    replicates, for ``rank_lower``/``rank_upper`` (1 and K when fewer than two). ``identified`` (K,) bool marks
    the ratings the data pins down; the others get infinite intervals and the full rank range, and the table an
    ``identified`` column. ``lower``/``upper`` are the bootstrap's when ``intervals`` asks for it.
    """
    k, ratings = len(table), table["rating"].to_numpy()
    known = np.ones(k, bool) if identified is None else identified
    if se is not None:
        z = normal_quantile(intervals.level)
        se = np.where(known, se, np.inf)
        table["se"] = se
        table["lower_sandwich"], table["upper_sandwich"] = ratings - z * se, ratings + z * se
    if bounds is not None:
        table["lower_bootstrap"] = np.where(known, bounds[0], -np.inf)
        table["upper_bootstrap"] = np.where(known, bounds[1], np.inf)
        table["rank_lower"], table["rank_upper"] = 1, k
        if replicate_ratings is not None and len(replicate_ratings) >= 2:
            level = intervals.level
            ranks = bootstrap_intervals.replicate_ranks(replicate_ratings)
            table["rank_lower"], table["rank_upper"] = np.quantile(ranks, [(1 - level) / 2, (1 + level) / 2],
                                                                   axis=0, method="nearest").astype(int)
        table.loc[~known, ["rank_lower", "rank_upper"]] = [1, k]
    if identified is not None:
        table["identified"] = identified
    primary = "bootstrap" if intervals.bootstrap else "sandwich"
    table["lower"], table["upper"] = table[f"lower_{primary}"], table[f"upper_{primary}"]
    return table


def ranked(table: pd.DataFrame, first: tuple[str, ...] = COLUMNS) -> pd.DataFrame:
    """Chatbot Arena's rank (1 + models whose lower bound exceeds this upper bound), ``first`` columns
    leading, sorted by rating (best first, ties by name)."""
    table["rank"] = bootstrap_intervals.rank_from_intervals(table["lower"].to_numpy(), table["upper"].to_numpy())
    table = table[list(first) + [c for c in table.columns if c not in first]]
    return table.sort_values(["rating", "model"], ascending=[False, True], ignore_index=True)


def display_decimals(table: pd.DataFrame) -> int:
    """Decimals to print a leaderboard's ratings and intervals with: two significant digits of the median
    finite interval half-width, at least 1 (so 1 on the Elo scale; 3 for ``--scale 1``'s half-widths of about
    0.04, which one decimal shows as ``-0.0 / +0.0``)."""
    cols = [c for c in table.columns if c.startswith(("lower", "upper")) and not c.endswith("_human")]
    if "rating" not in table or not cols:
        return 1
    rating = table["rating"].to_numpy(float)
    half = np.abs(np.concatenate([table[c].to_numpy(float) - rating for c in cols]))
    half = half[np.isfinite(half) & (half > 0)]
    if not len(half):
        return 1
    return int(min(6, max(1, 1 - np.floor(np.log10(np.median(half))))))


def interval_attrs(intervals: IntervalOptions, ties: str) -> dict[str, object]:
    """The settings every leaderboard's ``attrs`` record: ties, ci, level, replicates run, seed."""
    return {"ties": ties, "ci": intervals.ci, "level": intervals.level, "n_bootstrap": intervals.replicates,
            "seed": intervals.seed}
