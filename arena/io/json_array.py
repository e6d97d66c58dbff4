"""A JSON array of battle objects (Chatbot Arena's ``clean_battle_*.json``) read as a stream, in bounded memory.

The array's text is read a block at a time; its top-level structure is found with array operations on the
block's bytes (quotes not escaped, brackets and commas outside strings: never one Python object per byte or
per record), the commas between a block's complete records become line breaks, the records are parsed by
Arrow's JSON reader (records may span lines; a raw line break inside a string is refused), and each block's
table is cut at once to the columns the load keeps (``conv_metadata`` only when a style total is kept). The
frame is then built as for JSONL (:func:`arena.io.readers.table_frame`), record numbers as ``line``. An
indented array (``json.dump(..., indent=N)``, Chatbot Arena's layout) is cut where its records end, a line break
and the records' indent before ``},``: found among the block's closing braces, the records keep their line
breaks, and only the last block is scanned in full (issue 37: 1.9 s of a 1M-battle read's 4.3 s of CPU).

Like the other fast readers it returns None on anything unusual (not UTF-8, a record that is not an object,
NaN, mixed types, text after the array...): :func:`arena.io.battles.read_file` then parses the file whole and
names the problem as it always did.
"""

from __future__ import annotations

import codecs
import io
import os
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from arena.io.lean_load import Decline, Lean, checks_kept
from arena.io.readers import has_nonfinite, release_memory, table_frame

BLOCK_BYTES = 16 << 20
"""Bytes of array text read at a time (a block's records are parsed together, then cut to the kept columns)."""

PARSE_THREADS = min(2, os.cpu_count() or 1)
"""Blocks parsed at once (Arrow's parse runs outside the GIL, beside the reading and cutting of the next one)."""

_QUOTE_EVENT, _BACKSLASH_EVENT, _OPEN_EVENT, _CLOSE_EVENT, _COMMA_EVENT = 1, 2, 3, 4, 5
_EVENTS = bytes(dict(zip(b'"\\[{]},', (1, 2, 3, 3, 4, 4, 5), strict=True)).get(b, 0) for b in range(256))


class _NotPlain(Exception):  # noqa: N818
    """The text is not a plain array of objects: the whole-file reader names the problem."""


def read_json_array(path: Path, lean: Lean | None = None, block_bytes: int | None = None) -> pd.DataFrame | None:
    """The frame of a JSON array file as the whole-file reader gives it (``line`` = record number), read
    ``block_bytes`` (default :data:`BLOCK_BYTES`) at a time; None when the exact reader must read it (it names
    any problem)."""
    block_bytes = block_bytes or BLOCK_BYTES
    try:
        try:
            return _as_whole_read(table_frame(_array_table(path, lean, block_bytes), lean), lean)
        except Decline:
            full = checks_kept(lean)  # type: ignore[arg-type]
            return table_frame(_array_table(path, full, block_bytes), full)
    except (_NotPlain, Decline):
        return None


def _as_whole_read(df: pd.DataFrame | None, lean: Lean | None) -> pd.DataFrame | None:
    """A full read's text columns as the whole-file parse gives them (``str``, not Arrow's dictionaries): the two
    readers of one file must give the same frame; a lean read keeps its categoricals (validation codes them)."""
    if df is None or lean is not None:
        return df
    for col in df.columns:
        if isinstance(df[col].dtype, pd.CategoricalDtype) and df[col].cat.categories.dtype == "str":
            df[col] = df[col].astype("str")
    return df


def _array_table(path: Path, lean: Lean | None, block_bytes: int):  # noqa: ANN202  (pyarrow.Table)
    """The kept columns of every block, parsed by Arrow in :data:`PARSE_THREADS` threads while the next block
    is read and cut (a block waits for the first one: its types are the later blocks' schema)."""
    import pyarrow as pa

    if path.suffix.lower() == ".gz":
        raise _NotPlain("gzip")
    tables: list = []
    schema, pending = None, deque()
    with ThreadPoolExecutor(PARSE_THREADS, thread_name_prefix="preflab-json") as pool:
        for lines, count in record_lines(path, block_bytes):
            parse_as = schema if schema is not None and _known(lines, schema, lean) else None
            pending.append((pool.submit(_block_table, lines, parse_as), count, schema))
            del lines
            if not tables or len(pending) > PARSE_THREADS:
                schema = _keep(*pending.popleft(), tables, lean)
        while pending:
            _keep(*pending.popleft(), tables, lean)
    if not tables:
        raise _NotPlain("empty")
    try:
        return pa.concat_tables(tables, promote_options="permissive")  # absent: null; ints widen as in one read
    except (pa.ArrowException, ValueError):  # a column's type differs between blocks
        raise _NotPlain("types") from None


