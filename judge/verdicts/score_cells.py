"""The cells of a scores file checked column by column (:mod:`judge.verdicts.scores`): each check works on
whole columns and factorised values (a million rows in seconds) and raises :class:`InputError` for the first
bad row, naming its line and field."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from judge.verdicts.provenance import CARD_FIELDS, MIX_FIELDS, ProvenanceTally
from preflab.errors import InputError, shown
from preflab.io import iter_jsonl, read_csv, read_parquet
from preflab.outcomes import IDENTITY_LABELS, Outcome

#: The columns every score row needs.
REQUIRED = ("item_id", "model_x", "model_y", "score_x", "score_y")
#: What a label can say the reference is: ``humans`` (votes) or ``correctness`` (objective labels).
LABEL_SOURCES = ("humans", "correctness")
HINT = "score rows need item_id, model_x, model_y, score_x, score_y (see docs/formats.md, 'Scores')"


def _is_empty(raw: pd.Series) -> np.ndarray:
    """Null cells, and empty strings in a text column."""
    empty = raw.isna().to_numpy(dtype=bool)
    if not pd.api.types.is_numeric_dtype(raw):
        empty = empty | (raw == "").fillna(False).to_numpy(dtype=bool)
    return empty


def _jsonl_fast(path: Path) -> pd.DataFrame | None:
    """A plain JSONL file (no blank lines, no gzip, strict JSON) read by pyarrow in one pass; None sends it to
    the line-by-line reader, which names the line of any problem (a NaN literal, a bad line, mixed types)."""
    if path.name.lower().endswith(".gz"):
        return None
    raw = path.read_bytes()
    if not raw.strip() or raw.startswith((b"\n", b"\r")) or b"\n\n" in raw or b"\n\r\n" in raw \
            or b"\n " in raw or raw.rstrip(b" \t") != raw or b"NaN" in raw or b"Infinity" in raw:
        # blank lines shift line numbers; NaN/Infinity (not JSON) would read as missing: the line reader tells
        return None
    try:
        import pyarrow as pa
        import pyarrow.json as pj

        table = pj.read_json(pa.BufferReader(raw))
    except Exception:  # noqa: BLE001  (anything pyarrow refuses, the line reader explains)
        return None
    frame = table.to_pandas()
    lines = raw.count(b"\n") + (0 if raw.endswith(b"\n") else 1)
    return frame if len(frame) == lines else None


def read_frame(path: Path) -> tuple[pd.DataFrame, np.ndarray, dict[str, np.ndarray]]:
    """The rows as a frame, each row's line number, and which cells were present (JSONL: key given, not null)."""
    name = path.name.lower()
    if name.endswith((".parquet", ".pq")):
        frame = read_parquet(path)
        lines = np.arange(1, len(frame) + 1)
    elif name.endswith(".csv"):
        frame = read_csv(path, dtype=str, keep_default_na=False)
        lines = np.arange(2, len(frame) + 2)
    elif (fast := _jsonl_fast(path)) is not None:
        frame = fast
        lines = np.arange(1, len(frame) + 1)
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
    present = {c: ~_is_empty(frame[c]) if c in frame else np.zeros(len(frame), bool) for c in REQUIRED}
    return frame, lines, present


def fail(source: str, lines: np.ndarray, bad: np.ndarray, field: str, problem, hint: str) -> None:
    """Raise for the first row where ``bad`` holds (``problem`` may take that row's index)."""
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(source, int(lines[i]), field, problem(i) if callable(problem) else problem, hint)


def numbers(frame: pd.DataFrame, col: str, present: np.ndarray, source: str, lines: np.ndarray) -> np.ndarray:
    """A score column as finite floats; missing, non-numeric (a JSON string or bool too), NaN and ±inf refused."""
    fail(source, lines, ~present, col, "missing", "give every row both scores (" + HINT + ")")
    raw = frame[col]
    if not pd.api.types.is_numeric_dtype(raw) or pd.api.types.is_bool_dtype(raw):
        strings = raw.map(lambda v: isinstance(v, (str, bool))).to_numpy() if not _all_text(raw) else None
        if strings is not None:  # JSON: numbers only
            fail(source, lines, strings, col, lambda i: f"not a number: {shown(raw.iloc[i])}",
                  "write scores as JSON numbers")
        values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
        text = raw.astype(str).str.strip().str.lower()
        numeric_text = text.isin(["nan", "inf", "+inf", "-inf", "infinity", "-infinity"]).to_numpy()
        fail(source, lines, np.isnan(values) & ~numeric_text, col, lambda i: f"not a number: {shown(raw.iloc[i])}",
              "write each score as a number")
    else:
        values = raw.to_numpy(dtype=float)
    fail(source, lines, ~np.isfinite(values), col, lambda i: f"{shown(raw.iloc[i])} is not finite (NaN or "
          "infinity)", "give a finite score; drop the pair or rescore it if the model returned none")
    return values


def _all_text(raw: pd.Series) -> bool:
    """True for a CSV column (every cell a string)."""
    return pd.api.types.is_string_dtype(raw) and bool(raw.map(lambda v: isinstance(v, str)).all())


def _all_text(raw: pd.Series) -> bool:
    """True for a CSV column (every cell a string)."""
    return pd.api.types.is_string_dtype(raw) and bool(raw.map(lambda v: isinstance(v, str)).all())


