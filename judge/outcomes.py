"""The judged-pairs table every calibration metric reads: one row per pair, outcomes by identity.

Columns (all adapters in :mod:`judge.datasets` produce them; only ``item_id`` is required):

- ``item_id``, ``model_x``, ``model_y`` — the pair; ``x`` and ``y`` name answers by identity, never by slot.
- ``judge_xy`` / ``judge_yx`` — the judge's winner when x / y was shown first, as a
  :class:`preflab.outcomes.Outcome` code, NaN when that order was not run.
- ``p_xy`` / ``p_yx`` — the judge's P(x wins) in each order (logprob judges), ``pt_xy`` / ``pt_yx`` P(tie).
- ``human`` — the human (majority) winner code; ``human_1`` … ``human_k`` single annotators (NaN = no vote).
- ``len_x`` / ``len_y`` — answer lengths (characters, or tokens when the user supplies them).

Codes are by identity throughout judge: ``Outcome.FIRST`` means x won and ``Outcome.SECOND`` y won, whichever
answer was shown first; ``Outcome.UNPARSABLE`` is a verdict that names no winner.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from preflab.outcomes import Outcome

#: The codes a verdict or a human label can name (x wins, y wins, tie), in code order.
OUTCOMES = (Outcome.FIRST, Outcome.SECOND, Outcome.TIE)


def annotator_columns(pairs: pd.DataFrame) -> list[str]:
    """The single-annotator columns ``human_1`` … ``human_k`` present, in numeric order."""
    cols = [c for c in pairs.columns if c.startswith("human_") and c[6:].isdigit()]
    return sorted(cols, key=lambda c: int(c[6:]))


def column(pairs: pd.DataFrame, name: str) -> np.ndarray:
    """A column as a float array (NaN where absent or when the column does not exist)."""
    if name not in pairs.columns:
        return np.full(len(pairs), np.nan)
    return np.asarray(pd.to_numeric(pairs[name], errors="coerce"), dtype=float)


def has(pairs: pd.DataFrame, name: str) -> bool:
    """True when column ``name`` exists and holds at least one value."""
    return name in pairs.columns and bool(pairs[name].notna().any())


def judge_single(pairs: pd.DataFrame) -> np.ndarray:
    """One judge code per pair: the x-first verdict, else the y-first one (for one-order data)."""
    xy, yx = column(pairs, "judge_xy"), column(pairs, "judge_yx")
    return np.where(np.isnan(xy), yx, xy)


def p_x_single(pairs: pd.DataFrame) -> np.ndarray:
    """The judge's P(x wins) per pair averaged over the orders run (NaN when no probabilities)."""
    stacked = np.vstack([column(pairs, "p_xy"), column(pairs, "p_yx")])
    counts = np.sum(~np.isnan(stacked), axis=0)
    return np.where(counts > 0, np.nansum(stacked, axis=0) / np.maximum(counts, 1), np.nan)


def swap_sides(codes: np.ndarray) -> np.ndarray:
    """Codes seen with x and y exchanged (x wins ↔ y wins; ties, unparsable and NaN stay): the array form of
    :func:`preflab.outcomes.swapped`, for a pair listed the other way round."""
    codes = np.asarray(codes, dtype=float)
    return np.where(codes == Outcome.FIRST, Outcome.SECOND, np.where(codes == Outcome.SECOND, Outcome.FIRST, codes))
