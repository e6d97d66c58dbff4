"""The typed data model: validated pairwise battles, loaded from and written to every supported format.

Everything upstream (files, the app, the simulator, judge verdicts) converts into :class:`Battles` here,
at the edge; everything downstream takes :class:`Battles` or its aggregate :class:`PairCounts`.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from arena.io import lean_load, readers

# Aggregation is part of the data model; it lives in arena.io.counts to keep files small.
from arena.io.counts import (  # noqa: F401  (re-exported)
    A_WINS,
    B_WINS,
    TIE,
    TIE_BOTHBAD,
    DisconnectedGraphWarning,
    PairCounts,
    aggregate,
    aggregate_codes,
    comparison_components,
    warn_if_disconnected,
)
from preflab.errors import InputError, shown
from preflab.io import (
    is_stdout,
    iter_text_lines,
    json_type,
    nonfinite_field,
    parse_json,
    read_csv,
    read_parquet,
    read_text,
    require_rows,
    write_output,
)
from preflab.outcomes import BATTLE_LABELS as WINNERS  # noqa: E402  (winner labels, indexed by code)

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
    one of :data:`WINNERS`.
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


@dataclass(frozen=True)
class Battles:
    """Validated battles in the Chatbot Arena layout.

    ``df`` has ``model_a``/``model_b`` as categoricals sharing one category list (the model names,
    sorted), ``winner`` as a categorical over :data:`WINNERS`, optional columns (``judge``, ``tstamp``,
    ``question_id``, ``category``, ``language``, ``anony``, the style totals of :data:`STYLE_COLUMNS`,
    ``conv_metadata`` as loaded) and any extra source columns, kept for a lossless round trip.
    ``line`` holds each row's source line number for error messages.
    """

    df: pd.DataFrame
    source: str = "<dataframe>"
    skipped: tuple[SkippedRow, ...] = ()

    def __len__(self) -> int:
        return len(self.df)

    @property
    def models(self) -> list[str]:
        """Model names, sorted; index ``i`` is model code ``i`` in :class:`PairCounts`."""
        return list(self.df["model_a"].cat.categories)

    @property
    def outcome(self) -> np.ndarray:
        """Outcome codes (:data:`A_WINS`, :data:`B_WINS`, :data:`TIE`, :data:`TIE_BOTHBAD`) as int8."""
        return self.df["winner"].cat.codes.to_numpy(np.int8)

    def skip_report(self) -> str:
        """One line per reason: how many rows were skipped and why (empty when none)."""
        if not self.skipped:
            return ""
        counts = pd.Series([f"{s.field}: {s.problem}" for s in self.skipped]).value_counts()
        lines = [f"{self.source}: skipped {len(self.skipped)} bad row(s)"]
        lines += [f"  {n} x {reason}" for reason, n in counts.items()]
        return "\n".join(lines)

    def with_df(self, df: pd.DataFrame) -> Battles:
        """A copy holding a filtered or extended frame (categories re-normalised)."""
        return Battles(_finalise(df.copy()), self.source, self.skipped)


# ----------------------------------------------------------------------------------------------- loading


def load_battles(
    source: str | Path | pd.DataFrame,
    *,
    layout: str | ColumnMap = "arena",
    on_error: OnError = "raise",
    fmt: str | None = None,
    lean: bool = False,
    keep: Collection[str] = (),
    need: Collection[str] | None = None,
) -> Battles:
    """Load and validate battles from JSON/JSONL (optionally .gz), CSV, Parquet or a DataFrame.

    ``layout`` names a preset of :data:`LAYOUTS` (``"arena"``, ``"llmfao"``) or is a :class:`ColumnMap`.
    With ``on_error="raise"`` the first bad row raises :class:`InputError` naming file, line and
    field; with ``"skip"`` bad rows are dropped, counted and listed in ``Battles.skipped``.

    ``lean=True`` keeps only what the statistics read (the canonical, optional and style columns, plus the
    columns named in ``keep``, e.g. conversation text for style control): ``conv_metadata`` becomes its style
    totals and other columns are dropped chunk by chunk as the file is read, so memory stays near the typed
    columns' size. ``need`` narrows that to the optional columns the caller reads (``()``: the model
    names and outcomes only); ``tstamp`` and style totals it leaves out are still checked, chunk by chunk, so
    validation, messages and every kept value are those of a full load (``line`` may be int32).
    """
    cmap = LAYOUTS[layout] if isinstance(layout, str) else layout
    plan = lean_load.lean_plan(dict(cmap.columns), keep, need) if lean else None
    # the canonical columns a lean load returns: only their text is checked, in the fast read and in the fallback
    keep_set = lean_load.lean_plan({}, keep, need).keep if lean else None  # type: ignore[union-attr]
    if isinstance(source, pd.DataFrame):
        name, raw = "<dataframe>", source.copy()
        raw["line"] = np.arange(len(raw)) + 1
    else:
        name = str(source)
        raw = read_file(Path(source), fmt, on_error, plan)
    try:
        battles = validate(raw, name, cmap, on_error, keep_set)
    except InputError:
        if plan is None or isinstance(source, pd.DataFrame):
            raise
        del raw  # a lean frame lacks columns a message may list: the full read names the problem as always
        battles = validate(read_file(Path(source), fmt, on_error), name, cmap, on_error, keep_set)
    if keep_set is None:
        return battles
    drop = [c for c in battles.df.columns if c != "line" and c not in keep_set]
    if drop:
        battles = Battles(battles.df.drop(columns=drop), battles.source, battles.skipped)
    readers.release_memory()  # the read's freed pages, before the statistics allocate theirs
    return battles


def _format_of(path: Path, fmt: str | None) -> str:
    if fmt:
        return fmt
    suffixes = [s.lower() for s in path.suffixes if s.lower() != ".gz"]
    ext = suffixes[-1] if suffixes else ""
    known = {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet",
             ".pq": "parquet"}
    if ext not in known:
        raise InputError(str(path), None, None, f"unknown file type '{ext or path.name}'",
                              "use .json, .jsonl, .csv or .parquet, or pass fmt=")
    return known[ext]


def read_file(path: Path, fmt: str | None, on_error: OnError, lean: lean_load.Lean | None = None) -> pd.DataFrame:
    """The raw frame of a file: chunked readers first (the same values, in bounded memory), the whole-file
    readers when those decline (they name any problem)."""
    if not path.exists():
        raise InputError(str(path), None, None, "file not found", "check the path")
    kind = _format_of(path, fmt)
    if kind == "csv":
        chunked = readers.read_csv_chunks(path, lean)
        if chunked is not None:
            return chunked
        df = read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
        df["line"] = np.arange(len(df)) + 2  # line 1 is the header
        return parse_conv_metadata(df, path)
    if kind == "parquet":
        batched = readers.read_parquet_batches(path, lean)
        if batched is not None:
            return batched
        df = read_parquet(path)
        df["line"] = np.arange(len(df)) + 1
        return parse_conv_metadata(df, path)
    if kind == "json" and _head_text(path).lstrip().startswith("["):
        records = parse_json(read_text(path), str(path), hint="fix the file")
        if not isinstance(records, list):  # e.g. "[1] [2]" is caught by the parser; keep the type honest
            raise InputError(str(path), None, None, "expected a JSON array of battle objects", "fix the file")
        lines = list(range(1, len(records) + 1))  # record number within the array
        return _records_frame(records, lines, str(path), on_error, "record")
    return _read_jsonl(path, on_error, lean)


def _head_text(path: Path) -> str:
    for _, text in iter_text_lines(path):
        if text.strip():
            return text
    return ""


#: JSONL rows parsed per chunk: each chunk becomes a compact frame (repeated strings as categoricals), so
#: peak memory is the final frame plus one chunk of Python dicts, not the whole file as dicts.
CHUNK_ROWS = 20_000


def _records_frame(records: list, lines: list[int], name: str, on_error: OnError, unit: str = "line",
                   bad: list[tuple[int, str, str]] | None = None) -> pd.DataFrame:
    """Battle records as a frame; a record that is not an object, or holds NaN/Infinity, raises or is skipped."""
    bad = [] if bad is None else bad
    keep_recs, keep_lines = [], []
    for n, rec in zip(lines, records, strict=True):
        field_, problem = None, ""
        if not isinstance(rec, dict):
            field_, problem = "<json>", f"{json_type(rec)}, not a JSON object"
        else:
            nonfinite = nonfinite_field(rec)
            if nonfinite is not None:
                field_, problem = nonfinite, f"{rec.get(nonfinite, 'NaN/Infinity')!r} is not a finite number"
        if field_ is None:
            keep_recs.append(rec)
            keep_lines.append(n)
            continue
        if on_error == "raise":
            raise InputError(name, n, None if field_ == "<json>" else field_, problem,
                             "write one battle object per " + unit + " (null for a missing number); or load "
                             "with on_error='skip'")
        bad.append((n, field_, problem))
    df = pd.DataFrame.from_records(keep_recs) if keep_recs else pd.DataFrame(columns=list(REQUIRED))
    for col in df.columns:  # names and labels repeat: one string per distinct value, codes per row
        if df[col].dtype == object and col != "conv_metadata" and pd.api.types.infer_dtype(df[col]) == "string":
            df[col] = df[col].astype("category")
    df["line"] = np.asarray(keep_lines, dtype=np.int64)
    df.attrs["bad_json_lines"] = bad
    return df


def concat_chunks(chunks: list[pd.DataFrame]) -> pd.DataFrame:
    """Chunk frames as one; a column categorical in every chunk stays categorical (categories united)."""
    if len(chunks) == 1:
        return chunks[0]
    columns = list(dict.fromkeys(c for ch in chunks for c in ch.columns))
    out = {}
    for col in columns:
        parts = [ch[col] if col in ch else pd.Series([None] * len(ch), dtype=object) for ch in chunks]
        if all(isinstance(p.dtype, pd.CategoricalDtype) or p.isna().all() for p in parts):
            cats = [p if isinstance(p.dtype, pd.CategoricalDtype) else p.astype("category") for p in parts]
            out[col] = pd.Series(pd.api.types.union_categoricals(cats, ignore_order=True))
        else:
            out[col] = pd.concat([p.astype(object) if isinstance(p.dtype, pd.CategoricalDtype) else p
                                  for p in parts], ignore_index=True)
    df = pd.DataFrame(out)
    df.attrs["bad_json_lines"] = chunks[0].attrs.get("bad_json_lines", [])
    return df


def _read_jsonl(path: Path, on_error: OnError, lean: lean_load.Lean | None = None) -> pd.DataFrame:
    fast = _read_jsonl_arrow(path, lean)
    if fast is not None:
        return fast
    if lean is not None:  # the fast path may have seen metadata before it declined; this reader keeps (cannot
        lean = lean_load.checks_kept(lean)  # decline on) the checked columns: load_battles drops them after validate
    return _read_jsonl_lines(path, on_error, lean)


_read_jsonl_arrow = readers.read_jsonl_arrow


def _read_jsonl_lines(path: Path, on_error: OnError, lean: lean_load.Lean | None = None) -> pd.DataFrame:
    name = str(path)
    chunks: list[pd.DataFrame] = []
    records: list = []
    lines: list[int] = []
    bad: list[tuple[int, str, str]] = []  # shared by the chunks: (line, field, problem) of skipped lines
    for n, line in iter_text_lines(path):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError) as e:
            if on_error == "raise":
                raise InputError(name, n, None, f"invalid JSON line ({e})",
                                 "fix the line or load with on_error='skip'") from None
            bad.append((n, "<json>", "invalid JSON line"))
            continue
        records.append(rec)
        lines.append(n)
        if len(records) >= CHUNK_ROWS:
            chunks.append(lean_load.shrink(_records_frame(records, lines, name, on_error, bad=bad), lean, False))
            records, lines = [], []
    if records or not chunks:
        chunks.append(lean_load.shrink(_records_frame(records, lines, name, on_error, bad=bad), lean, False))
    if lean is None:
        return concat_chunks(chunks)
    df = lean_load.finish(readers.concat_json_chunks(chunks), lean)
    df.attrs["bad_json_lines"] = bad
    return df


def parse_conv_metadata(df: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Tabular formats store ``conv_metadata`` as JSON text; turn it back into dicts."""
    if "conv_metadata" in df:
        if (not_utf8 := readers.not_utf8_rows(df["conv_metadata"])) is not None:  # reading it would raise
            first = int(np.argmax(not_utf8))
            try:
                value = shown(df["conv_metadata"].iloc[first])
            except UnicodeDecodeError as e:
                value = readers.quoted_bytes(e)
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


