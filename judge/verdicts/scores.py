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
reported). :func:`load_scores` returns the judged-pairs table of :mod:`judge.outcomes` (``judge_xy``,
``p_xy``, ...), so every verdict consumer (calibrate, the card, compare, jury, drift, PPI) takes scores
unchanged; the margins are kept in ``margin_xy`` / ``margin_yx`` for the temperature fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit

from judge.provenance import CARD_FIELDS, MIX_FIELDS, ProvenanceTally, describe, require_one_judge
from preflab.errors import InputError, shown
from preflab.io import iter_jsonl, read_csv, read_parquet
from preflab.outcomes import IDENTITY_LABELS, Outcome

#: The columns every score row needs.
REQUIRED = ("item_id", "model_x", "model_y", "score_x", "score_y")
#: The ``method`` of a score row (the verdict methods of :mod:`judge.verdicts` read text or logprobs).
METHOD = "score"
#: What a label can say the reference is: ``humans`` (votes) or ``correctness`` (objective labels).
LABEL_SOURCES = ("humans", "correctness")
HINT = "score rows need item_id, model_x, model_y, score_x, score_y (see docs/formats.md, 'Scores')"


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


def _read_frame(path: Path) -> tuple[pd.DataFrame, np.ndarray, dict[str, np.ndarray]]:
    """The rows as a frame, each row's line number, and which cells were present (JSONL: key given, not null)."""
    name = path.name.lower()
    if name.endswith((".parquet", ".pq")):
        frame = read_parquet(path)
        lines = np.arange(1, len(frame) + 1)
    elif name.endswith(".csv"):
        frame = read_csv(path, dtype=str, keep_default_na=False)
        lines = np.arange(2, len(frame) + 2)
    else:
        records, numbers = [], []
        for line, rec in iter_jsonl(path, "write one JSON object per line"):
            records.append(rec)
            numbers.append(line)
        frame, lines = pd.DataFrame.from_records(records), np.asarray(numbers)
        present = {c: frame[c].notna().to_numpy() if c in frame else np.zeros(len(frame), bool) for c in REQUIRED}
        for col in ("score_x", "score_y"):  # a JSON NaN literal is present (and not finite); a missing key is not
            if col in frame:
                present[col] = np.array([col in r and r[col] is not None for r in records], dtype=bool)
        return frame, lines, present
    present = {c: (frame[c].notna() & (frame[c].astype(str) != "")).to_numpy() if c in frame
               else np.zeros(len(frame), bool) for c in REQUIRED}
    return frame, lines, present


def _fail(source: str, lines: np.ndarray, bad: np.ndarray, field: str, problem, hint: str) -> None:
    """Raise for the first row where ``bad`` holds (``problem`` may take that row's index)."""
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(source, int(lines[i]), field, problem(i) if callable(problem) else problem, hint)


def _numbers(frame: pd.DataFrame, col: str, present: np.ndarray, source: str, lines: np.ndarray) -> np.ndarray:
    """A score column as finite floats; missing, non-numeric (a JSON string or bool too), NaN and ±inf refused."""
    _fail(source, lines, ~present, col, "missing", "give every row both scores (" + HINT + ")")
    raw = frame[col]
    if not pd.api.types.is_numeric_dtype(raw) or pd.api.types.is_bool_dtype(raw):
        strings = raw.map(lambda v: isinstance(v, (str, bool))).to_numpy() if not _all_text(raw) else None
        if strings is not None:  # JSON: numbers only
            _fail(source, lines, strings, col, lambda i: f"not a number: {shown(raw.iloc[i])}",
                  "write scores as JSON numbers")
        values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
        text = raw.astype(str).str.strip().str.lower()
        numeric_text = text.isin(["nan", "inf", "+inf", "-inf", "infinity", "-infinity"]).to_numpy()
        _fail(source, lines, np.isnan(values) & ~numeric_text, col, lambda i: f"not a number: {shown(raw.iloc[i])}",
              "write each score as a number")
    else:
        values = raw.to_numpy(dtype=float)
    _fail(source, lines, ~np.isfinite(values), col, lambda i: f"{shown(raw.iloc[i])} is not finite (NaN or "
          "infinity)", "give a finite score; drop the pair or rescore it if the model returned none")
    return values


