"""Stored votes -> the formats others read: Chatbot Arena battles, the seed's ``judge_labels.csv``,
inter-annotator agreement; and seeding a store with the bundled demo data."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from arena.io.battles import Battles, load_battles, write_battles
from preflab.outcomes import BATTLE_LABELS, Outcome
from voting.items import load_items
from voting.reads import list_datasets
from voting.writes import import_battles, import_items


def vote_codes(votes: pd.DataFrame) -> np.ndarray:
    """Each stored vote as an :class:`preflab.outcomes.Outcome` code with the left answer first (the one
    place a stored vote becomes an outcome: battles, exports and pair assignment all read it)."""
    return np.select([votes["winner_model"] == votes["model_left"], votes["winner_model"] == votes["model_right"],
                      votes["outcome"] == BATTLE_LABELS[Outcome.TIE]],
                     [Outcome.FIRST, Outcome.SECOND, Outcome.TIE], Outcome.TIE_BOTHBAD).astype(np.int8)


def votes_to_battles(votes: pd.DataFrame, source: str = "<votes>") -> Battles:
    """Stored votes as Chatbot Arena battles: left side = ``model_a``, ``judge`` = voter, ``question_id`` = item;
    ``anony`` is false for a live battle whose answer named a model (``identity_leak``, when attached:
    :func:`voting.exports.attach_conversations`), so ``rank --filter anony`` leaves it out."""
    winner = np.asarray(BATTLE_LABELS, dtype=object)[vote_codes(votes)]
    anony = votes["identity_leak"].isna().to_numpy() if "identity_leak" in votes else True
    df = pd.DataFrame({
        "model_a": votes["model_left"], "model_b": votes["model_right"], "winner": winner,
        "judge": votes["voter"], "question_id": votes["item_id"], "tstamp": votes["voted_at"].astype(float),
        "anony": anony, "dataset": votes["dataset"], "vote_id": votes["id"],
    })
    if "category" in votes and votes["category"].notna().any():
        df["category"] = votes["category"]
    if "conv_metadata" in votes and votes["conv_metadata"].notna().any():
        df["conv_metadata"] = [json.loads(m) if isinstance(m, str) else None for m in votes["conv_metadata"]]
    for side in ("conversation_a", "conversation_b"):  # live battles' own conversations, when attached
        if side in votes and votes[side].notna().any():
            df[side] = votes[side].to_numpy()
    battles = load_battles(df)
    return Battles(battles.df, source, battles.skipped)


def style_meta(answer_left: str, answer_right: str) -> dict[str, float]:
    """Style totals of the two answers shown (left = a) in Chatbot Arena's ``conv_metadata`` keys, via
    :func:`arena.style.features.totals_from_text` (length in characters), so style control works on app votes."""
    from arena.style.features import totals_from_text

    return {k: float(v) for k, v in totals_from_text([answer_left], [answer_right]).iloc[0].items()}


def identity_labels(votes: pd.DataFrame) -> pd.DataFrame:
    """Each vote as ``item_id, model_a, model_b, voter, label`` with ``model_a`` < ``model_b`` (sorted pair)
    and ``label`` by identity: "A" (model_a won), "B" or "tie" (both tie kinds)."""
    a = votes[["model_left", "model_right"]].min(axis=1)
    b = votes[["model_left", "model_right"]].max(axis=1)
    label = pd.Series("tie", index=votes.index)
    label[votes["winner_model"] == a] = "A"
    label[votes["winner_model"] == b] = "B"
    return pd.DataFrame({"item_id": votes["item_id"], "model_a": a, "model_b": b, "voter": votes["voter"],
                         "label": label})


def judge_labels(votes: pd.DataFrame) -> pd.DataFrame:
    """Human labels in the seed's ``judge_labels.csv`` layout, one row per (item, model pair).

    ``human`` is the majority vote by identity: "A" (``model_a``, the alphabetically first model of the
    pair), "B" or "tie" (both tie kinds; a split majority is a tie). ``verdict_ab``/``verdict_ba`` are left
    empty for a judge to fill; ``n_votes`` and ``agreement`` (share of votes equal to the majority) follow.
    """
    cols = ["item_id", "verdict_ab", "verdict_ba", "human", "model_a", "model_b", "n_votes", "agreement"]
    if votes.empty:
        return pd.DataFrame(columns=cols)
    lab = identity_labels(votes)
    tab = pd.crosstab([lab["item_id"], lab["model_a"], lab["model_b"]], lab["label"])
    tab = tab.reindex(columns=["A", "B", "tie"], fill_value=0)
    top = tab.max(axis=1)
    unique_top = (tab.to_numpy() == top.to_numpy()[:, None]).sum(axis=1) == 1
    out = tab.index.to_frame(index=False)
    out["verdict_ab"], out["verdict_ba"] = "", ""
    out["human"] = np.where(unique_top, tab.idxmax(axis=1).to_numpy(), "tie")
    out["n_votes"] = tab.sum(axis=1).to_numpy()
    out["agreement"] = (top / tab.sum(axis=1)).round(3).to_numpy()
    if "category" in votes:  # the item's category, kept in every export
        cats = votes.drop_duplicates("item_id").set_index("item_id")["category"]
        out["category"] = out["item_id"].map(cats)
        cols = [*cols, "category"]
    return out[cols]


LABEL_CODES: dict[str, float] = {"A": float(Outcome.FIRST), "B": float(Outcome.SECOND), "tie": float(Outcome.TIE)}


def rating_matrix(votes: pd.DataFrame) -> pd.DataFrame:
    """Units (item, model pair) x voters of identity labels coded A=0, B=1, tie=2 (NaN = not rated);
    a voter's later vote on the same unit (another round) replaces the earlier one."""
    lab = identity_labels(votes)
    lab["code"] = lab["label"].map(LABEL_CODES)
    return lab.pivot_table(index=["item_id", "model_a", "model_b"], columns="voter", values="code", aggfunc="last")


