"""Judge verdicts (and the humans' votes beside them) as arena input: the one place where a judged pair
(outcomes by identity, :mod:`judge.verdicts.judged_pairs`) becomes a Chatbot Arena battle or a PPI judge row.

:func:`identity_battles` is the converter; :func:`verdict_battles` (each order judged is a battle) and
:func:`human_battles` (each human vote is one) call it on the table's columns, and the runner's combined
table (:func:`judge.verdicts.pairs.combined_table`) goes through it with its ``winner`` names read by
:data:`preflab.outcomes.IDENTITY_LABELS`. :func:`judge_rows` keeps the judge's probabilities instead.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judge.verdicts.judged_pairs import annotator_columns, column, swap_sides
from preflab.errors import InputError
from preflab.outcomes import BATTLE_LABELS, Outcome

BATTLE_COLUMNS = ["model_a", "model_b", "winner", "question_id"]


def identity_battles(pairs: pd.DataFrame, codes: np.ndarray | pd.Series, judge: str | None = None) -> pd.DataFrame:
    """Rows of a table keyed by ``item_id, model_x, model_y`` with one identity outcome code each
    (:class:`~preflab.outcomes.Outcome`, by x/y), as battles ``model_a (= x), model_b, winner, question_id``
    (and ``judge`` when given). Rows without a winner (NaN, unparsable) are left out."""
    code = pd.to_numeric(pd.Series(np.asarray(codes, dtype=object), index=pairs.index), errors="coerce")
    ok = code.isin([int(c) for c in Outcome if c != Outcome.UNPARSABLE])
    df = pd.DataFrame({"model_a": pairs.loc[ok, "model_x"].astype(str),
                       "model_b": pairs.loc[ok, "model_y"].astype(str),
                       "winner": code[ok].map(lambda c: BATTLE_LABELS[int(c)]),
                       "question_id": pairs.loc[ok, "item_id"].astype(str)}, columns=BATTLE_COLUMNS)
    if judge:
        df["judge"] = judge
    return df.reset_index(drop=True)


def verdict_battles(pairs: pd.DataFrame, judge: str = "judge") -> pd.DataFrame:
    """Verdicts (:func:`judge.metrics.adapters.load_verdicts_jsonl`: ``judge_xy``/``judge_yx`` identity codes) as
    battles, one per order judged: the model shown first is ``model_a``. Unparsed verdicts are left out."""
    shown_y_first = pairs.rename(columns={"model_x": "model_y", "model_y": "model_x"})
    return pd.concat([identity_battles(pairs, column(pairs, "judge_xy"), judge),
                      identity_battles(shown_y_first, swap_sides(column(pairs, "judge_yx")), judge)],
                     ignore_index=True)


def human_battles(pairs: pd.DataFrame) -> pd.DataFrame:
    """The human votes of a judged-pairs table as battles (``model_a`` = x): one per ``human_k`` vote, or the
    ``human`` label when there are no single-annotator columns. Ties (both kinds) are ties; no vote: no row."""
    cols = annotator_columns(pairs) or (["human"] if "human" in pairs.columns else [])
    frames = [identity_battles(pairs, np.where(column(pairs, c) == Outcome.TIE_BOTHBAD, Outcome.TIE, column(pairs, c)))
              for c in cols]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=BATTLE_COLUMNS)


def judge_rows(pairs: pd.DataFrame, labels: str = "auto", source: str = "<verdicts>") -> pd.DataFrame:
    """Judged pairs (:mod:`judge.verdicts.judged_pairs`) as judge rows ``model_a (= x), model_b (= y), question_id
    (= item_id), p_a, p_b, p_tie``.

    Both orders are averaged: their probabilities (``soft``) or their one-hot verdicts (``hard``; an order
    naming x and one naming y give half each). ``auto`` is soft when the file has probabilities. Pairs with
    no usable order keep NaN and are counted by the PPI fit.
    """
    for col in ("model_x", "model_y"):
        if col not in pairs.columns or (pairs[col].astype(str) == "").any():
            raise InputError(source, None, col, "missing on some rows", "verdict rows need model_x and model_y")
    p_x = np.stack([column(pairs, "p_xy"), column(pairs, "p_yx")], axis=1)
    p_t = np.nan_to_num(np.stack([column(pairs, "pt_xy"), column(pairs, "pt_yx")], axis=1), nan=0.0)
    soft = labels == "soft" or (labels == "auto" and bool(np.isfinite(p_x).any()))
    if soft:
        probs = np.stack([p_x, 1.0 - p_x - p_t, p_t], axis=-1)  # (pair, order, outcome by identity)
    else:
        code = np.stack([column(pairs, "judge_xy"), column(pairs, "judge_yx")], axis=1)
        probs = np.stack([code == Outcome.FIRST, code == Outcome.SECOND, code == Outcome.TIE], axis=-1).astype(float)
        probs[~np.isin(code, [Outcome.FIRST, Outcome.SECOND, Outcome.TIE])] = np.nan
    ok = np.isfinite(probs).all(-1, keepdims=True)
    with np.errstate(invalid="ignore"):  # a pair with no usable order: NaN, counted by the fit
        mean = np.where(ok, probs, 0.0).sum(axis=1) / ok.sum(axis=1)
    return pd.DataFrame({"model_a": pairs["model_x"].astype(str).to_numpy(),
                         "model_b": pairs["model_y"].astype(str).to_numpy(),
                         "question_id": pairs["item_id"].astype(str).to_numpy(), "p_a": mean[:, 0],
                         "p_b": mean[:, 1], "p_tie": mean[:, 2]})
