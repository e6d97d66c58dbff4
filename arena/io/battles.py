"""Battles loaded from and written to every supported format: the top of :mod:`arena.io`.

Everything upstream (files, the app, the simulator, judge verdicts) converts into :class:`Battles` here,
at the edge; everything downstream takes :class:`Battles` or its aggregate :class:`PairCounts`.
:func:`load_battles` chooses the reader (the chunked and lean ones of :mod:`arena.io.readers` first, the
whole-file ones here when they decline) and validates what it read (:mod:`arena.io.validation`, on the
schema of :mod:`arena.io.schema`).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Collection
from pathlib import Path

import numpy as np
import pandas as pd

from arena.io import lean_load, readers

# The data model's names, importable from here as from their homes.
from arena.io.counts import (  # noqa: F401  (re-exported)
    DisconnectedGraphWarning,
    PairCounts,
    aggregate,
    aggregate_codes,
    comparison_components,
    warn_if_disconnected,
)
from arena.io.schema import (  # noqa: F401  (re-exported)
    CHUNK_ROWS,
    LAYOUTS,
    OPTIONAL_TEXT,
    REQUIRED,
    STYLE_COLUMNS,
    ColumnMap,
    OnError,
    parse_conv_metadata,
)
from arena.io.validation import Battles, validate  # noqa: F401  (re-exported)
from preflab.errors import InputError
from preflab.io import (
    is_stdout,
    iter_text_lines,
    json_type,
    nonfinite_field,
    parse_json,
    read_csv,
    read_parquet,
    read_text,
    write_output,
)

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
    if path.is_dir():
        inside = sorted((p.name for p in path.iterdir() if _is_table_file(p, known)),
                        key=lambda n: ("battle" not in n, n))  # a battles file first
        raise InputError(str(path), None, None, "is a folder, not a battles file",
                         "pass one file inside it" + (f", e.g. {path / inside[0]}" if inside else "")
                         + " (.json, .jsonl, .csv or .parquet)")
    if ext not in known:
        raise InputError(str(path), None, None, f"unknown file type '{ext or path.name}'",
                         "use .json, .jsonl, .csv or .parquet, or pass fmt=")
    return known[ext]


def _is_table_file(path: Path, known: dict[str, str]) -> bool:
    """A file whose extension a battles reader takes."""
    return path.is_file() and path.suffix.lower() in known


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
        return parse_conv_metadata(_unread_metadata_dropped(df, lean), path)
    if kind == "parquet":
        batched = readers.read_parquet_batches(path, lean)
        if batched is not None:
            return batched
        df = read_parquet(path, **_columns_read(path, lean))
        df["line"] = np.arange(len(df)) + 1
        return parse_conv_metadata(_unread_metadata_dropped(df, lean), path)
    if kind == "json" and _head_text(path).lstrip().startswith("["):
        from arena.io import json_array  # (only for JSON arrays: not on a parquet, CSV or JSONL command's start)

        streamed = json_array.read_json_array(path, lean)
        if streamed is not None:
            return streamed
        records = parse_json(read_text(path), str(path), hint="fix the file")
        if not isinstance(records, list):  # e.g. "[1] [2]" is caught by the parser; keep the type honest
            raise InputError(str(path), None, None, "expected a JSON array of battle objects", "fix the file")
        lines = list(range(1, len(records) + 1))  # record number within the array
        return _records_frame(records, lines, str(path), on_error, "record")
    return _read_jsonl(path, on_error, lean)


def _unread_metadata_dropped(df: pd.DataFrame, lean: lean_load.Lean | None) -> pd.DataFrame:
    """A tabular file's frame without ``conv_metadata`` when a lean load keeps no style total (the chunked
    readers do not read it then; the whole-file fallback must not report it either)."""
    if lean is not None and not lean.reads_metadata and "conv_metadata" in df:
        return df.drop(columns="conv_metadata")
    return df


def _columns_read(path: Path, lean: lean_load.Lean | None) -> dict:
    """``read_parquet``'s ``columns`` leaving out ``conv_metadata`` when a lean load keeps no style total (as the
    batch reader does: a corrupt page there is then no error of the load); no argument otherwise."""
    if lean is None or lean.reads_metadata:
        return {}
    try:
        import pyarrow.parquet as pq

        names = pq.read_schema(path).names
    except Exception:  # noqa: BLE001  (unreadable: read_parquet names the problem)
        return {}
    return {"columns": [n for n in names if n != "conv_metadata" and not n.startswith("__index_level_")]}


def _head_text(path: Path) -> str:
    for _, text in iter_text_lines(path):
        if text.strip():
            return text
    return ""


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
        return readers.concat_chunks(chunks)
    df = lean_load.finish(readers.concat_json_chunks(chunks), lean)
    df.attrs["bad_json_lines"] = bad
    return df


# -------------------------------------------------------------------------------------------- validation


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