def _all_text(raw: pd.Series) -> bool:
    """True for a CSV column (every cell a string)."""
    return pd.api.types.is_string_dtype(raw) and bool(raw.map(lambda v: isinstance(v, str)).all())


def _names(frame: pd.DataFrame, col: str, present: np.ndarray, source: str, lines: np.ndarray) -> pd.Series:
    _fail(source, lines, ~present, col, "missing", HINT)
    raw = frame[col]
    bad = raw.map(lambda v: not (isinstance(v, str) or (isinstance(v, (int, np.integer)) and not isinstance(v, bool))))
    _fail(source, lines, bad.to_numpy(), col, lambda i: f"{type(raw.iloc[i]).__name__}, not a string",
          "write names and ids as strings")
    return raw.astype(str)


def _orders(frame: pd.DataFrame, source: str, lines: np.ndarray) -> np.ndarray:
    """Each row's order: ``xy``, ``yx``, or ``both`` (no order given)."""
    if "order" not in frame:
        return np.full(len(frame), "both", dtype=object)
    raw = frame["order"].map(lambda v: "both" if v is None or v == "" or (isinstance(v, float) and np.isnan(v))
                             else v)
    _fail(source, lines, ~raw.isin(["xy", "yx", "both"]).to_numpy(), "order",
          lambda i: f"{shown(raw.iloc[i])} is not 'xy' or 'yx'", "'xy' means model_x was shown first; leave it "
          "empty when the scores do not depend on the order")
    return raw.to_numpy(dtype=object)


def _labels(frame: pd.DataFrame, mx: pd.Series, my: pd.Series, source: str, lines: np.ndarray) -> np.ndarray:
    """The reference winner per row as an identity code (NaN when the row has no label)."""
    if "label" not in frame:
        return np.full(len(frame), np.nan)
    raw = frame["label"].map(lambda v: None if v is None or (isinstance(v, float) and np.isnan(v)) else str(v))
    text = raw.fillna("").str.strip()
    code = text.str.lower().map(lambda s: float(IDENTITY_LABELS[s]) if s in IDENTITY_LABELS else np.nan)
    code = np.where(text == mx, float(Outcome.FIRST), np.where(text == my, float(Outcome.SECOND), code))
    _fail(source, lines, np.isnan(code) & (text != "").to_numpy(), "label",
          lambda i: f"unknown label {shown(raw.iloc[i])}", "use x, y, tie, or the winning model's name")
    return np.where(text == "", np.nan, code)


def _check_answers(long: pd.DataFrame, source: str) -> None:
    """An answer (item, model) scored twice with different values in rows without an order is an input error:
    a reward model scores each answer once."""
    grouped = long.groupby(["item_id", "model"], sort=False)["score"]
    spread = grouped.transform("max") - grouped.transform("min")
    bad = spread.to_numpy() > 0
    if bad.any():
        row = long[bad].sort_values("line").iloc[0]
        first = long[(long["item_id"] == row["item_id"]) & (long["model"] == row["model"])].sort_values("line")
        other = first[first["score"] != row["score"]].iloc[0]
        a, b = sorted([(int(row["line"]), row["score"], row["field"]), (int(other["line"]), other["score"],
                                                                         other["field"])])
        raise InputError(source, b[0], b[2], f"answer ({row['item_id']!r}, {row['model']!r}) scored {shown(b[1])} "
                         f"here and {shown(a[1])} on line {a[0]}", "score each answer once, or give each row its order")


def _tally(frame: pd.DataFrame, lines: np.ndarray) -> ProvenanceTally:
    tally = ProvenanceTally()
    for name in (*MIX_FIELDS, *CARD_FIELDS.values()):
        if name not in frame:
            tally.values[name] = {None: len(frame)}
            tally.first_line[name] = {None: int(lines[0])}
            continue
        col = frame[name].map(lambda v: None if v is None or v == "" or (isinstance(v, float) and np.isnan(v))
                              else str(v))
        firsts = pd.Series(lines).groupby(col.fillna("\0").to_numpy(), sort=False).min()
        tally.values[name] = {(None if k == "\0" else k): int(n) for k, n in
                              col.fillna("\0").value_counts(sort=False).items()}
        tally.first_line[name] = {(None if k == "\0" else k): int(v) for k, v in firsts.sort_values().items()}
    return tally


