"""Large battles files in bounded memory: chunked CSV, batched Parquet, Arrow JSONL.

Each reader gives the raw frame that the whole-file readers of :mod:`arena.io.battles` gave, built chunk by chunk,
so :func:`arena.io.battles.validate` sees the same values and names the same file, line and field. With a lean plan
(:mod:`arena.io.lean_load`: ``load_battles(..., lean=True)``) every chunk is cut, before the next is read, to the
columns the statistics read and ``conv_metadata`` to its style totals; peak memory is then the typed columns
plus one chunk, not the file's text as Python objects. Numeric columns that validation checks but the command
does not read are checked chunk by chunk and dropped; on a problem the reader declines, and the full read
reports it in its words.

A reader returns None when its input is anything unusual (a parse error, bad bytes, a renamed style column,
mixed JSON types...): the caller then runs the exact whole-file reader, which reports the problem as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from arena.io.lean_load import (
    META,
    Decline,
    Lean,
    check,
    checks_kept,
    concat,
    concat_values,
    finish,
    shrink,
    text_kept,
)
from arena.io.schema import CHUNK_ROWS, parse_conv_metadata, style_from_metadata

PARQUET_BATCH_BYTES = 4 << 20
"""Uncompressed bytes per Parquet batch: narrow files (names and winner only) read in a few large batches,
since 20,000-row batches of them cost more in per-batch overhead than in memory."""

PARQUET_READ_BUFFER = 1 << 20


def release_memory() -> None:
    """Hand freed memory back to the system now, after each chunk: Arrow's allocator (mimalloc) and glibc's
    malloc both keep freed pages for reuse, so the pages of one chunk after another would add up in the
    process's memory although only ~one chunk is alive (glibc's ``malloc_trim``; a no-op elsewhere)."""
    try:
        import pyarrow as pa

        pa.default_memory_pool().release_unused()
    except (ImportError, AttributeError):  # pragma: no cover
        pass
    global _LIBC
    if _LIBC is None:
        import ctypes
        import ctypes.util

        try:
            _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _LIBC.malloc_trim  # noqa: B018  (glibc only)
        except (OSError, AttributeError):
            _LIBC = False
    if _LIBC:
        _LIBC.malloc_trim(0)


_LIBC = None


# ------------------------------------------------------------------------------------------------------ CSV


def read_csv_chunks(path: Path, lean: Lean | None) -> pd.DataFrame | None:
    """The CSV branch of :func:`arena.io.battles.read_file` (every cell text, blank = missing, ``line`` = row + 2,
    ``conv_metadata`` parsed), CHUNK_ROWS rows at a time. None on any problem: the whole-file reader then
    reports it, in the order it always did (a ragged row before a bad ``conv_metadata`` cell)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(8192)
        if path.suffix.lower() == ".gz" or b"\x00" in head or not head.strip():
            return None
        chunks, start = [], 2
        reader = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""], encoding="utf-8",
                             encoding_errors="strict", chunksize=CHUNK_ROWS)
        with reader:
            for chunk in reader:
                chunk["line"] = np.arange(start, start + len(chunk), dtype=_line_type(lean))
                start += len(chunk)
                chunks.append(parse_conv_metadata(chunk, path) if lean is None else shrink(chunk, lean, text_of=path))
                release_memory()
    except Exception:  # noqa: BLE001  (any problem: the exact reader names it)
        return None
    if not chunks or start == 2:
        return None
    return finish(concat(chunks), lean)


# -------------------------------------------------------------------------------------------------- Parquet