def _keep(parsed: Future, count: int, schema, tables: list, lean: Lean | None):  # noqa: ANN001, ANN202
    """Append a parsed block's kept columns to ``tables`` (``schema``: the one its parse skipped fields by);
    the schema later blocks are parsed by (``pyarrow.Schema | None``)."""
    table = parsed.result()
    if table.num_rows != count or any(has_nonfinite(col) for col in table.columns):
        raise _NotPlain("records")
    tables.append(table.select([n for n in table.column_names if _read(n, lean) and not (
        schema is not None and n not in tables[0].schema.names and table[n].null_count == len(table))]))
    del table
    release_memory()
    if lean is not None and not lean.reads_metadata and len(tables) == 1:  # later blocks: only these fields
        return _lean_schema(tables[0].schema, lean)
    return schema


def _block_table(lines: bytearray, schema):  # noqa: ANN001, ANN202  (pyarrow.Schema | None -> pyarrow.Table)
    """One block's records parsed by Arrow; with ``schema`` (a lean read's columns, typed as in the first block)
    every other field is skipped, not built (``conv_metadata``: half the parse), and a block whose values do
    not fit those types is parsed again with types inferred."""
    import pyarrow as pa
    from pyarrow import json as pa_json

    options = pa_json.ReadOptions(block_size=len(lines) + 1)  # one block: records may span lines (indented)
    if schema is not None:
        try:
            return pa_json.read_json(io.BytesIO(lines), read_options=options, parse_options=pa_json.ParseOptions(
                explicit_schema=schema, unexpected_field_behavior="ignore", newlines_in_values=True))
        except (pa.ArrowException, ValueError):
            pass
    try:
        return pa_json.read_json(io.BytesIO(lines), read_options=options,
                                 parse_options=pa_json.ParseOptions(newlines_in_values=True))
    except (pa.ArrowException, ValueError) as e:
        raise _NotPlain(str(e)) from None


def _lean_schema(first, lean: Lean):  # noqa: ANN001, ANN202  (pyarrow.Schema)
    """The fields later blocks build: the first block's, and the checked numbers it lacked (as float64: such a
    column is only checked, so an all-null one, i.e. absent, is dropped again)."""
    import pyarrow as pa

    checked = {n for n, c in lean.renames.items() if c in lean.checked} | set(lean.checked)
    return pa.schema([*first, *(pa.field(n, pa.float64()) for n in sorted(checked - set(first.names)))])


def _known(lines: bytearray, schema, lean: Lean | None) -> bool:  # noqa: ANN001  (pyarrow.Schema)
    """Whether no kept field that the first block lacked appears in this block (a field the schema skips
    must be one the read drops; a name found anywhere, even nested, means: infer this block's types)."""
    assert lean is not None
    wanted = {*lean.keep, *(n for n, c in lean.renames.items() if c in lean.keep)} - set(schema.names)
    return not any(b'"%s"' % n.encode() in lines for n in wanted if isinstance(n, str) and lean.kept(n))


def _read(name: str, lean: Lean | None) -> bool:
    """Whether a block's column is kept: every one in a full read; a lean read's kept and checked columns, and
    ``conv_metadata`` when a style total is kept."""
    if lean is None:
        return True
    if name == "conv_metadata":
        return lean.reads_metadata
    return lean.kept(name) or lean.canonical(name) in lean.checked


def record_lines(path: Path, block_bytes: int) -> Iterator[tuple[bytes, int]]:
    """The array's records, a block at a time, as JSONL bytes (one record per line; an indented array's records
    keep their own line breaks) and their number."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    rest, first, done, indent = b"", True, False, None
    with open(path, "rb") as fh:
        while not done:
            block = fh.read(block_bytes)
            _check_utf8(decoder, block)
            text = rest + block
            if first:
                text, first = _array_body(text), False
                indent = _record_close(text)
            if indent is not None and len(block) == block_bytes:  # (the last block: scanned, to find the end)
                fast = _pretty_block(text, indent)
                if fast is not None:
                    lines, count, rest = fast
                    yield lines, count
                    continue
            cut, end = _top_level(text)
            if end is not None:  # the array's closing bracket: only whitespace may follow
                if text[end + 1:].strip() or fh.read(1):
                    raise _NotPlain("text after the array")
                body, rest, done = text[:end], b"", True
                if not body.strip() and not cut.size:
                    return
                cut = np.append(cut, end)
            elif not block:
                raise _NotPlain("unterminated array")
            elif not cut.size:  # one record longer than a block: read on
                rest = text
                continue
            else:
                body, rest = text[:cut[-1]], text[cut[-1] + 1:]
            yield _as_lines(body, cut[:-1]), len(cut)


def _check_utf8(decoder: codecs.IncrementalDecoder, block: bytes) -> None:
    """_NotPlain unless the text so far is UTF-8 (an ASCII block, nothing pending: no decoding at all)."""
    if block.isascii() and not decoder.getstate()[0]:
        return
    try:
        decoder.decode(block, final=not block)
    except UnicodeDecodeError:
        raise _NotPlain("utf-8") from None


def _array_body(text: bytes) -> bytes:
    """The text after the array's opening bracket."""
    text = text.lstrip()
    if not text.startswith(b"["):
        raise _NotPlain("not an array")
    return text[1:]