def _label_source(frame: pd.DataFrame, given: str | None, source: str, lines: np.ndarray) -> str:
    if given is not None:
        if given not in LABEL_SOURCES:
            raise ValueError(f"label_source must be one of {LABEL_SOURCES}, not {given!r}")
        return given
    if "label_source" not in frame:
        return "humans"
    raw = frame["label_source"].fillna("").astype(str)
    _fail(source, lines, ~raw.isin(["", *LABEL_SOURCES]).to_numpy(), "label_source",
          lambda i: f"{shown(raw.iloc[i])} is not one of {', '.join(LABEL_SOURCES)}",
          "say 'correctness' for objective labels, 'humans' for votes")
    kinds = set(raw[raw != ""])
    _fail(source, lines, (raw != raw[raw != ""].iloc[0]).to_numpy() & (raw != "").to_numpy() if kinds else
          np.zeros(len(raw), bool), "label_source", "rows mix label sources", "give one label source per file")
    return kinds.pop() if kinds else "humans"


def _long_rows(frame: pd.DataFrame, lines: np.ndarray, present: dict, source: str) -> pd.DataFrame:
    """One row per (pair, order) in the file's line order: rows without an order become an xy and a yx row."""
    names = {c: _names(frame, c, present[c], source, lines) for c in ("item_id", "model_x", "model_y")}
    same = (names["model_x"] == names["model_y"]).to_numpy()
    _fail(source, lines, same, "model_y", lambda i: f"model_y equals model_x ({names['model_x'].iloc[i]!r})",
          "each pair compares two different models")
    sx = _numbers(frame, "score_x", present["score_x"], source, lines)
    sy = _numbers(frame, "score_y", present["score_y"], source, lines)
    if "method" in frame:
        method = frame["method"].fillna("").astype(str)
        _fail(source, lines, ~method.isin(["", METHOD]).to_numpy(), "method",
              lambda i: f"{shown(method.iloc[i])} in a scores file", "score rows say method: score")
    rows = pd.DataFrame({**names, "sx": sx, "sy": sy, "order": _orders(frame, source, lines), "line": lines,
                         "label": _labels(frame, names["model_x"], names["model_y"], source, lines)})
    both = rows["order"] == "both"
    if both.any():
        free = rows[both]
        long = pd.DataFrame({"item_id": np.concatenate([free["item_id"], free["item_id"]]),
                             "model": np.concatenate([free["model_x"], free["model_y"]]),
                             "score": np.concatenate([free["sx"], free["sy"]]),
                             "field": ["score_x"] * len(free) + ["score_y"] * len(free),
                             "line": np.concatenate([free["line"], free["line"]])})
        _check_answers(long, source)
        rows = pd.concat([rows[~both], free.assign(order="xy"), free.assign(order="yx")], ignore_index=True)
        rows = rows.sort_values("line", kind="stable", ignore_index=True)
    return rows


def _dedupe(rows: pd.DataFrame, source: str) -> tuple[pd.DataFrame, int]:
    """Repeated (pair, order) rows: identical scores are counted and ignored, different ones refused."""
    keys = ["item_id", "model_x", "model_y", "order"]
    dup = rows.duplicated(keys, keep="first").to_numpy()
    if not dup.any():
        return rows, 0
    first = rows[~dup].set_index(keys)
    again = rows[dup].join(first[["sx", "sy", "line"]].add_suffix("_first"), on=keys)
    differs = (again["sx"] != again["sx_first"]) | (again["sy"] != again["sy_first"])
    if differs.any():
        r = again[differs].iloc[0]
        field = "score_x" if r["sx"] != r["sx_first"] else "score_y"
        raise InputError(source, int(r["line"]), field, f"pair ({r['item_id']!r}, {r['model_x']!r}, "
                         f"{r['model_y']!r}) order {r['order']} scored again with different values (first on line "
                         f"{int(r['line_first'])})", "give each (pair, order) one row")
    return rows[~dup], int(dup.sum())


def _pair_labels(rows: pd.DataFrame, source: str) -> pd.Series:
    """One label per pair (the rows of a pair must not disagree)."""
    keys = ["item_id", "model_x", "model_y"]
    labelled = rows[~np.isnan(rows["label"].to_numpy(dtype=float))]
    spread = labelled.groupby(keys, sort=False)["label"].transform(lambda s: s.nunique())
    if (spread > 1).any():
        r = labelled[spread.to_numpy() > 1].iloc[-1]
        raise InputError(source, int(r["line"]), "label", f"pair ({r['item_id']!r}, {r['model_x']!r}, "
                         f"{r['model_y']!r}) has different labels on different rows", "give each pair one label")
    return labelled.groupby(keys, sort=False)["label"].first()


