"""Pairwise matrices for a leaderboard: battle counts, observed win rates, BT-predicted win rates."""

from __future__ import annotations

import numpy as np
import pandas as pd

from arena.io.battles import A_WINS, B_WINS, PairCounts


def _frame(values: np.ndarray, models: tuple[str, ...] | list[str]) -> pd.DataFrame:
    return pd.DataFrame(values, index=list(models), columns=list(models))


def battle_counts(counts: PairCounts) -> pd.DataFrame:
    """Symmetric matrix of battles between each pair of models (either side)."""
    k = counts.n_models
    m = np.zeros((k, k))
    np.add.at(m, (counts.a, counts.b), counts.count)
    return _frame(m + m.T, counts.models)


def observed_win_rates(counts: PairCounts, ties: str = "exclude") -> pd.DataFrame:
    """Row model's observed win rate against the column model (NaN where they never met).

    ``ties="exclude"``: wins / (wins + losses); ``"half"``: (wins + ties/2) / battles.
    """
    if ties not in ("exclude", "half"):
        raise ValueError("ties must be 'exclude' or 'half'")
    k = counts.n_models
    wins, tie = np.zeros((k, k)), np.zeros((k, k))
    a_won, b_won = counts.outcome == A_WINS, counts.outcome == B_WINS
    np.add.at(wins, (counts.a[a_won], counts.b[a_won]), counts.count[a_won])
    np.add.at(wins, (counts.b[b_won], counts.a[b_won]), counts.count[b_won])
    is_tie = ~(a_won | b_won)
    np.add.at(tie, (counts.a[is_tie], counts.b[is_tie]), counts.count[is_tie])
    tie = tie + tie.T
    if ties == "exclude":
        num, den = wins, wins + wins.T
    else:
        num, den = wins + tie / 2, wins + wins.T + tie
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
    return _frame(rate, counts.models)


def predicted_win_rates(ratings: pd.Series, scale: float = 400.0, base: float = 10.0) -> pd.DataFrame:
    """BT probability that the row model beats the column model: ``1 / (1 + base^((r_col - r_row)/scale))``."""
    r = ratings.to_numpy(float)
    p = 1.0 / (1.0 + base ** ((r[None, :] - r[:, None]) / scale))
    return _frame(p, list(ratings.index))
