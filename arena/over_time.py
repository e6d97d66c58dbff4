"""Ratings over time: the leaderboard refitted on each date window of the battles' ``tstamp``.

Each window (consecutive, of equal length, from the first battle's time) gets its own Bradley-Terry fit with
intervals (:func:`arena.leaderboard.fit_leaderboard`), so a model whose strength changes shows the change in the
windows after it; ``cumulative=True`` fits everything up to each window's end instead (the board as it stood
then). Ratings of different windows share the Elo scale but each window is centred on its own models' mean (or
pinned by ``anchor``): compare a model with the others in a window, or pin a reference model with ``anchor``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from arena.io.validation import Battles
from arena.leaderboard import fit_leaderboard
from arena.leaderboard_options import EloScale, IntervalOptions

#: Columns of :func:`ratings_over_time`.
OVER_TIME_COLUMNS = ("window_start", "window_end", "model", "rating", "lower", "upper", "battles")


def window_length(window: str | pd.Timedelta) -> pd.Timedelta:
    """``window`` (``"7D"``, ``"30D"``, ``"12h"``, a Timedelta) as a positive :class:`pandas.Timedelta`."""
    try:
        length = pd.Timedelta(window)
    except (TypeError, ValueError):
        raise ValueError(f"window {window!r} is not a time span; use e.g. 7D, 30D or 12h") from None
    if length <= pd.Timedelta(0):
        raise ValueError(f"window {window!r} must be longer than 0; use e.g. 7D, 30D or 12h")
    return length


def window_codes(tstamp: np.ndarray, length: pd.Timedelta) -> np.ndarray:
    """Window index of each timestamp (seconds since the epoch): ``floor((t - t_min) / length)``."""
    t = np.asarray(tstamp, float)
    return np.floor((t - np.nanmin(t)) / length.total_seconds()).astype(np.int64)


def ratings_over_time(battles: Battles | pd.DataFrame, window: str | pd.Timedelta, *,
                      intervals: IntervalOptions = IntervalOptions("sandwich"), ties: str = "half",
                      scale: EloScale = EloScale(), anchor: str | None = None, cumulative: bool = False,
                      min_battles: int = 1) -> pd.DataFrame:
    """One leaderboard per date window of ``tstamp``: columns :data:`OVER_TIME_COLUMNS` (times as UTC).

    Battles without a ``tstamp`` are left out and counted in ``attrs["skipped_no_tstamp"]``; windows with
    fewer than ``min_battles`` battles are skipped (``attrs["empty_windows"]``), and warnings of each window's
    fit are kept per window in ``attrs["notes"]``.
    """
    df = battles.df if isinstance(battles, Battles) else battles
    if "tstamp" not in df:
        raise ValueError("the battles have no tstamp column: ratings over time need each battle's time")
    t = pd.to_numeric(df["tstamp"], errors="coerce").to_numpy(float)
    known = np.isfinite(t)
    if not known.any():
        raise ValueError("no battle has a tstamp: ratings over time need each battle's time")
    length = window_length(window)
    df, t = df[known], t[known]
    codes = window_codes(t, length)
    start = pd.Timestamp(np.nanmin(t), unit="s", tz="UTC")
    frames, notes, empty = [], {}, 0
    for w in range(int(codes.max()) + 1):
        rows = codes <= w if cumulative else codes == w
        if rows.sum() < max(min_battles, 1):
            empty += 1
            continue
        sub = df[rows].copy()
        for col in ("model_a", "model_b"):
            sub[col] = sub[col].astype(str)
        lo, hi = start + w * length, start + (w + 1) * length
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lb = fit_leaderboard(sub, intervals, ties=ties, scale=scale, anchor=anchor)
        if caught:
            notes[str(lo)] = [str(c.message) for c in caught]
        table = lb.table[["model", "rating", "lower", "upper", "battles"]].assign(
            window_start=start if cumulative else lo, window_end=hi)
        frames.append(table)
    out = pd.concat(frames, ignore_index=True)[list(OVER_TIME_COLUMNS)]
    out.attrs.update(window=str(length), cumulative=cumulative, skipped_no_tstamp=int((~known).sum()),
                     empty_windows=empty, notes=notes, level=intervals.level, ci=intervals.ci)
    return out