# -------------------------------------------------------------------------------------------- validation


def validate(raw: pd.DataFrame, source: str, cmap: ColumnMap, on_error: OnError = "raise",
             read: Collection[str] | None = None) -> Battles:
    """Rename, check and type a raw frame (see :func:`load_battles`). ``read``: the canonical columns the caller
    keeps, whose text must be UTF-8 (None: every column); a lean load ignores bad bytes in the columns it drops."""
    bad_json = raw.attrs.get("bad_json_lines", [])
    df = raw.rename(columns=dict(cmap.columns))
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        have = ", ".join(map(str, raw.columns.drop("line", errors="ignore")))
        raise InputError(source, None, missing[0], f"missing column(s) {missing}; found: {have}",
                              "rename the columns or pass layout=ColumnMap(columns={...})")
    if "line" not in df:
        df["line"] = np.arange(len(df)) + 1
    skipped = [SkippedRow(int(n), f, p) for n, f, p in bad_json]
    require_rows(len(df) + len(skipped), source, "battles", "give one battle per row (model_a, model_b, winner)")

    # Validate on the unique labels, not row by row: 10M rows cost a factorize, not 10M string ops.
    checks: list[tuple[str, str, str, np.ndarray]] = []
    codes, labels = {}, {}
    for col in ("model_a", "model_b", "winner"):
        codes[col], labels[col], not_text, not_utf8 = _factorize_stripped(df[col])
        if not_text is not None:  # a dict or list where a name belongs
            checks.append((col, "not a string", "write names and labels as strings", not_text))
        if not_utf8 is not None:
            checks.append((col, "not valid UTF-8 text", "write the file's text as UTF-8", not_utf8))
    for col in df.columns.drop([*REQUIRED, "line", "conv_metadata"], errors="ignore"):  # e.g. conversation text
        if read is not None and col not in read:
            continue
        if (not_utf8 := readers.not_utf8_rows(df[col])) is not None:
            checks.append((col, "not valid UTF-8 text", "write the file's text as UTF-8", not_utf8))
    if cmap.winners:
        labels["winner"] = pd.Index([cmap.winners.get(w, w) for w in labels["winner"]], dtype=object)
    for col in ("model_a", "model_b"):
        empty = np.append(np.asarray(labels[col] == ""), True)[codes[col]]  # code -1 (missing) -> True
        checks.append((col, "empty model name", "give every battle two model names", empty))
    names = sorted((set(labels["model_a"]) | set(labels["model_b"])) - {""})
    model_codes = {c: _lookup(pd.Index(names).get_indexer(labels[c]))[codes[c]] for c in ("model_a", "model_b")}
    known = np.append(np.asarray(labels["winner"].isin(WINNERS)), False)[codes["winner"]]
    checks.append(("winner", "unknown winner label", f"use one of {list(WINNERS)} or map labels with a ColumnMap",
                   ~known))
    checks.append(("model_b", "a model battling itself", "drop the row or fix the names",
                   (model_codes["model_a"] == model_codes["model_b"]) & (model_codes["model_a"] >= 0)))
    for col in ("model_a", "model_b"):
        df[col] = pd.Categorical.from_codes(model_codes[col], names)
    df["winner"] = pd.Categorical.from_codes(
        _lookup(pd.Index(WINNERS).get_indexer(labels["winner"]))[codes["winner"]], list(WINNERS))
    _fill_style_columns(df)
    for col in NUMBER_RANGES:
        if col in df:
            checks += number_checks(df[col], col, *NUMBER_RANGES[col])
    bad_any = np.zeros(len(df), dtype=bool)
    for col, problem, hint, mask in checks:
        mask = mask & ~bad_any  # one reason per row: the first that applies
        if not mask.any():
            continue
        first = int(np.argmax(mask))
        if on_error == "raise":
            src_col = col if col in raw else _source_name(cmap, col)
            try:
                value = shown(raw[src_col].iloc[first] if src_col in raw else df[col].iloc[first])
            except UnicodeDecodeError as e:  # quoted as the bytes that are not UTF-8
                value = readers.quoted_bytes(e)
            raise InputError(source, int(df["line"].iloc[first]), col, f"{problem} ({value})",
                                  hint + "; or load with on_error='skip' to drop and count such rows")
        skipped += [SkippedRow(int(n), col, problem) for n in df["line"].to_numpy()[mask]]
        bad_any |= mask
    if bad_any.any():  # no copy of a large, clean frame
        df = df.loc[~bad_any]
    skipped.sort(key=lambda s: s.line)
    if len(df) == 0:
        raise InputError(source, None, None, f"no valid battles: all {len(skipped)} row(s) are bad",
                         "fix the rows (load without skipping to see the first problem)")
    return Battles(_finalise(df), source, tuple(skipped))


