"""Per-voter statistics of a labelling round and the vote browser's filter: what an organiser reads to spot
a voter who clicks without reading (many fast votes, a short median time, a high tie rate, low agreement
with the others).

Pure functions over the store's frames (:func:`voting.store.load_votes`, :func:`load_skips`); the Data page
shows them (:mod:`voting.pages.data_admin`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from preflab.outcomes import VOTE_CHOICES
from voting.tables import skips_t
from voting.votes import identity_labels, vote_codes

#: A vote cast sooner than this after its pair was shown counts as fast (too little time to read two answers).
FAST_SECONDS = 4.0
STAT_COLUMNS = ["voter", "votes", "median_s", "tie_rate", "bothbad_rate", "skips", "skip_rate",
                "agree_with_others", "shared_units", "fast_votes"]
#: What the voter clicked, by stored outcome code (A = the left answer).
CLICKED = {int(code): choice for choice, code in VOTE_CHOICES.items()}


def load_skips(engine: Engine, dataset: str | None = None) -> pd.DataFrame:
    """Stored skips (``voter, dataset, item_id, round, skipped_at``), optionally of one dataset."""
    c = skips_t.c
    q = sa.select(c.voter, c.dataset, c.item_id, c.round, c.skipped_at)
    if dataset is not None:
        q = q.where(c.dataset == dataset)
    with engine.connect() as conn:
        rows = conn.execute(q).fetchall()
    return pd.DataFrame(rows, columns=["voter", "dataset", "item_id", "round", "skipped_at"])


def clicked(votes: pd.DataFrame) -> pd.Series:
    """What each vote's voter clicked: "A" (the left answer), "B", "tie" or "bothbad"."""
    return pd.Series([CLICKED[int(c)] for c in vote_codes(votes)], index=votes.index, dtype=object)


def majority_agreement(votes: pd.DataFrame) -> pd.DataFrame:
    """Per voter: on units (item, model pair) that other voters also voted on, how often the voter's label
    (by identity; both tie kinds are a tie) equals the others' strict majority. ``shared_units`` counts the
    units with such a majority (a tie between the others' labels has none and is left out)."""
    lab = identity_labels(votes)
    unit = ["item_id", "model_a", "model_b"]
    lab = lab.drop_duplicates(unit + ["voter"], keep="last")  # a later round's vote replaces the earlier one
    counts = lab.groupby(unit + ["label"]).size().rename("n").reset_index()
    merged = lab.merge(counts, on=unit, suffixes=("", "_other"))
    merged["n"] -= (merged["label"] == merged["label_other"]).astype(int)  # leave the voter's own label out
    merged = merged[merged["n"] > 0]
    rows = []
    for (voter, *_), g in merged.groupby(["voter", *unit], sort=False):
        top = g["n"].max()
        winners = g.loc[g["n"] == top, "label_other"]
        if len(winners) == 1:
            rows.append((voter, winners.iloc[0] == g["label"].iloc[0]))
    if not rows:
        return pd.DataFrame({"agree_with_others": pd.Series(dtype=float), "shared_units": pd.Series(dtype=int)})
    agree = pd.DataFrame(rows, columns=["voter", "agree"]).groupby("voter")["agree"]
    return pd.DataFrame({"agree_with_others": agree.mean(), "shared_units": agree.size()})


def voter_stats(votes: pd.DataFrame, skips: pd.DataFrame | None = None,
                fast_seconds: float = FAST_SECONDS) -> pd.DataFrame:
    """One row per voter (:data:`STAT_COLUMNS`): votes; the median seconds from a pair shown to its vote
    (NaN when no vote has ``shown_at``); the tie and both-bad rates; skips and the skip rate (skips over
    votes plus skips); agreement with the other voters' majority (:func:`majority_agreement`; NaN without
    shared units); votes faster than ``fast_seconds``. Sorted by votes, most first."""
    skips = skips if skips is not None else pd.DataFrame(columns=["voter"])
    voters = sorted(set(votes["voter"]) | set(skips["voter"]))
    if not voters:
        return pd.DataFrame(columns=STAT_COLUMNS)
    v = votes.assign(choice=clicked(votes) if len(votes) else pd.Series(dtype=object),
                     seconds=pd.to_numeric(votes["voted_at"]) - pd.to_numeric(votes["shown_at"]))
    g = v.groupby("voter")
    out = pd.DataFrame(index=pd.Index(voters, name="voter"))
    out["votes"] = g.size().reindex(voters, fill_value=0)
    out["median_s"] = g["seconds"].median().reindex(voters)
    out["tie_rate"] = g["choice"].apply(lambda c: (c == "tie").mean()).reindex(voters)
    out["bothbad_rate"] = g["choice"].apply(lambda c: (c == "bothbad").mean()).reindex(voters)
    out["skips"] = skips.groupby("voter").size().reindex(voters, fill_value=0)
    out["skip_rate"] = (out["skips"] / (out["votes"] + out["skips"])).astype(float)
    agree = majority_agreement(votes) if len(votes) else pd.DataFrame(columns=["agree_with_others", "shared_units"])
    out["agree_with_others"] = agree["agree_with_others"].reindex(voters).astype(float)
    out["shared_units"] = agree["shared_units"].reindex(voters).fillna(0).astype(int)
    out["fast_votes"] = g["seconds"].apply(lambda s: int((s < fast_seconds).sum())).reindex(voters, fill_value=0)
    out = out.reset_index().sort_values(["votes", "voter"], ascending=[False, True], kind="stable")
    return out[STAT_COLUMNS].reset_index(drop=True)


def filter_votes(votes: pd.DataFrame, *, voter: str | None = None, item_id: str | None = None,
                 model: str | None = None, choice: str | None = None) -> pd.DataFrame:
    """The votes matching every given filter (``model`` on either side; ``choice`` as the voter clicked:
    A, B, tie or bothbad), with a ``choice`` column added."""
    keep = np.ones(len(votes), bool)
    if voter:
        keep &= (votes["voter"] == voter).to_numpy()
    if item_id:
        keep &= (votes["item_id"] == item_id).to_numpy()
    if model:
        keep &= ((votes["model_left"] == model) | (votes["model_right"] == model)).to_numpy()
    out = votes.assign(choice=clicked(votes) if len(votes) else pd.Series(dtype=object))
    if choice:
        keep &= (out["choice"] == choice).to_numpy()
    return out[keep]
