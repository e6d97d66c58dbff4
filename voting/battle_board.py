"""Which battle votes the anonymous leaderboard leaves out by default, and how many, by the rules of
:mod:`arena.bt.hygiene`: a battle whose answer said who wrote it (``battles.identity_leak``, see
:mod:`voting.identity`) is not anonymous (:func:`arena.bt.hygiene.anonymous_only`, as FastChat drops such
battles; the export's ``anony`` column says the same, so ``preflab rank --filter anony`` on ``preflab
export-votes --as battles`` leaves out the same votes), and a prompt sent more often than the cap keeps only
its first battles (:func:`arena.bt.hygiene.cap_repeated_prompts`, lmarena's 99.99th-percentile cap unless
``PREFLAB_ARENA_PROMPT_CAP`` sets it). Both kinds of vote stay stored; only the board leaves them out.
"""

from __future__ import annotations

import pandas as pd
from sqlalchemy.engine import Engine

from voting.battles import BATTLE_DATASET
from voting.exports import attach_conversations
from voting.reads import load_votes
from voting.votes import votes_to_battles

CELL_KEYS = ["model_left", "model_right", "outcome", "winner_model"]


def normal_prompt(text: str) -> str:
    """A prompt as compared for repeats: case-folded, runs of white space as one space, trimmed."""
    return " ".join(str(text).split()).casefold()


def left_out_votes(engine: Engine, voters: list[str] | None = None, since: float | None = None,
                   until: float | None = None, prompt_cap: int | None = None) -> tuple[pd.DataFrame, list[str]]:
    """The battle votes (with the same filters as :func:`voting.reads.load_votes`) the anonymous board leaves
    out, and one sentence per rule that left any out."""
    from arena.bt.hygiene import anonymous_only, cap_repeated_prompts

    votes = load_votes(engine, BATTLE_DATASET, voters, since, until)
    if votes.empty:
        return votes, []
    if prompt_cap is None:
        from voting.config import config_from_env

        prompt_cap = config_from_env().arena_prompt_cap
    battles = votes_to_battles(attach_conversations(engine, votes))  # anony: false where an answer named a model
    df = battles.df.copy()
    convs = df["conversation_a"] if "conversation_a" in df else [None] * len(df)
    df["prompt"] = [normal_prompt(conv[0]["content"]) if isinstance(conv, list) and conv else str(q)
                    for conv, q in zip(convs, df["question_id"], strict=True)]
    anonymous, _ = anonymous_only(battles.with_df(df))
    kept, _ = cap_repeated_prompts(anonymous, prompt_cap)
    df = battles.df
    named, repeated = len(df) - len(anonymous.df), len(anonymous.df) - len(kept.df)
    notes = []
    if named:
        notes.append(f"{named:,} battle votes left out: an answer named a model, its maker or its persona "
                     "(the voter may have known who answered).")
    if repeated:
        cap = prompt_cap or "the 99.99th-percentile"
        notes.append(f"{repeated:,} battle votes left out: their prompt was sent more often than the cap ({cap} "
                     "battles per prompt).")
    return votes[~votes["id"].isin(kept.df["vote_id"])], notes


def minus_votes(cells: pd.DataFrame, votes: pd.DataFrame) -> pd.DataFrame:
    """Leaderboard cells (:func:`voting.reads.pair_outcome_counts`) without these votes."""
    if votes.empty:
        return cells
    out = votes.assign(winner_model=votes["winner_model"].fillna("")).groupby(CELL_KEYS).size().rename("drop")
    merged = cells.assign(winner_model=cells["winner_model"].fillna("")).merge(
        out.reset_index(), on=CELL_KEYS, how="left")
    merged["n"] = merged["n"] - merged["drop"].fillna(0).astype(int)
    merged["winner_model"] = merged["winner_model"].replace("", None)
    return merged.loc[merged["n"] > 0, [*CELL_KEYS, "n"]].reset_index(drop=True)