def agreement(votes: pd.DataFrame) -> dict[str, float]:
    """Inter-annotator agreement on units (item, model pair) rated by at least two voters: their number,
    pairwise percent agreement, Fleiss' kappa and Krippendorff's alpha (nominal over A/B/tie), computed by
    :mod:`judge.metrics.agreement`."""
    from judge import fleiss_kappa, krippendorff_alpha_nominal

    nan = float("nan")
    ratings = rating_matrix(votes).to_numpy(float) if len(votes) else np.zeros((0, 0))
    rated = (~np.isnan(ratings)).sum(axis=1) if ratings.size else np.zeros(0)
    ratings = ratings[rated >= 2] if ratings.size else ratings
    if len(ratings) == 0:
        return {"units": 0, "percent_agreement": nan, "fleiss_kappa": nan, "krippendorff_alpha": nan}
    counts = np.stack([(ratings == c).sum(axis=1) for c in LABEL_CODES.values()], axis=1)
    m = counts.sum(axis=1)
    pct = float((counts * (counts - 1)).sum() / (m * (m - 1)).sum())
    return {"units": len(ratings), "percent_agreement": pct, "fleiss_kappa": fleiss_kappa(ratings),
            "krippendorff_alpha": krippendorff_alpha_nominal(ratings)}


EXPORTS: dict[str, str] = {"battles": "Chatbot Arena battles (JSON)", "votes": "every vote column (CSV)",
                           "labels": "the seed's judge_labels.csv"}


def export_bytes(votes: pd.DataFrame, kind: str) -> bytes:
    """The votes as ``battles`` (Chatbot Arena JSON), ``votes`` (CSV, every column) or ``labels``
    (``judge_labels.csv``)."""
    from preflab.io import safe_csv_bytes

    if kind == "votes":
        return safe_csv_bytes(votes)
    if kind == "labels":
        return safe_csv_bytes(judge_labels(votes))
    if kind != "battles":
        raise ValueError(f"unknown export {kind!r}; use one of {list(EXPORTS)}")
    with tempfile.TemporaryDirectory() as tmp:
        return write_battles(votes_to_battles(votes), Path(tmp) / "battles.json").read_bytes()


def seed_demo(engine: Engine, items_path: str | Path, battles_path: str | Path | None,
              dataset: str = "demo") -> tuple[int, int]:
    """Import the demo items and battles once (running it again adds nothing); returns (items, votes) added."""
    n_items = 0
    if dataset not in list_datasets(engine):
        n_items = import_items(engine, load_items(items_path), dataset)
    n_votes = 0
    if battles_path is not None and Path(battles_path).exists():
        n_votes = import_battles(engine, load_battles(battles_path), dataset, source=f"seed:{Path(battles_path).name}")
    return n_items, n_votes


def vote_labels(votes: pd.DataFrame) -> pd.DataFrame:
    """Votes as labels by (item, model pair): ``human`` (the majority by identity, a split is a tie; what
    ``preflab export-votes --as labels`` writes) and single voters ``human_1`` … ``human_k`` (a voter's latest
    vote, as in :func:`rating_matrix`)."""
    labels = judge_labels(votes)[["item_id", "model_a", "model_b", "human"]]
    if len(votes):
        names = {code: label for label, code in LABEL_CODES.items()}
        ratings = rating_matrix(votes).reindex(pd.MultiIndex.from_frame(labels[["item_id", "model_a", "model_b"]]))
        singles = [[names[c] for c in row[~np.isnan(row)]] for row in ratings.to_numpy(float)]
        width = max((len(r) for r in singles), default=0)
        for k in range(width):
            labels[f"human_{k + 1}"] = [r[k] if k < len(r) else "" for r in singles]
    return labels
