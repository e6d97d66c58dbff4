"""The battle schema, at the bottom of :mod:`arena.io`: the columns and layouts, the skipped-row record, and the
cell checks every reader shares (numbers in range, UTF-8 text, ``conv_metadata`` JSON and its style totals).

It imports no other module of the room; the lean loads, the chunked readers and :mod:`arena.io.battles`
(validation, ``load_battles``) are built on it, in that order.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from preflab.errors import InputError, shown

STYLE_COLUMNS: tuple[str, ...] = (
    "sum_assistant_a_tokens", "header_count_a", "list_count_a", "bold_count_a",
    "sum_assistant_b_tokens", "header_count_b", "list_count_b", "bold_count_b",
)
"""Per-side style totals from Chatbot Arena ``conv_metadata`` (dict counts such as ``{"h1": 2}`` summed)."""
REQUIRED: tuple[str, ...] = ("model_a", "model_b", "winner")
OPTIONAL_TEXT: tuple[str, ...] = ("judge", "question_id", "category", "language")
NUMBER_RANGES: dict[str, tuple[str, float, float]] = {
    "tstamp": ("seconds since the epoch", 0.0, 1e11), **{c: ("a style count", 0.0, 1e12) for c in STYLE_COLUMNS}}
"""The numeric columns validation checks: what each holds and its allowed range."""

OnError = Literal["raise", "skip"]


@dataclass(frozen=True)
class SkippedRow:
    """One input row dropped at the user's request (``on_error='skip'``), with the reason."""

    line: int
    field: str
    problem: str


@dataclass(frozen=True)
class ColumnMap:
    """How another layout's columns and winner labels map onto the Chatbot Arena battle layout.

    ``columns`` maps source column -> canonical column; ``winners`` maps source winner label ->
    one of the winner labels (:data:`preflab.outcomes.BATTLE_LABELS`).
    """

    columns: Mapping[str, str] = field(default_factory=dict)
    winners: Mapping[str, str] = field(default_factory=dict)


LAYOUTS: dict[str, ColumnMap] = {
    "arena": ColumnMap(),
    # LLMFAO (Ustalov): `left`/`right` hold the model names shown on each side, `worker` is the voter.
    "llmfao": ColumnMap(
        columns={"left": "model_a", "right": "model_b", "worker": "judge", "prompt": "question_id"},
        winners={"left": "model_a", "right": "model_b", "tie": "tie"},
    ),
}


#: Rows parsed or converted to compact columns at a time (CSV and JSONL chunks, the least rows of a Parquet
#: batch): each chunk becomes a compact frame (repeated strings as categoricals), so peak memory is the final
#: frame plus one chunk of Python objects, not the whole file's.
CHUNK_ROWS = 20_000


