"""Judge-assisted (PPI++) leaderboards from a judge file: the one function that the Leaderboard page's
"sharpen with a judge" and ``preflab rank HUMAN --judge-battles JUDGE`` both call.

A judge file is a `preflab judge run` verdict file (both orders combined here, so :mod:`arena` never
imports :mod:`judge`) or any battles file that :func:`arena.io.battles.load_battles` reads. The math is
:func:`arena.ppi.board.ppi_leaderboard`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from arena.io.battles import Battles
from judge_arena.battles_from_verdicts import human_battles, judge_rows
from preflab.errors import InputError

if TYPE_CHECKING:  # the options module loads JAX; the app imports this module before any fit
    from arena.bt.likelihood import Ties
    from arena.leaderboard_options import EloScale, IntervalOptions


def is_verdict_file(path: str | Path) -> bool:
    """A `preflab judge run` JSONL: its first record has ``item_id`` and ``order``."""
    path = Path(path)
    from judge.verdicts.scores import is_scores_file

    if is_scores_file(path):  # a reward model's scores: read as verdicts (judge.verdicts.scores)
        return True
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


def verdict_frame(path: str | Path, labels: str = "auto", allow_mixed: bool = False) -> pd.DataFrame:
    """A verdict file's judge rows (:func:`judge_rows` of :func:`judge.metrics.adapters.load_verdicts_jsonl`, which
    refuses files mixing judges, model versions or rubric texts unless ``allow_mixed``; the mix is then in
    ``attrs["notes"]``)."""
    from judge.metrics.adapters import load_verdicts_jsonl

    pairs = load_verdicts_jsonl(path, allow_mixed)
    rows = judge_rows(pairs, labels, str(path))
    rows.attrs["notes"] = list(pairs.attrs.get("notes", []))
    return rows


def load_judge(path: str | Path, layout: str = "arena", skip_bad_rows: bool = False,
               labels: str = "auto", allow_mixed: bool = False) -> tuple[Battles | pd.DataFrame, str]:
    """(judge rows, labels to fit with): a verdict file's averaged verdicts (soft), or a battles file."""
    from arena.io.battles import load_battles

    if is_verdict_file(path):
        return verdict_frame(path, labels, allow_mixed), "soft"
    return load_battles(Path(path), layout=layout, on_error="skip" if skip_bad_rows else "raise"), labels


def judge_assisted_leaderboard(human: Battles, judge_path: str | Path, *, layout: str = "arena",
                               skip_bad_rows: bool = False, labels: str = "auto", allow_mixed: bool = False,
                               intervals: IntervalOptions | None = None, ties: Ties = "half",
                               scale: EloScale | None = None) -> pd.DataFrame:
    """The PPI++ leaderboard of ``human`` battles sharpened by the judge file at ``judge_path``.

    ``intervals``, ``ties`` and ``scale`` are those of :func:`arena.ppi.board.ppi_leaderboard` (None: its
    defaults). The table has the usual columns,
    ``ess``, the human-only fit on the same votes
    (``rating_human``, ``lower_human``, ``upper_human``) and ``attrs`` with ``lambda``, the item counts and
    ``ess_gain``. Raises :class:`~preflab.errors.InputError` or ``ValueError`` on bad input.
    """
    from arena.leaderboard_options import EloScale, IntervalOptions
    from arena.ppi.board import ppi_leaderboard

    judge, labels = load_judge(judge_path, layout, skip_bad_rows, labels, allow_mixed)
    table = ppi_leaderboard(human, judge, labels=labels, judge_source=str(judge_path),
                            intervals=intervals or IntervalOptions(), ties=ties, scale=scale or EloScale())
    if isinstance(judge, pd.DataFrame):
        table.attrs["diagnostics"][:0] = judge.attrs.get("notes", [])  # e.g. the judges pooled by allow_mixed
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


# ------------------------------------------------------------------------------ the judge card's PPI gain


def judge_ppi_gain(pairs: pd.DataFrame, labels: str = "auto", ties: str = "half") -> dict | None:
    """How much a PPI++ Bradley-Terry leaderboard would gain from this judge: the effective-sample-size gain
    with unlimited judge verdicts on items like these (the judge card's "PPI gain", beside kappa).

    The labelled set is the table's pairs with human votes and a judge label; the statistic is
    :func:`arena.ppi.gain.unlimited_judge_gain` (the PPI++ variance ratio with N/n -> infinity). For a single
    mean it is the control-variate factor 1 / (1 - rho^2) (Chaganty, Mussmann, Liang 2018, "The price of
    debiasing automatic metrics"): the score correlation that counts is within a model pair (a judge that only
    knows which model is better overall gives a BT leaderboard nothing). A finite number N of judge-only
    items gives ``1 / (1 - (1 - gain^-1) N / (n + N))`` at the same lam.

    Returns ``{"gain", "unbounded", "lambda", "n_items", "n_votes"}``, or None without models, human votes or two
    labelled items (no BT fit).
    """
    from arena.io.battles import load_battles
    from arena.ppi.board import build_items
    from arena.ppi.gain import unlimited_judge_gain

    if not {"model_x", "model_y", "item_id"} <= set(pairs.columns):
        return None
    human = human_battles(pairs)
    if len(human) < 2 or len(set(human["model_a"]) | set(human["model_b"])) < 2:
        return None
    items, _ = build_items(load_battles(human), judge_rows(pairs, labels), "soft")
    if items.n_labelled < 2:
        return None
    gain, lam = unlimited_judge_gain(items, ties)
    return {"gain": gain, "unbounded": not np.isfinite(gain), "lambda": lam, "n_items": float(items.n_labelled),
            "n_votes": float((items.l_human.sum(1) * items.l_mult).sum())}


def calibration_report(pairs: pd.DataFrame, **calibrate_kw: Any) -> dict:
    """:func:`judge.metrics.calibrate.calibrate` with the judge card's PPI gain (:func:`judge_ppi_gain`, a BT fit, so
    it is added here, above judge/): the one report ``preflab judge calibrate`` and the app's calibration page
    show. ``ppi_gain`` is None without human labels, or when the fit fails (a note then says why)."""
    from judge.metrics.calibrate import calibrate

    report = calibrate(pairs, **calibrate_kw)
    report["ppi_gain"] = None
    if report.get("agreement"):
        try:
            report["ppi_gain"] = judge_ppi_gain(pairs)
        except (InputError, ValueError) as e:
            report["notes"].append(f"PPI gain not computed: {e}")
    return report
