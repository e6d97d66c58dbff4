"""The judged-pairs table every calibration metric reads: one row per pair, outcomes by identity.

Columns (all adapters in :mod:`judge.metrics.adapters` produce them; only ``item_id`` is required):

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


def usable(code: np.ndarray) -> np.ndarray:
    """Where a code names a verdict (not NaN = not run, not unparsable)."""
    return ~np.isnan(code) & (code != Outcome.UNPARSABLE)


COMBINE_RULES = ("conservative", "average")


def combine_order_codes(judge_xy: np.ndarray, judge_yx: np.ndarray,
                        p_xy: np.ndarray | None = None, p_yx: np.ndarray | None = None,
                        pt_xy: np.ndarray | None = None, pt_yx: np.ndarray | None = None,
                        require_both: bool = False) -> dict[str, np.ndarray]:
    """The two rules for turning both orders into one winner per pair (codes by identity), side by side.

    - ``conservative``: the winner when both orders agree, a tie when they disagree (Zheng et al. 2023);
      a pair with one usable order keeps it; none → unparsable.
    - ``average``: average P(x), P(y), P(tie) over the usable orders and take the largest, an exact x–y
      tie being a tie (probability averaging; the verdicts' one-hot vectors when a judge gave none).
    With ``require_both`` a pair missing a usable order is unparsable under both rules (the runner's
    combined table, which counts such pairs). ``p_x``, ``p_y``, ``p_tie`` are the
    averaged probabilities (NaN where no order is usable).
    """
    xy, yx = np.asarray(judge_xy, dtype=float), np.asarray(judge_yx, dtype=float)
    vx, vy = usable(xy), usable(yx)
    if require_both:
        vx = vy = vx & vy
    conservative = np.where(vx & vy, np.where(xy == yx, xy, Outcome.TIE),
                            np.where(vx, xy, np.where(vy, yx, Outcome.UNPARSABLE)))

    def probs(code: np.ndarray, valid: np.ndarray, px, pt) -> np.ndarray:
        onehot = np.stack([code == Outcome.FIRST, code == Outcome.SECOND, code == Outcome.TIE], axis=1).astype(float)
        if px is not None:
            px = np.asarray(px, dtype=float)
            pt = np.zeros_like(px) if pt is None else np.nan_to_num(np.asarray(pt, dtype=float))
            soft = np.stack([px, 1 - px - pt, pt], axis=1)
            onehot = np.where(np.isnan(px)[:, None], onehot, soft)
        return np.where(valid[:, None], onehot, np.nan)

    stacked = np.stack([probs(xy, vx, p_xy, pt_xy), probs(yx, vy, p_yx, pt_yx)])
    counts = np.sum(~np.isnan(stacked), axis=0)
    mean = np.nansum(stacked, axis=0) / np.maximum(counts, 1)
    mean = np.where(counts > 0, mean, np.nan)
    none = ~(vx | vy)
    averaged = np.where(none, Outcome.UNPARSABLE, np.argmax(np.nan_to_num(mean, nan=-1.0), axis=1)).astype(float)
    # argmax index 0/1/2 is already X/Y/TIE; an exact x–y tie of probabilities is a tie.
    averaged = np.where(~none & np.isclose(mean[:, 0], mean[:, 1]), Outcome.TIE, averaged)
    return {"conservative": conservative, "average": averaged, "p_x": mean[:, 0], "p_y": mean[:, 1],
            "p_tie": mean[:, 2]}