def parse_conv_metadata(df: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Tabular formats store ``conv_metadata`` as JSON text; turn it back into dicts."""
    if "conv_metadata" in df:
        if (not_utf8 := not_utf8_rows(df["conv_metadata"])) is not None:  # reading it would raise
            first = int(np.argmax(not_utf8))
            try:
                value = shown(df["conv_metadata"].iloc[first])
            except UnicodeDecodeError as e:
                value = quoted_bytes(e)
            raise InputError(str(path), int(df["line"].iloc[first]), "conv_metadata", f"not valid UTF-8 text "
                             f"({value})", "write the file's text as UTF-8")
        df["conv_metadata"] = [json_cell(v, str(path), n) for v, n in zip(df["conv_metadata"], df["line"], strict=True)]
    return df


def json_cell(value: object, name: str, line: int) -> object:
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        raise InputError(name, int(line), "conv_metadata", "not valid JSON",
                              "write conv_metadata as a JSON object or leave it empty") from None


def number_checks(values: pd.Series, col: str, what: str, lo: float, hi: float
                   ) -> list[tuple[str, str, str, np.ndarray]]:
    """Row masks of a numeric column's problems: given but not a number; not finite or outside [lo, hi]."""
    structured = np.zeros(len(values), bool)
    if (bad_text := not_utf8_rows(values)) is not None:  # text a number column holds, bytes not UTF-8: converting
        structured, values = bad_text, values.where(~bad_text, None)  # it raised a bare ArrowException (fuzz)
    if isinstance(values.dtype, pd.ArrowDtype) and not pd.api.types.is_numeric_dtype(values):
        values = values.astype(object)  # e.g. an Arrow struct or list column: its cells checked one by one
    if values.dtype == object and pd.api.types.infer_dtype(values, skipna=True) not in (
            "string", "floating", "integer", "mixed-integer-float", "empty", "decimal"):
        structured = values.map(lambda v: isinstance(v, (dict, list, bool))).to_numpy(bool)
        values = values.where(~structured, None)
    num = pd.to_numeric(values, errors="coerce")
    x = num.to_numpy(float, na_value=np.nan)
    nan = np.isnan(x)
    not_number = nan & values.notna().to_numpy()
    if not_number.any() and values.dtype == object:  # blank text cells are missing values, not errors
        idx = np.flatnonzero(not_number)
        not_number[idx] = [str(v).strip() != "" for v in values.to_numpy()[idx]]
    with np.errstate(invalid="ignore"):
        out_of_range = ~nan & ~((x >= lo) & (x <= hi))
    return [(col, f"not a number ({what})", "fix or remove the value", not_number | structured),
            (col, f"not finite or outside [{lo:g}, {hi:g}] ({what})", "fix or remove the value", out_of_range)]


def _total(v: object) -> object:
    """A style count (a number, or a dict of counts summed); anything else is returned as is, for the check."""
    try:
        if isinstance(v, Mapping):
            return float(sum(float(x) for x in v.values()))
        return float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return v if v is not None else float("nan")


def style_from_metadata(meta: Collection) -> dict[str, np.ndarray]:
    """Totals per side from Chatbot Arena ``conv_metadata`` (dict counts such as ``{"h1": 2}`` are summed).

    Float arrays (NaN where absent); a column with a value that is not a count becomes an object array
    holding that value, for the validation to report."""
    n = len(meta)
    out = {c: np.full(n, np.nan) for c in STYLE_COLUMNS}
    odd: dict[str, list[tuple[int, object]]] = {}
    for i, m in enumerate(meta):
        if not isinstance(m, Mapping):
            continue
        for col in STYLE_COLUMNS:
            if col in m:
                v = m[col]
                if type(v) is int or type(v) is float:  # the common case, without a function call
                    out[col][i] = v
                else:
                    total = _total(v)
                    if isinstance(total, float):
                        out[col][i] = total
                    else:
                        odd.setdefault(col, []).append((i, total))
    result: dict[str, np.ndarray] = {}
    for col, values in out.items():
        if col in odd:
            values = values.astype(object)
            for i, v in odd[col]:
                values[i] = v
        result[col] = values
    return result


# ------------------------------------------------------------------------------------------------- text


def not_utf8_rows(s: pd.Series) -> np.ndarray | None:
    """Rows whose text is not valid UTF-8, or None. Arrow does not check Parquet's strings and pandas keeps them
    as Arrow holds them, so a bad byte only raises (a bare UnicodeDecodeError) when a value is read; Python-held
    text is valid by construction. A categorical is checked on its categories."""
    values, codes = (s.cat.categories, s.cat.codes.to_numpy()) if isinstance(s.dtype, pd.CategoricalDtype) \
        else (s, None)
    if not isinstance(values.array, pd.arrays.ArrowStringArray):
        return None
    bad, start = [], 0
    for chunk in values.array.__arrow_array__().chunks:
        bad += _bad_utf8(chunk, start)
        start += len(chunk)
    if not bad:
        return None
    if codes is not None:
        return np.isin(codes, bad)
    mask = np.zeros(len(s), dtype=bool)
    mask[bad] = True
    return mask


def _bad_utf8(arr, start: int) -> list[int]:  # noqa: ANN001  (pyarrow.Array)
    """Positions (from ``start``) of the values that are not UTF-8: Arrow's full validation (C++, fast) on
    halves, so a clean column costs one pass and each bad value ~log2(n) more."""
    import pyarrow as pa

    try:
        arr.validate(full=True)
        return []
    except pa.ArrowInvalid:
        if len(arr) == 1:
            return [start]
    half = len(arr) // 2
    return _bad_utf8(arr.slice(0, half), start) + _bad_utf8(arr.slice(half), start + half)


def quoted_bytes(e: UnicodeDecodeError) -> str:
    """Text that is not UTF-8 as a message quotes it: its bytes, or those around the first bad one when long."""
    raw = e.object
    if len(raw) <= 80:
        return repr(raw)
    return f"at byte {e.start}: ...{raw[max(e.start - 30, 0):e.end + 30]!r}..."
