"""A judge's ratings beside the human ones, on the same items (the judge's battles from
:func:`judge_arena.battles_from_verdicts.verdict_battles`): rank correlation of the two leaderboards, and the
model pairs on which they disagree most."""

from __future__ import annotations

import numpy as np
import pandas as pd

from arena.io.battles import Battles, load_battles


def shared_items(human: pd.DataFrame, judge: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both battle tables restricted to the items both of them rated."""
    both = set(human["question_id"].astype(str)) & set(judge["question_id"].astype(str))
    return (human[human["question_id"].astype(str).isin(both)], judge[judge["question_id"].astype(str).isin(both)])


def pair_win_shares(battles: pd.DataFrame) -> pd.DataFrame:
    """Per unordered model pair (``model_1`` < ``model_2``): battles and ``model_1``'s win share (ties = 1/2)."""
    a, b = battles["model_a"].astype(str), battles["model_b"].astype(str)
    first = np.minimum(a, b)
    score_a = battles["winner"].astype(str).map({"model_a": 1.0, "model_b": 0.0}).fillna(0.5)
    score = np.where(a == first, score_a, 1.0 - score_a)
    df = pd.DataFrame({"model_1": first, "model_2": np.maximum(a, b), "score": score})
    return df.groupby(["model_1", "model_2"])["score"].agg(battles="size", share="mean").reset_index()


def compare(human_table: pd.DataFrame, judge_table: pd.DataFrame, human: pd.DataFrame,
            judge: pd.DataFrame) -> dict:
    """Ratings side by side (``model, human, judge``), Spearman's rho and Kendall's tau (scipy) of the two
    rankings, and the model pairs sorted by how far apart the two win shares are (``gap``)."""
    from scipy.stats import kendalltau, spearmanr

    side = human_table.set_index("model")[["rating"]].rename(columns={"rating": "human"}).join(
        judge_table.set_index("model")[["rating"]].rename(columns={"rating": "judge"}), how="inner")
    defined = len(side) > 2 and side["human"].nunique() > 1 and side["judge"].nunique() > 1  # else no ranking
    rho = spearmanr(side["human"], side["judge"]).statistic if defined else float("nan")
    tau = kendalltau(side["human"], side["judge"]).statistic if defined else float("nan")
    pairs = pair_win_shares(human).merge(pair_win_shares(judge), on=["model_1", "model_2"],
                                         suffixes=("_human", "_judge"))
    pairs["gap"] = (pairs["share_human"] - pairs["share_judge"]).abs()
    return {"ratings": side.reset_index(), "spearman": float(rho), "kendall": float(tau),
            "pairs": pairs.sort_values("gap", ascending=False, kind="stable").reset_index(drop=True)}


def as_battles(df: pd.DataFrame, source: str) -> Battles:
    battles = load_battles(df)
    return Battles(battles.df, source, battles.skipped)