def read_parquet_batches(path: Path, lean: Lean | None) -> pd.DataFrame | None:
    """The Parquet branch of :func:`arena.io.battles.read_file` (``pandas.read_parquet``, ``line`` = row + 1,
    ``conv_metadata`` JSON text parsed) one batch at a time; a lean load converts only the kept columns, names
    as dictionaries (never one Python string per row), and drops the others' batch as soon as it is decoded."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
        if schema.metadata and b"pandas" in schema.metadata:  # corrupt for a column a lean load drops: unreadable
            schema.empty_table().to_pandas()  # to the whole-file reader too, which names it (cheap: no rows)
        names = [n for n in schema.names if not n.startswith("__index_level_")]
        kept = names
        if lean is not None:  # every column read is still decoded (a corrupt page is an error), then dropped
            if not lean.reads_metadata:  # not read at all when no style total is kept
                names = [n for n in names if n != "conv_metadata"]
            kept = [n for n in names if n == "conv_metadata" or lean.kept(n) or lean.canonical(n) in lean.checked]
            text = text_kept(lean)
            dictionary = [n for n in names if lean.canonical(n) in text and (
                pa.types.is_string(schema.field(n).type) or pa.types.is_large_string(schema.field(n).type))]
        else:
            dictionary = []
        # no pre-buffering (it pins every row group's compressed column chunks until the end: 25 MB per 612,000
        # rows) and buffered reads (a column chunk is read a MB at a time, not whole). read_dictionary: Arrow
        # dedups a dictionary page's values but not its indices, so a page whose dictionary holds a value twice
        # (legal Parquet) has its last index past the end: an error here (to_pandas, _check_indices); the whole-file
        # reader then reads it right (decoding each column first costs 1.5-2x the read: test_lean_load_parquet)
        pf = pq.ParquetFile(path, read_dictionary=dictionary, pre_buffer=False, buffer_size=PARQUET_READ_BUFFER)
        chunks, start = [], 1
        for batch in pf.iter_batches(batch_size=parquet_batch_rows(pf.metadata), columns=names,
                                     use_pandas_metadata=False):
            for n in set(dictionary) - set(kept):  # dropped undecoded: a corrupt page's bad index is an error too
                _check_indices(batch.column(n))
            table = pa.Table.from_batches([batch]).select(kept)
            chunk = table.replace_schema_metadata(schema.metadata).to_pandas()
            del table, batch
            chunk.index = pd.RangeIndex(len(chunk))
            chunk["line"] = np.arange(start, start + len(chunk), dtype=_line_type(lean))
            start += len(chunk)
            chunks.append(parse_conv_metadata(chunk, path) if lean is None else shrink(chunk, lean, text_of=path))
            release_memory()
    except Exception:  # noqa: BLE001
        return None
    if not chunks or start - 1 != pf.metadata.num_rows:  # a corrupt page header's value count: the batches end
        return None  # at the shortest column (rows silently lost) where the whole-file read names the mismatch
    df = finish(concat(chunks), lean)
    if schema.metadata and b"PANDAS_ATTRS" in schema.metadata:  # pandas.read_parquet restores df.attrs
        df.attrs = json.loads(schema.metadata[b"PANDAS_ATTRS"])
    return df


def _check_indices(arr) -> None:  # noqa: ANN001  (pyarrow.DictionaryArray)
    """ValueError when a dictionary column's index is outside its dictionary (a corrupt page), as decoding it
    (pandas, the whole-file reader) would find."""
    import pyarrow.compute as pc

    low, high = pc.min_max(arr.indices).values()
    if low.is_valid and (low.as_py() < 0 or high.as_py() >= len(arr.dictionary)):
        raise ValueError("Index not in dictionary bounds")


def _line_type(lean: Lean | None) -> type:
    """Lean frames number lines as int32 (a file has fewer than 2**31 lines; half the column's memory)."""
    return np.int64 if lean is None else np.int32


def parquet_batch_rows(meta) -> int:  # noqa: ANN001  (pyarrow.parquet.FileMetaData)
    """Rows per batch: :data:`PARQUET_BATCH_BYTES` of uncompressed data, at least :data:`CHUNK_ROWS` and
    at most 25 times that."""
    size = sum(meta.row_group(g).total_byte_size for g in range(meta.num_row_groups))
    per_row = max(size / max(meta.num_rows, 1), 1.0)
    return int(max(CHUNK_ROWS, min(25 * CHUNK_ROWS, PARQUET_BATCH_BYTES // per_row)))


# ---------------------------------------------------------------------------------------------------- JSONL


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


def concat_json_chunks(chunks: list[pd.DataFrame]) -> pd.DataFrame:
    """:func:`concat_chunks` (JSON chunks may lack columns) with the style totals kept numeric."""
    meta = [c for c in chunks[0].columns if isinstance(c, str) and c.startswith(META)]
    totals = {c: concat_values([ch[c] for ch in chunks]) for c in meta}
    df = concat_chunks([ch.drop(columns=meta) if meta else ch for ch in chunks])
    for c in meta:
        df[c] = totals[c]
    return df


def read_jsonl_arrow(path: Path, lean: Lean | None = None) -> pd.DataFrame | None:
    """:func:`_read_jsonl_arrow`; when a checked column has a problem, again with it kept (validation then sees
    the values a full load sees, and reports them in its words)."""
    try:
        return _read_jsonl_arrow(path, lean)
    except Decline:
        return _read_jsonl_arrow(path, checks_kept(lean))  # type: ignore[arg-type]


def _read_jsonl_arrow(path: Path, lean: Lean | None = None) -> pd.DataFrame | None:
    """The fast path: Arrow's JSONL reader, columns typed in C++ (names as categoricals), no per-row dicts
    (a lean load: none at all; otherwise ``conv_metadata``'s, made a slice at a time). None when the file is
    anything but plain, strict, one-object-per-line JSONL (gzip, blank lines, NaN, mixed types, bad bytes,
    nested values where scalars belong...): the line-by-line reader then names the problem."""
    return table_frame(_strict_jsonl_table(path), lean)


def table_frame(table, lean: Lean | None) -> pd.DataFrame | None:  # noqa: ANN001  (pyarrow.Table | None)
    """An Arrow table of battle objects (one per line or array record: ``line`` = row + 1) as the line
    reader's frame, or None when a value is nested where a scalar belongs."""
    if table is None:
        return None
    columns = {}
    totals: list[dict[str, np.ndarray]] = []
    flat = {lean.canonical(n) for n in table.column_names} if lean is not None else set()
    for name, col in zip(table.column_names, table.columns, strict=True):
        if lean is not None and name != "conv_metadata" and not lean.kept(name):
            _check_dropped(lean, name, col)  # never read downstream (checked for NaN by the table's reader)
        elif name == "conv_metadata" and lean is not None and _holds_metadata(col):
            totals += _metadata_totals(col, lean, flat) if lean.reads_metadata else []
        elif (series := _arrow_series(name, col)) is not None:
            columns[name] = series
        else:
            return None  # nested values where scalars belong: let the line reader report them
    df = pd.DataFrame(columns)
    df["line"] = np.arange(1, len(df) + 1, dtype=_line_type(lean))
    for c in totals[0] if totals else ():
        df[META + c] = concat_values([pd.Series(t[c]) for t in totals])
    df.attrs["bad_json_lines"] = []
    del table, col
    release_memory()
    return finish(df, lean)


def _strict_jsonl_table(path: Path):  # noqa: ANN202  (pyarrow.Table | None)
    """The file as Arrow reads it, or None unless it is plain, strict JSONL with one object per line."""
    import pyarrow as pa
    from pyarrow import json as pa_json

    if path.suffix.lower() == ".gz" or not _first_bytes(path).lstrip().startswith(b"{"):
        return None
    lines = _count_utf8_lines(path)
    if lines is None:  # not UTF-8 (Arrow would not say where): the line reader reports the line and byte
        return None
    try:
        table = pa_json.read_json(path, read_options=pa_json.ReadOptions(block_size=1 << 24))
    except (pa.ArrowException, OSError, ValueError):
        return None
    if table.num_rows == 0 or table.num_rows != lines:  # blank lines: line numbers would shift
        return None
    if any(has_nonfinite(col) for col in table.columns):  # Arrow parses NaN/Infinity literals
        return None
    return table


def _check_dropped(lean: Lean, name: str, col) -> None:  # noqa: ANN001  (pyarrow.ChunkedArray)
    """A column a lean load drops, checked first when validation checks it (:class:`Decline` on a problem, or
    where the fast path would decline: nested values)."""
    if lean.canonical(name) in lean.checked:
        series = _arrow_series(name, col)
        if series is None:
            raise Decline("nested")
        check(lean, {lean.canonical(name): series})


def _holds_metadata(col) -> bool:  # noqa: ANN001  (pyarrow.ChunkedArray)
    import pyarrow as pa

    return pa.types.is_struct(col.type) or pa.types.is_string(col.type)


def _metadata_totals(col, lean: Lean, flat: set) -> list[dict[str, np.ndarray]]:  # noqa: ANN001
    """A lean load's style totals from ``conv_metadata``, a slice at a time: those the file has no flat column
    for are checked, the kept ones returned."""
    lean.saw_metadata = True
    totals = []
    for part in _dict_slices(col):
        part_totals = style_from_metadata(part)
        check(lean, {c: v for c, v in part_totals.items() if c not in flat})
        totals.append({c: v for c, v in part_totals.items() if c in lean.keep})
    return totals


def _arrow_series(name: str, col) -> pd.Series | None:  # noqa: ANN001  (pyarrow.ChunkedArray)
    """A kept column as pandas: text as a categorical, ``conv_metadata`` objects as dicts; None for nested
    values anywhere else."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        return pc.dictionary_encode(col).to_pandas()
    if pa.types.is_struct(col.type) and name == "conv_metadata":
        # Arrow fills absent keys with None; a row's dict keeps the keys it had
        return pd.Series([m for part in _dict_slices(col) for m in part], dtype=object)
    if pa.types.is_struct(col.type) or pa.types.is_list(col.type) or pa.types.is_null(col.type):
        return None
    return col.to_pandas()


def _dict_slices(col) -> Iterator[list]:
    """A struct column's rows as dicts without Arrow's None fill-ins, CHUNK_ROWS at a time (lazily: a lean
    load holds one slice's dicts at a time)."""
    for i in range(0, len(col), CHUNK_ROWS):
        rows = col.slice(i, CHUNK_ROWS).to_pylist()
        yield [m if not isinstance(m, dict) else {k: v for k, v in m.items() if v is not None} for m in rows]


def has_nonfinite(col) -> bool:
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(col, pa.ChunkedArray):
        return any(has_nonfinite(chunk) for chunk in col.chunks)
    if pa.types.is_struct(col.type):
        return any(has_nonfinite(col.field(i)) for i in range(col.type.num_fields))
    if pa.types.is_floating(col.type):
        return pc.all(pc.is_finite(col), skip_nulls=True).as_py() not in (True, None)
    return False


def _first_bytes(path: Path, n: int = 64) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(n)


def _count_utf8_lines(path: Path) -> int | None:
    """Number of lines (a last line without a newline counts), or None when the file is not UTF-8; read in
    blocks, so no text is held."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    count, last = 0, b"\n"
    with open(path, "rb") as fh:
        while block := fh.read(1 << 24):
            try:
                decoder.decode(block)
            except UnicodeDecodeError:
                return None
            count += block.count(b"\n")
            last = block[-1:]
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return None
    return count + (last != b"\n")
