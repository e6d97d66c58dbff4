"""Diagnostics that explain when a Bradley-Terry leaderboard cannot be trusted, with clear messages.

Existence of the BT MLE: every model must have won (or tied) and lost (or tied) at least once, and
more generally the directed 'beat or tied' graph must be strongly connected (Ford 1957; Hunter 2004).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from arena.data import PairCounts, warn_if_disconnected


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
        warnings.warn(msg, TooFewBattlesWarning, stacklevel=2)
        messages.append(msg)
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
            warnings.warn(msg, InfiniteMLEWarning, stacklevel=2)
            messages.append(msg)
    return messages


def nonfinite_guard(values: np.ndarray, what: str) -> None:
    """Raise a clear error when a fit produced NaN/inf instead of silently printing them."""
    if not np.all(np.isfinite(values)):
        raise FloatingPointError(f"{what} is not finite; check the input for empty or degenerate data")
