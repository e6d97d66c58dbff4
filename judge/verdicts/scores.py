"""Scores as verdicts: a reward model (or any scoring judge) gives each answer a score, not a verdict.

The generic layout, one row per pair (and optionally per order), in JSONL, CSV or Parquet::

    item_id, model_x, model_y, score_x, score_y[, order][, label][, label_source][, judge][, method]

``order`` is ``xy`` (x shown first) or ``yx``; a row without one covers both orders (a reward model scores
each answer alone, so both orders read the same scores). ``label`` is the reference winner (``x``, ``y``,
``tie``, or model_x's / model_y's name) and ``label_source`` says what it is: ``humans`` (the default) or
``correctness`` (objective labels, e.g. JudgeBench). ``method``, when given, is ``score``.

Each (pair, order) reads as a verdict by the Bradley-Terry link a reward model is trained for
(Ouyang et al. 2022; Bradley & Terry 1952): ``P(x wins) = σ((s_x − s_y) / T)``, T = 1, ``P(tie) = 0``;
its winner is x when ``s_x − s_y > tolerance``, y when ``< −tolerance``, a tie otherwise (counted and
reported). :func:`load_scores` returns the judged-pairs table of :mod:`judge.verdicts.judged_pairs` (``judge_xy``,
``p_xy``, ...), so every verdict consumer (calibrate, the card, compare, jury, drift, PPI) takes scores
unchanged; the margins are kept in ``margin_xy`` / ``margin_yx`` for the temperature fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit

from judge.verdicts import score_cells as cells
from judge.verdicts.provenance import describe, require_one_judge
from judge.verdicts.score_cells import HINT, LABEL_SOURCES, REQUIRED
from preflab.errors import InputError, shown
from preflab.io import iter_jsonl
from preflab.outcomes import Outcome

__all__ = ["HINT", "LABEL_SOURCES", "METHOD", "REQUIRED", "ScoreReading", "is_scores_file", "load_scores",
           "score_codes", "score_probability", "score_row", "scores_table"]

#: The ``method`` of a score row (the verdict methods of :mod:`judge.verdicts.parsing` read text or logprobs).
METHOD = "score"


@dataclass(frozen=True)
class ScoreReading:
    """How scores become verdicts: ``P(x wins) = σ((s_x − s_y)/temperature)``; ``|s_x − s_y| ≤ tolerance``
    is a tie."""

    temperature: float = 1.0
    tolerance: float = 0.0

    def __post_init__(self) -> None:
        if not (np.isfinite(self.temperature) and self.temperature > 0):
            raise ValueError(f"temperature must be a positive number, not {self.temperature!r}")
        if not (np.isfinite(self.tolerance) and self.tolerance >= 0):
            raise ValueError(f"the tie margin (tolerance) must be a number >= 0, not {self.tolerance!r}")


def score_probability(margin: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """P(x wins) = σ(margin / T) for margins ``s_x − s_y`` (the Bradley-Terry link; NaN stays NaN)."""
    return expit(np.asarray(margin, dtype=float) / temperature)


def score_codes(margin: np.ndarray, tolerance: float = 0.0) -> np.ndarray:
    """Identity codes of margins ``s_x − s_y``: FIRST above ``tolerance``, SECOND below ``−tolerance``, else TIE
    (NaN stays NaN)."""
    m = np.asarray(margin, dtype=float)
    code = np.where(m > tolerance, Outcome.FIRST, np.where(m < -tolerance, Outcome.SECOND, Outcome.TIE))
    return np.where(np.isnan(m), np.nan, code.astype(float))


def is_scores_file(path: str | Path) -> bool:
    """True for a file in the scores layout: a CSV whose header or a Parquet file whose schema names
    ``score_x``, or a JSONL file whose first row has ``score_x`` / ``score_y`` or says ``method: score``."""
    path = Path(path)
    name = path.name.lower()
    if path.is_dir() or not path.is_file():
        return False
    if name.endswith(".csv"):
        with path.open("rb") as f:
            return b"score_x" in f.readline()
    if name.endswith((".parquet", ".pq")):
        try:
            import pyarrow.parquet as pq

            return "score_x" in pq.read_schema(path).names
        except Exception:  # noqa: BLE001  (not Parquet: the reader that takes it reports why)
            return False
    try:
        for _, rec in iter_jsonl(path):
            return "score_x" in rec or "score_y" in rec or rec.get("method") == METHOD
    except InputError:
        return False  # the verdict reader reports the bad line
    return False


def _pair_ids(names: dict[str, pd.Series]) -> np.ndarray:
    """A pair number per row, in the order pairs first appear."""
    return pd.DataFrame(names).groupby(list(names), sort=False).ngroup().to_numpy()


def _check_answers(item: pd.Series, model_x: pd.Series, model_y: pd.Series, sx: np.ndarray, sy: np.ndarray,
                   lines: np.ndarray, source: str) -> None:
    """An answer (item, model) scored twice with different values in rows without an order is an input error:
    a reward model scores each answer once. Checked on integer codes: (item, model) -> one key, sorted once."""
    items = np.tile(pd.factorize(item)[0], 2).astype(np.int64)
    models, _ = pd.factorize(pd.concat([model_x, model_y], ignore_index=True))
    key = items * (int(models.max()) + 1) + models
    score = np.concatenate([sx, sy])
    order = np.argsort(key, kind="stable")
    k, v = key[order], score[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    spread = np.maximum.reduceat(v, starts) != np.minimum.reduceat(v, starts)
    if not spread.any():
        return
    n = len(item)
    bad = np.flatnonzero(np.repeat(spread, np.diff(np.r_[starts, k.size])))
    group = order[bad]  # entries of answers scored differently; report the latest line against the first
    first_line = {}
    for e in sorted(group, key=lambda e: (lines[e % n], e >= n)):
        g = key[e]
        if g not in first_line:
            first_line[g] = e
        elif score[e] != score[first_line[g]]:
            a = first_line[g]
            who = (item.iloc[e % n], (model_x if e < n else model_y).iloc[e % n])
            field = "score_x" if e < n else "score_y"
            raise InputError(source, int(lines[e % n]), field, f"answer ({who[0]!r}, {who[1]!r}) scored "
                             f"{shown(score[e])} here and {shown(score[a])} on line {int(lines[a % n])}",
                             "score each answer once, or give each row its order")


@dataclass
class _Rows:
    """One entry per (row, order): rows without an order give an xy and a yx entry."""

    pair: np.ndarray
    order: np.ndarray
    sx: np.ndarray
    sy: np.ndarray
    line: np.ndarray
    label: np.ndarray
    row: np.ndarray


def _entries(frame: pd.DataFrame, lines: np.ndarray, present: dict, source: str) -> tuple[dict, _Rows]:
    names = {c: cells.names(frame, c, present[c], source, lines) for c in ("item_id", "model_x", "model_y")}
    cells.fail(source, lines, (names["model_x"] == names["model_y"]).to_numpy(), "model_y",
               lambda i: f"model_y equals model_x ({names['model_x'].iloc[i]!r})",
               "each pair compares two different models")
    sx = cells.numbers(frame, "score_x", present["score_x"], source, lines)
    sy = cells.numbers(frame, "score_y", present["score_y"], source, lines)
    if "method" in frame:
        method = frame["method"].fillna("").astype(str)
        cells.fail(source, lines, ~method.isin(["", METHOD]).to_numpy(), "method",
                   lambda i: f"{shown(method.iloc[i])} in a scores file", "score rows say method: score")
    order = cells.orders(frame, source, lines)
    label = cells.labels(frame, names["model_x"], names["model_y"], source, lines)
    both = order == 2
    if both.any():
        _check_answers(names["item_id"][both], names["model_x"][both], names["model_y"][both], sx[both], sy[both],
                       lines[both], source)
    pair = _pair_ids(names)
    idx = np.concatenate([np.flatnonzero(~both), np.flatnonzero(both), np.flatnonzero(both)])
    order_e = np.concatenate([order[~both], np.zeros(both.sum(), np.int8), np.ones(both.sum(), np.int8)])
    idx_sorted = np.argsort(idx, kind="stable")  # file order: a row's entries stay together
    idx, order_e = idx[idx_sorted], order_e[idx_sorted]
    return names, _Rows(pair[idx], order_e, sx[idx], sy[idx], lines[idx], label[idx], idx)


def _dedupe(e: _Rows, names: dict, source: str) -> tuple[np.ndarray, int]:
    """The first entry of each (pair, order); a repeat with other scores is refused, one with the same counted."""
    key = e.pair.astype(np.int64) * 2 + e.order
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    firsts = first[inverse.ravel()]
    repeat = firsts != np.arange(key.size)
    differs = repeat & ((e.sx != e.sx[firsts]) | (e.sy != e.sy[firsts]))
    if differs.any():
        k = int(np.argmax(differs))
        r, f = e.row[k], firsts[k]
        field = "score_x" if e.sx[k] != e.sx[f] else "score_y"
        who = tuple(names[c].iloc[r] for c in ("item_id", "model_x", "model_y"))
        raise InputError(source, int(e.line[k]), field, f"pair {who} order {('xy', 'yx')[e.order[k]]} scored again "
                         f"with different values (first on line {int(e.line[f])})", "give each (pair, order) one row")
    return first, int(repeat.sum())


def _pair_labels(e: _Rows, n_pairs: int, names: dict, source: str) -> np.ndarray:
    """One label per pair (the rows of a pair must not disagree); NaN when none is given."""
    ok = ~np.isnan(e.label)
    lo, hi = np.full(n_pairs, np.inf), np.full(n_pairs, -np.inf)
    np.minimum.at(lo, e.pair[ok], e.label[ok])
    np.maximum.at(hi, e.pair[ok], e.label[ok])
    clash = ok & (lo[e.pair] != hi[e.pair])
    if clash.any():
        k = len(clash) - 1 - int(np.argmax(clash[::-1]))
        who = tuple(names[c].iloc[e.row[k]] for c in ("item_id", "model_x", "model_y"))
        raise InputError(source, int(e.line[k]), "label", f"pair {who} has different labels on different rows",
                         "give each pair one label")
    return np.where(np.isfinite(lo), lo, np.nan)


def scores_table(frame: pd.DataFrame, source: str, reading: ScoreReading = ScoreReading(), *,
                 lines: np.ndarray | None = None, present: dict[str, np.ndarray] | None = None,
                 label_source: str | None = None, allow_mixed: bool = False) -> pd.DataFrame:
    """Score rows in the generic layout (a frame) as the judged-pairs table of :mod:`judge.verdicts.judged_pairs`.

    ``lines`` numbers the rows for error messages (default 1, 2, ...); ``present`` says which required cells
    were given (default: not null). ``label_source`` overrides the rows' ``label_source`` (``correctness`` for
    objective labels). Columns: ``item_id, model_x, model_y, judge_xy, judge_yx, p_xy, p_yx, pt_xy, pt_yx,
    margin_xy, margin_yx`` and ``human`` when labelled; ``attrs``: ``source, notes, settings, provenance,
    label_source, orders, scores`` (temperature, tolerance, tie count).
    """
    if len(frame) == 0:
        raise InputError(source, None, None, "no score rows", HINT)
    frame = frame.reset_index(drop=True)
    lines = np.arange(1, len(frame) + 1) if lines is None else np.asarray(lines)
    if present is None:
        present = {c: frame[c].notna().to_numpy() if c in frame else np.zeros(len(frame), bool) for c in REQUIRED}
    kind = cells.label_source(frame, label_source, source, lines)
    tally = cells.tally(frame, lines)
    mix_notes = require_one_judge(tally, source, allow_mixed)
    names, e = _entries(frame, lines, present, source)
    first, repeats = _dedupe(e, names, source)
    n_pairs = int(e.pair.max()) + 1
    pair_row = np.full(n_pairs, -1)
    pair_row[e.pair[::-1]] = e.row[::-1]  # the first row of each pair
    pairs = pd.DataFrame({c: names[c].to_numpy()[pair_row] for c in ("item_id", "model_x", "model_y")})
    for o, label in ((0, "xy"), (1, "yx")):
        margin = np.full(n_pairs, np.nan)
        take = first[e.order[first] == o]
        margin[e.pair[take]] = e.sx[take] - e.sy[take]
        pairs[f"judge_{label}"] = score_codes(margin, reading.tolerance)
        pairs[f"p_{label}"] = score_probability(margin, reading.temperature)
        pairs[f"pt_{label}"] = np.where(np.isnan(margin), np.nan, 0.0)
        pairs[f"margin_{label}"] = margin
    human = _pair_labels(e, n_pairs, names, source)
    if not np.isnan(human).all():
        pairs["human"] = human
    no_order = bool((cells.orders(frame, source, lines) == 2).all())
    return _finish(pairs, source, reading, tally, mix_notes, repeats, no_order, kind, len(first))


def _finish(pairs: pd.DataFrame, source: str, reading: ScoreReading, tally, mix_notes: list[str], repeats: int,
            no_order: bool, kind: str, n_entries: int) -> pd.DataFrame:
    ties = int(np.sum((pairs[["judge_xy", "judge_yx"]].to_numpy() == Outcome.TIE).any(axis=1)))
    notes = [f"{repeats} repeated (pair, order) rows with the same scores ignored"] if repeats else []
    notes.append(f"scores read as P(x wins) = σ((s_x − s_y)/T) at T = {reading.temperature:g}; |s_x − s_y| ≤ "
                 f"{reading.tolerance:g} is a tie ({ties} pair{'s' if ties != 1 else ''})")
    if no_order:
        notes.append("no order given: each answer scored alone, so both orders read the same scores (no slot, "
                     "no position bias to measure)")
    settings = {"verdict methods": f"{METHOD} {n_entries}"}
    judge_name = tally.single("judge")
    if judge_name:
        settings["judge model"] = describe(tally.values["judge"]) if mix_notes else judge_name
    pairs.attrs.update(source=source, notes=notes + mix_notes, settings={**settings, **tally.settings()},
                       provenance=tally, label_source=kind, orders="none" if no_order else "given",
                       scores={"temperature": reading.temperature, "tolerance": reading.tolerance, "ties": ties})
    return pairs


def load_scores(path: str | Path, reading: ScoreReading = ScoreReading(), *, label_source: str | None = None,
                allow_mixed: bool = False) -> pd.DataFrame:
    """A scores file (JSONL, CSV or Parquet in the generic layout) as the judged-pairs table
    (:func:`scores_table`). Bad rows raise :class:`InputError` naming the file, line and field; none is dropped."""
    path = Path(path)
    frame, lines, present = cells.read_frame(path)
    return scores_table(frame, str(path), reading, lines=lines, present=present, label_source=label_source,
                        allow_mixed=allow_mixed)


def score_row(item_id: str, model_x: str, model_y: str, score_x: float, score_y: float, **extra) -> dict:
    """One row of the generic layout as a reward-model run writes it (no order: the scores cover both)."""
    return {"item_id": item_id, "model_x": model_x, "model_y": model_y, "score_x": score_x, "score_y": score_y,
            "method": METHOD, **extra}