def number_checks(values: pd.Series, col: str, what: str, lo: float, hi: float
                   ) -> list[tuple[str, str, str, np.ndarray]]:
    """Row masks of a numeric column's problems: given but not a number; not finite or outside [lo, hi]."""
    structured = np.zeros(len(values), bool)
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


def _finalise(df: pd.DataFrame) -> pd.DataFrame:
    """Type the canonical columns; flatten ``conv_metadata`` style counts into total columns."""
    df = df.reset_index(drop=True)
    df["model_a"], df["model_b"] = _shared_categoricals(df["model_a"], df["model_b"])
    if not isinstance(df["winner"].dtype, pd.CategoricalDtype) or list(df["winner"].cat.categories) != list(WINNERS):
        df["winner"] = pd.Categorical(df["winner"].astype(str), categories=list(WINNERS))
    if "tstamp" in df:
        df["tstamp"] = pd.to_numeric(df["tstamp"], errors="coerce")
    if "anony" in df and df["anony"].dtype != bool:
        df["anony"] = df["anony"].map(_to_bool).astype("boolean")
    for col in OPTIONAL_TEXT:
        if col in df:
            df[col] = df[col].astype("string")
    if "conv_metadata" in df:  # dict or None, whatever the source's spelling of "missing"
        df["conv_metadata"] = pd.Series([v if isinstance(v, Mapping) else None for v in df["conv_metadata"]],
                                        index=df.index, dtype=object)
    _fill_style_columns(df)
    for col in STYLE_COLUMNS:
        if col in df:
            df[col] = pd.to_numeric(df[col], errors="coerce").astype(float)
    if "line" not in df:
        df["line"] = np.arange(len(df)) + 1
    return df


