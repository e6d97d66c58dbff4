"""``preflab rank HUMAN --judge-battles JUDGE``: the judge-assisted (PPI++) leaderboard.

The only place that reads judge verdict files for the arena: a `preflab judge run` verdict file (both
orders combined) becomes a battles-like frame here, so :mod:`arena` never imports :mod:`judge`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from preflab.errors import InputError


def is_verdict_file(path: Path) -> bool:
    """A `preflab judge run` JSONL: its first record has ``item_id`` and ``order``."""
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


def verdict_frame(path: Path, labels: str = "auto") -> pd.DataFrame:
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
    mean = np.nanmean(np.where(np.isfinite(probs).all(-1, keepdims=True), probs, np.nan), axis=1)
    return pd.DataFrame({"model_a": pairs["model_x"], "model_b": pairs["model_y"],
                         "question_id": pairs["item_id"].astype(str), "p_a": mean[:, 0], "p_b": mean[:, 1],
                         "p_tie": mean[:, 2]})


def rank_with_judge(battles, judge_path: Path, *, layout: str, skip_bad_rows: bool, labels: str, ci: str,
                    bootstrap: int, ties: str, level: float, seed: int, scale: float, base: float, init: float,
                    output: Path | None, top: int | None) -> None:
    """Fit and print the PPI++ leaderboard; the usual table plus ``ess`` and a footer (lambda, items, gain)."""
    import warnings

    from arena.ppi_board import ppi_leaderboard
    from arena.rank_output import rich_table
    from preflab.cli.arena_cmds import load_or_exit
    from preflab.cli.common import console, err, fail
    from preflab.io import write_table

    try:
        if is_verdict_file(judge_path):
            judge = verdict_frame(judge_path, labels)
            labels = "soft"
        else:
            judge = load_or_exit(judge_path, layout, skip_bad_rows)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            table = ppi_leaderboard(battles, judge, ci=ci, n_bootstrap=bootstrap, ties=ties, level=level,  # type: ignore[arg-type]
                                    seed=seed, labels=labels, scale=scale, base=base, init=init,
                                    judge_source=str(judge_path))
    except (InputError, ValueError) as e:
        fail(e)
    for w in caught:
        err.print(f"[yellow]warning:[/yellow] {w.message}", highlight=False)
    for note in table.attrs["diagnostics"]:
        err.print(f"[yellow]note:[/yellow] {note}", highlight=False)
    console.print(rich_table(table, top))
    a = table.attrs
    console.print(f"PPI++ with judge {judge_path.name}: lambda {a['lambda']:.3f}; {a['n_human_items']:,.0f} human "
                  f"items ({a['n_human_votes']:,.0f} votes), {a['n_judge_items']:,.0f} judge items "
                  f"({a['n_unlabelled_items']:,.0f} without human votes); ESS gain x{a['ess_gain']:.2f} "
                  f"(effective human votes {a['ess_gain'] * a['n_human_votes']:,.0f})", highlight=False,
                  soft_wrap=True)
    if output:
        err.print(f"wrote {write_table(table, output, meta_key='leaderboard')}")