def _text_column(raw: pd.Series) -> bool:
    """True when every cell is a string (or null): checked in C, not per cell."""
    return pd.api.types.infer_dtype(raw, skipna=True) in ("string", "empty")


def names(frame: pd.DataFrame, col: str, present: np.ndarray, source: str, lines: np.ndarray) -> pd.Series:
    """An id or model-name column as strings; objects, arrays, floats and booleans are refused."""
    fail(source, lines, ~present, col, "missing", HINT)
    raw = frame[col]
    if not (_text_column(raw) or pd.api.types.infer_dtype(raw, skipna=True) == "integer"):
        bad = raw.map(lambda v: not (isinstance(v, str) or (isinstance(v, (int, np.integer))
                                                            and not isinstance(v, bool))))
        fail(source, lines, bad.to_numpy(dtype=bool), col, lambda i: f"{type(raw.iloc[i]).__name__}, not a string",
             "write names and ids as strings")
    return raw.astype(str)


def orders(frame: pd.DataFrame, source: str, lines: np.ndarray) -> np.ndarray:
    """Each row's order as a code: 0 ``xy``, 1 ``yx``, 2 none given (the row covers both orders)."""
    if "order" not in frame:
        return np.full(len(frame), 2, dtype=np.int8)
    raw = frame["order"]
    codes, uniques = pd.factorize(raw, use_na_sentinel=True)
    table = np.array([{"xy": 0, "yx": 1, "": 2}.get(u, -1) if isinstance(u, str) else -1 for u in uniques]
                     + [2], dtype=np.int8)  # the sentinel (-1 -> last): null
    code = table[codes]
    fail(source, lines, code < 0, "order", lambda i: f"{shown(raw.iloc[i])} is not 'xy' or 'yx'",
         "'xy' means model_x was shown first; leave it empty when the scores do not depend on the order")
    return code


def labels(frame: pd.DataFrame, mx: pd.Series, my: pd.Series, source: str, lines: np.ndarray) -> np.ndarray:
    """The reference winner per row as an identity code (NaN when the row has no label)."""
    if "label" not in frame:
        return np.full(len(frame), np.nan)
    raw = frame["label"]
    codes, uniques = pd.factorize(raw, use_na_sentinel=True)
    text = [str(u).strip() for u in uniques]
    fixed = np.array([float(IDENTITY_LABELS[t.lower()]) if t.lower() in IDENTITY_LABELS else np.nan for t in text]
                     + [np.nan])
    empty = np.array([t == "" for t in text] + [True])
    stripped = np.array(text + [""], dtype=object)[codes]
    code = np.where(stripped == mx.to_numpy(dtype=object), float(Outcome.FIRST),
                    np.where(stripped == my.to_numpy(dtype=object), float(Outcome.SECOND), fixed[codes]))
    fail(source, lines, np.isnan(code) & ~empty[codes], "label", lambda i: f"unknown label {shown(raw.iloc[i])}",
         "use x, y, tie, or the winning model's name")
    return np.where(empty[codes], np.nan, code)


def tally(frame: pd.DataFrame, lines: np.ndarray) -> ProvenanceTally:
    """Each provenance field's values and first lines, counted over factorised values (not per row)."""
    out = ProvenanceTally()
    for name in (*MIX_FIELDS, *CARD_FIELDS.values()):
        if name not in frame:
            out.values[name], out.first_line[name] = {None: len(frame)}, {None: int(lines[0])}
            continue
        codes, uniques = pd.factorize(frame[name], use_na_sentinel=True)
        keys = [None if u == "" else str(u) for u in uniques] + [None]  # null cells: the last key
        codes = np.where(codes < 0, len(keys) - 1, codes)
        counts = np.bincount(codes, minlength=len(keys))
        firsts = np.full(len(keys), np.iinfo(np.int64).max)
        np.minimum.at(firsts, codes, np.asarray(lines, dtype=np.int64))
        values: dict[str | None, int] = {}
        first: dict[str | None, int] = {}
        for c in np.argsort(firsts, kind="stable"):
            if counts[c]:
                values[keys[c]] = values.get(keys[c], 0) + int(counts[c])
                first.setdefault(keys[c], int(firsts[c]))
        out.values[name], out.first_line[name] = values, first
    return out


def label_source(frame: pd.DataFrame, given: str | None, source: str, lines: np.ndarray) -> str:
    if given is not None:
        if given not in LABEL_SOURCES:
            raise ValueError(f"label_source must be one of {LABEL_SOURCES}, not {given!r}")
        return given
    if "label_source" not in frame:
        return "humans"
    raw = frame["label_source"].fillna("").astype(str)
    fail(source, lines, ~raw.isin(["", *LABEL_SOURCES]).to_numpy(), "label_source",
          lambda i: f"{shown(raw.iloc[i])} is not one of {', '.join(LABEL_SOURCES)}",
          "say 'correctness' for objective labels, 'humans' for votes")
    kinds = set(raw[raw != ""])
    fail(source, lines, (raw != raw[raw != ""].iloc[0]).to_numpy() & (raw != "").to_numpy() if kinds else
          np.zeros(len(raw), bool), "label_source", "rows mix label sources", "give one label source per file")
    return kinds.pop() if kinds else "humans"