def _lookup(new_codes: np.ndarray) -> np.ndarray:
    """A code -> new code table (with -1 -> -1 appended) in the smallest integer type: indexed by every row's
    code, it makes a per-row array of that type, not of int64 (10M rows: 20 MB, not 80)."""
    table = np.append(new_codes, -1)
    return table.astype(np.min_scalar_type(-max(len(table), 2)))


def _factorize_stripped(s: pd.Series) -> tuple[np.ndarray, pd.Index, np.ndarray | None, np.ndarray | None]:
    """Row codes (-1 for missing), the stripped string label of each code, the rows that hold a dict or list
    instead of a name, and the rows whose text is not valid UTF-8 (Arrow does not check Parquet's strings;
    None where there are none; both kinds get code -1). A categorical's own codes serve (no int64 copy per
    row); categories no row uses only add labels no code points to."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        codes, uniques, not_text = s.cat.codes.to_numpy(), s.cat.categories, None
    else:
        not_text = None
        try:
            codes, uniques = pd.factorize(s, use_na_sentinel=True)
        except TypeError:  # unhashable values: JSON objects or arrays (Parquet lists: numpy arrays) for a name
            not_text = s.map(lambda v: isinstance(v, (dict, list, np.ndarray))).to_numpy(bool)
            codes, uniques = pd.factorize(s.where(~not_text, None), use_na_sentinel=True)
    labels, broken = [], []
    for k in range(len(uniques)):  # one by one: a bad value raises when it is read
        try:
            labels.append(str(uniques[k]).strip())
        except UnicodeDecodeError:
            labels.append("")
            broken.append(k)
    not_utf8 = None
    if broken:
        not_utf8 = np.isin(codes, broken)
        codes = np.where(not_utf8, -1, codes)
    return codes, pd.Index(labels, dtype=object), not_text, not_utf8


def _source_name(cmap: ColumnMap, col: str) -> str:
    return next((src for src, dst in cmap.columns.items() if dst == col), col)


def _shared_categoricals(a: pd.Series, b: pd.Series) -> tuple[pd.Categorical, pd.Categorical]:
    """Both model columns as categoricals over one sorted list of the names that occur."""
    same = (isinstance(a.dtype, pd.CategoricalDtype) and isinstance(b.dtype, pd.CategoricalDtype)
            and a.cat.categories.equals(b.cat.categories) and a.cat.categories.is_monotonic_increasing)
    if not same:
        names = sorted(set(pd.unique(a.astype(str))) | set(pd.unique(b.astype(str))))
        return pd.Categorical(a.astype(str), categories=names), pd.Categorical(b.astype(str), categories=names)
    ca, cb = a.cat.codes.to_numpy(), b.cat.codes.to_numpy()
    k = len(a.cat.categories)
    used = (np.bincount(ca[ca >= 0], minlength=k) + np.bincount(cb[cb >= 0], minlength=k)) > 0
    if used.all():
        return a.array, b.array
    remap = np.append(np.cumsum(used) - 1, -1)
    names = list(a.cat.categories[used])
    return pd.Categorical.from_codes(remap[ca], names), pd.Categorical.from_codes(remap[cb], names)


def _to_bool(v: object) -> object:
    if v is None or v is pd.NA:
        return pd.NA
    if isinstance(v, str):
        return {"true": True, "false": False, "1": True, "0": False}.get(v.strip().lower(), pd.NA)
    return pd.NA if v is None or (isinstance(v, float) and np.isnan(v)) else bool(v)


def _total(v: object) -> object:
    """A style count (a number, or a dict of counts summed); anything else is returned as is, for the check."""
    try:
        if isinstance(v, Mapping):
            return float(sum(float(x) for x in v.values()))
        return float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return v if v is not None else float("nan")


def _fill_style_columns(df: pd.DataFrame) -> None:
    """Add the flat style columns missing from ``df`` from its nested ``conv_metadata`` (in place)."""
    if "conv_metadata" in df and not all(c in df for c in STYLE_COLUMNS):
        for col, values in style_from_metadata(df["conv_metadata"]).items():
            if col not in df:
                df[col] = values


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


# --------------------------------------------------------------------------------------------- writing


def to_records_frame(battles: Battles) -> pd.DataFrame:
    """The frame as it is written: plain strings for categoricals, no internal ``line`` column."""
    df = battles.df.drop(columns=["line"]).copy()
    style = [c for c in STYLE_COLUMNS if c in df]
    if style and "conv_metadata" in df:
        has_meta = df["conv_metadata"].notna()
        if not df.loc[~has_meta, style].notna().any().any():  # derived from conv_metadata: recomputed on load
            df = df.drop(columns=style)
    for col in ("model_a", "model_b", "winner"):
        df[col] = df[col].astype(str)
    return df


def write_battles(battles: Battles, path: str | Path, fmt: str | None = None) -> Path:
    """Write battles as JSON array, JSONL, CSV or Parquet (by extension); reading it back loses nothing.
    ``-`` writes JSONL to standard output."""
    df = to_records_frame(battles)
    if is_stdout(path):
        records = [{k: _plain(v) for k, v in rec.items() if not _missing(v)} for rec in df.to_dict("records")]
        write_output(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
        return Path(path)
    path = Path(path)
    kind = _format_of(path, fmt)
    if kind == "parquet":
        if "conv_metadata" in df:
            df["conv_metadata"] = df["conv_metadata"].map(lambda v: None if _missing(v) else json.dumps(v))
        df.to_parquet(path, index=False)
        return path
    if kind == "csv":
        if "conv_metadata" in df:
            df["conv_metadata"] = df["conv_metadata"].map(lambda v: "" if _missing(v) else json.dumps(v))
        df.to_csv(path, index=False)
        return path
    records = [{k: _plain(v) for k, v in rec.items() if not _missing(v)} for rec in df.to_dict("records")]
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as fh:
        if kind == "jsonl":
            fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        else:
            json.dump(records, fh, ensure_ascii=False, indent=1)
    return path


def _missing(v: object) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v))


def _plain(v: object) -> object:
    if isinstance(v, np.generic):
        return v.item()
    return v