def _record_close(text: bytes) -> bytes | None:
    """The indent of the records in an indented array (``json.dump(..., indent=N)``, as Chatbot Arena's files
    are), where a record ends with a line break, this indent and ``},``; None for other layouts (every block is
    then scanned in full). A line break is never inside a JSON string, so such an end is outside strings."""
    start = len(text) - len(text.lstrip())
    head = text[:start]
    if text[start:start + 1] != b"{" or b"\n" not in head:
        return None
    indent = head[head.rfind(b"\n") + 1:]
    return None if indent.strip(b" \t") else indent


def _pretty_block(text: bytes, indent: bytes) -> tuple[bytearray, int, bytes] | None:
    """A block's complete records (one a line: the commas between them become line breaks), their number and
    the text left over, cut after each line break, ``indent``, ``}`` and ``,`` (found among the block's
    closing braces, not by a scan of every quote and bracket); None where the block has no such record end.
    The cuts need no other check: one that is not between two records leaves a text that is not a sequence
    of whole objects, and Arrow's parse then fails or counts other rows (the whole read names the problem)."""
    arr = np.frombuffer(text, np.uint8)
    k = len(indent)
    brace = np.flatnonzero(arr[k + 1:-1] == 125) + k + 1  # room for the line break before, the comma after
    ends = brace[arr[brace + 1] == 44]
    ends = ends[arr[ends - k - 1] == 10]
    for j, byte in enumerate(indent):
        ends = ends[arr[ends - k + j] == byte]
    if not ends.size:
        return None
    commas = ends + 1
    lines = bytearray(memoryview(text)[:commas[-1]])
    np.frombuffer(lines, np.uint8)[commas[:-1]] = 10
    return lines, len(commas), text[commas[-1] + 1:]


def _as_lines(body: bytes, commas: np.ndarray) -> bytearray:
    """The records, the commas between them made line breaks (their own line breaks kept: Arrow parses records
    across lines, and refuses a raw line break inside a string, as the whole-file parse does)."""
    lines = bytearray(body)
    np.frombuffer(lines, np.uint8)[commas] = 10
    return lines


def _top_level(text: bytes) -> tuple[np.ndarray, int | None]:
    """The positions of the commas between the array's records in ``text`` (which starts inside the array,
    outside any record) and of the array's closing bracket (None if not in ``text``). The bytes that matter
    (quotes, backslashes, brackets, commas) are found in one pass; the rest is arithmetic on their positions."""
    codes = np.frombuffer(text.translate(_EVENTS), np.uint8)
    pos = np.flatnonzero(codes)
    kind = codes[pos]
    if (kind == _BACKSLASH_EVENT).any():  # a quote right after a backslash may be escaped
        quotes = np.flatnonzero(kind == _QUOTE_EVENT)
        quotes = quotes[quotes > 0]
        after = quotes[(kind[quotes - 1] == _BACKSLASH_EVENT) & (pos[quotes - 1] == pos[quotes] - 1)]
        kind = kind.copy()
        for q in after.tolist():
            if _escaped(codes, int(pos[q])):
                kind[q] = 0
    quote = kind == _QUOTE_EVENT
    outside = (np.cumsum(quote, dtype=np.int32) - quote) % 2 == 0  # an even number of quotes before
    step = np.where(outside & (kind == _OPEN_EVENT), 1, 0) - np.where(outside & (kind == _CLOSE_EVENT), 1, 0)
    depth = np.cumsum(step, dtype=np.int32)  # nesting after each event, 0 between records, -1: the array ended
    ends = np.flatnonzero(depth < 0)
    end = int(pos[ends[0]]) if ends.size else None
    top = pos[outside & (kind == _COMMA_EVENT) & (depth == 0)]
    if end is not None:
        top = top[top < end]
    return top, end


def _escaped(arr: np.ndarray, q: int) -> bool:
    """Whether the quote at ``q`` follows an odd run of backslashes (``arr``: the bytes as event codes)."""
    n = 0
    while q - n - 1 >= 0 and arr[q - n - 1] == _BACKSLASH_EVENT:
        n += 1
    return n % 2 == 1