def scores_table(frame: pd.DataFrame, source: str, reading: ScoreReading = ScoreReading(), *,
                 lines: np.ndarray | None = None, present: dict[str, np.ndarray] | None = None,
                 label_source: str | None = None, allow_mixed: bool = False) -> pd.DataFrame:
    """Score rows in the generic layout (a frame) as the judged-pairs table of :mod:`judge.outcomes`.

    ``lines`` numbers the rows for error messages (default 1, 2, ...); ``present`` says which required cells
    were given (default: not null). ``label_source`` overrides the rows' ``label_source`` (``correctness`` for
    objective labels). Columns: ``item_id, model_x, model_y, judge_xy, judge_yx, p_xy, p_yx, pt_xy, pt_yx,
    margin_xy, margin_yx`` and ``human`` when labelled; ``attrs``: ``source, notes, settings, provenance,
    label_source, scores`` (temperature, tolerance, tie count).
    """
    if len(frame) == 0:
        raise InputError(source, None, None, "no score rows", HINT)
    lines = np.arange(1, len(frame) + 1) if lines is None else np.asarray(lines)
    if present is None:
        present = {c: frame[c].notna().to_numpy() if c in frame else np.zeros(len(frame), bool) for c in REQUIRED}
    kind = _label_source(frame, label_source, source, lines)
    tally = _tally(frame, lines)
    mix_notes = require_one_judge(tally, source, allow_mixed)
    no_order = "order" not in frame or not frame["order"].isin(["xy", "yx"]).any()
    rows, repeats = _dedupe(_long_rows(frame, lines, present, source), source)
    keys = ["item_id", "model_x", "model_y"]
    wide = rows.set_index([*keys, "order"])[["sx", "sy"]].unstack("order")
    pairs = wide.index.to_frame(index=False)
    # the file's first-seen pair order (unstack sorts)
    first_seen = rows.drop_duplicates(keys)[keys]
    for o in ("xy", "yx"):
        sx = wide.get(("sx", o), pd.Series(np.nan, index=wide.index)).to_numpy(dtype=float)
        sy = wide.get(("sy", o), pd.Series(np.nan, index=wide.index)).to_numpy(dtype=float)
        margin = sx - sy
        pairs[f"judge_{o}"] = score_codes(margin, reading.tolerance)
        pairs[f"p_{o}"] = score_probability(margin, reading.temperature)
        pairs[f"pt_{o}"] = np.where(np.isnan(margin), np.nan, 0.0)
        pairs[f"margin_{o}"] = margin
    pairs = first_seen.merge(pairs, on=keys, how="left")
    labels = _pair_labels(rows, source)
    if len(labels):
        pairs["human"] = pairs.set_index(keys).index.map(labels).to_numpy(dtype=float)
    ties = int(np.sum((pairs[["judge_xy", "judge_yx"]].to_numpy() == Outcome.TIE).any(axis=1)))
    notes = [f"{repeats} repeated (pair, order) rows with the same scores ignored"] if repeats else []
    notes.append(f"scores read as P(x wins) = σ((s_x − s_y)/T) at T = {reading.temperature:g}; |s_x − s_y| ≤ "
                 f"{reading.tolerance:g} is a tie ({ties} pair{'s' if ties != 1 else ''})")
    if no_order:
        notes.append("no order given: each answer scored alone, so both orders read the same scores (no slot, "
                     "no position bias to measure)")
    settings = {"verdict methods": f"{METHOD} {len(rows)}"}
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
    frame, lines, present = _read_frame(path)
    return scores_table(frame, str(path), reading, lines=lines, present=present, label_source=label_source,
                        allow_mixed=allow_mixed)


def score_row(item_id: str, model_x: str, model_y: str, score_x: float, score_y: float, **extra) -> dict:
    """One row of the generic layout as a reward-model run writes it (no order: the scores cover both)."""
    return {"item_id": item_id, "model_x": model_x, "model_y": model_y, "score_x": score_x, "score_y": score_y,
            "method": METHOD, **extra}
