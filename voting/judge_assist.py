"""Judge-assisted (PPI++) leaderboards from a judge file: the one function that the Leaderboard page's
"sharpen with a judge" and ``preflab rank HUMAN --judge-battles JUDGE`` both call.

A judge file is a `preflab judge run` verdict file (both orders combined here, so :mod:`arena` never
imports :mod:`judge`) or any battles file that :func:`arena.data.load_battles` reads. The math is
:func:`arena.ppi_board.ppi_leaderboard` (issue 15).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from arena.data import Battles
from preflab.errors import InputError


def is_verdict_file(path: str | Path) -> bool:
    """A `preflab judge run` JSONL: its first record has ``item_id`` and ``order``."""
    path = Path(path)
    if not path.name.lower().endswith(".jsonl"):
        return False
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    return False
                return isinstance(rec, dict) and "order" in rec and "item_id" in rec
    return False


def verdict_frame(path: str | Path, labels: str = "auto") -> pd.DataFrame:
    """Verdicts as judge rows ``model_a (= x), model_b (= y), question_id (= item_id), p_a, p_b, p_tie``.

    Both orders are averaged: their probabilities (``soft``) or their one-hot verdicts (``hard``; an order
    naming x and one naming y give half each). ``auto`` is soft when the file has probabilities. Pairs with
    no usable order keep NaN and are counted by the PPI fit.
    """
    from judge.datasets import load_verdicts_jsonl
    from judge.outcomes import TIE, X, Y

    pairs = load_verdicts_jsonl(path)
    for col in ("model_x", "model_y"):
        if (pairs[col] == "").any():
            raise InputError(str(path), None, col, "missing on some rows", "verdict rows need model_x and model_y")
    p_x = pairs[["p_xy", "p_yx"]].to_numpy(float)
    p_t = np.nan_to_num(pairs[["pt_xy", "pt_yx"]].to_numpy(float), nan=0.0)
    soft = labels == "soft" or (labels == "auto" and bool(np.isfinite(p_x).any()))
    if soft:
        probs = np.stack([p_x, 1.0 - p_x - p_t, p_t], axis=-1)  # (pair, order, outcome by identity)
    else:
        code = pairs[["judge_xy", "judge_yx"]].to_numpy(float)
        probs = np.stack([code == X, code == Y, code == TIE], axis=-1).astype(float)
        probs[~np.isin(code, [X, Y, TIE])] = np.nan
    ok = np.isfinite(probs).all(-1, keepdims=True)
    with np.errstate(invalid="ignore"):  # a pair with no usable order: NaN, counted by the fit
        total = np.where(ok, probs, 0.0).sum(axis=1)
        mean = total / ok.sum(axis=1)
    return pd.DataFrame({"model_a": pairs["model_x"], "model_b": pairs["model_y"],
                         "question_id": pairs["item_id"].astype(str), "p_a": mean[:, 0], "p_b": mean[:, 1],
                         "p_tie": mean[:, 2]})


def load_judge(path: str | Path, layout: str = "arena", skip_bad_rows: bool = False,
               labels: str = "auto") -> tuple[Battles | pd.DataFrame, str]:
    """(judge rows, labels to fit with): a verdict file's averaged verdicts (soft), or a battles file."""
    from arena.data import load_battles

    if is_verdict_file(path):
        return verdict_frame(path, labels), "soft"
    return load_battles(Path(path), layout=layout, on_error="skip" if skip_bad_rows else "raise"), labels


def judge_assisted_leaderboard(human: Battles, judge_path: str | Path, *, layout: str = "arena",
                               skip_bad_rows: bool = False, labels: str = "auto", **options: Any) -> pd.DataFrame:
    """The PPI++ leaderboard of ``human`` battles sharpened by the judge file at ``judge_path``.

    ``options`` go to :func:`arena.ppi_board.ppi_leaderboard` (``ci``, ``n_bootstrap``, ``ties``, ``level``,
    ``seed``, scale). The table has the usual columns, ``ess``, the human-only fit on the same votes
    (``rating_human``, ``lower_human``, ``upper_human``) and ``attrs`` with ``lambda``, the item counts and
    ``ess_gain``. Raises :class:`~preflab.errors.InputError` or ``ValueError`` on bad input.
    """
    from arena.ppi_board import ppi_leaderboard

    judge, labels = load_judge(judge_path, layout, skip_bad_rows, labels)
    table = ppi_leaderboard(human, judge, labels=labels, judge_source=str(judge_path), **options)
    if isinstance(judge, Battles) and judge.skipped:
        table.attrs["diagnostics"].insert(0, judge.skip_report())
    return table


def footer(table: pd.DataFrame, judge_name: str) -> str:
    """One line: lambda, human and judge item counts, the effective-sample-size gain."""
    a = table.attrs
    return (f"PPI++ with judge {judge_name}: lambda {a['lambda']:.3f}; {a['n_human_items']:,.0f} human "
            f"items ({a['n_human_votes']:,.0f} votes), {a['n_judge_items']:,.0f} judge items "
            f"({a['n_unlabelled_items']:,.0f} without human votes); ESS gain x{a['ess_gain']:.2f} "
            f"(effective human votes {a['ess_gain'] * a['n_human_votes']:,.0f})")
