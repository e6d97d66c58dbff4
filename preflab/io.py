"""Table and JSONL I/O shared by every package: one JSONL reader, one table writer, ``-`` = stdout."""

from __future__ import annotations

import contextlib
import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from preflab.errors import InputError

STDOUT = "-"


def is_stdout(path: str | Path | None) -> bool:
    """True when an output path means standard output (the CLI convention ``-``)."""
    return path is not None and str(path) == STDOUT


@contextlib.contextmanager
def open_output(path: str | Path, mode: str = "w") -> Iterator[IO[Any]]:
    """Open an output path for writing; ``-`` yields standard output (text or binary) and never closes it."""
    if is_stdout(path):
        stream = sys.stdout.buffer if "b" in mode else sys.stdout
        yield stream
        stream.flush()
        return
    with open(path, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as fh:
        yield fh


def write_output(path: str | Path, data: str | bytes) -> str:
    """Write text (UTF-8) or bytes to ``path``, or to standard output for ``-``; returns where it wrote."""
    with open_output(path, "wb" if isinstance(data, bytes) else "w") as fh:
        fh.write(data)
    return "stdout" if is_stdout(path) else str(path)


# ------------------------------------------------------------------------------------------- reading
# Every reader goes through these: bytes -> (binary? gzip?) -> UTF-8 text -> JSON / CSV / Parquet, each failure
# an InputError naming the file and, where there is one, the line.

_SNIFF = 8192


def _open_bytes(path: Path) -> IO[bytes]:
    import gzip

    if path.suffix.lower() == ".gz":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


def read_bytes(path: str | Path, error: type[ValueError] = InputError) -> bytes:
    """A file's bytes (gunzipped for ``.gz``); a missing, unreadable or corrupt-gzip file is an input error."""
    import gzip
    import zlib

    path = Path(path)
    if not path.is_file():
        raise error(str(path), None, None, "file not found" if not path.exists() else "not a file",
                    "check the path")
    try:
        with _open_bytes(path) as fh:
            return fh.read()
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise error(str(path), None, None, f"not a readable gzip file ({e})",
                    "pass the file uncompressed or re-compress it") from None


def decode_error(data: bytes, source: str, e: UnicodeDecodeError, line_offset: int = 0,
                 error: type[ValueError] = InputError) -> ValueError:
    """The input error for a failed UTF-8 decode: the line and byte of the first bad byte."""
    line = data.count(b"\n", 0, e.start) + 1 + line_offset
    col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
    bad = data[e.start:e.start + 1].hex()
    return error(source, line, None, f"not UTF-8 text (byte 0x{bad} at column {col})",
                 "save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)")


def check_text(head: bytes, source: str, error: type[ValueError] = InputError) -> None:
    """Refuse binary data (a NUL byte in the first 8 KiB) before a text parser sees it."""
    if b"\x00" in head[:_SNIFF]:
        what = "a Parquet file" if head.startswith(b"PAR1") else "binary data"
        raise error(source, None, None, f"{what}, not text",
                    "pass a UTF-8 text file (.json, .jsonl, .csv) or give the file its real extension")


def read_text(path: str | Path, error: type[ValueError] = InputError) -> str:
    """A text file as str: gunzipped, refused when binary, decoded as UTF-8 (a BOM is dropped)."""
    data = read_bytes(path, error)
    check_text(data, str(path), error)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise decode_error(data, str(path), e, error=error) from None


def iter_text_lines(path: str | Path, error: type[ValueError] = InputError) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of a UTF-8 text file, read as a stream (constant memory; ``.gz`` allowed).

    Binary data, a missing file and a line that is not UTF-8 are input errors naming the file (and line)."""
    path = Path(path)
    source = str(path)
    read_bytes_head = _head(path, error)
    check_text(read_bytes_head, source, error)
    try:
        with _open_bytes(path) as fh:
            for n, raw in enumerate(fh, start=1):
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise decode_error(raw, source, e, line_offset=n - 1, error=error) from None
                yield n, (text.removeprefix("\ufeff") if n == 1 else text)
    except (EOFError, OSError) as e:  # a truncated or corrupt gzip stream
        raise error(source, None, None, f"cannot read the file ({e})", "check that it is complete") from None


def _head(path: Path, error: type[ValueError]) -> bytes:
    import gzip
    import zlib

    if not path.is_file():
        raise error(str(path), None, None, "file not found" if not path.exists() else "not a file", "check the path")
    try:
        with _open_bytes(path) as fh:
            return fh.read(_SNIFF)
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise error(str(path), None, None, f"not a readable gzip file ({e})",
                    "pass the file uncompressed or re-compress it") from None


def parse_json(text: str, source: str, line: int | None = None, hint: str = "fix the JSON",
               error: type[ValueError] = InputError) -> Any:
    """``json.loads`` with its error as an input error (line: the JSON's own line, or ``line`` for a JSONL line)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        where = line if line is not None else e.lineno
        raise error(source, where, None, f"not valid JSON ({e.msg} at column {e.colno})", hint) from None
    except RecursionError:
        raise error(source, line, None, "JSON nested too deeply", hint) from None


def load_json(path: str | Path, hint: str = "fix the JSON", error: type[ValueError] = InputError) -> Any:
    """A whole JSON document from a file (see :func:`read_text`, :func:`parse_json`)."""
    return parse_json(read_text(path, error), str(path), None, hint, error)


def load_json_records(path: str | Path, hint: str = "give a JSON array of objects",
                      error: type[ValueError] = InputError) -> list[dict]:
    """A JSON file holding an array of objects; anything else (an object, numbers, nested lists) is an error
    naming the record."""
    data = load_json(path, hint, error)
    if not isinstance(data, list):
        raise error(str(path), None, None, f"expected a JSON array of objects, got {json_type(data)}", hint)
    for i, rec in enumerate(data, start=1):
        if not isinstance(rec, dict):
            raise error(str(path), i, None, f"record {i} is {json_type(rec)}, not a JSON object", hint)
    return data


def json_type(value: Any) -> str:
    """A JSON value's type in words (for messages)."""
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number",
             float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def iter_jsonl(path: str | Path, hint: str = "write one JSON object per line",
               error: type[ValueError] = InputError, objects: bool = True) -> Iterator[tuple[int, Any]]:
    """``(line number, record)`` for each non-blank line of a JSONL file (UTF-8, optionally gzipped).

    A line that is not JSON, or (with ``objects``) not a JSON object, raises
    ``error(source, line, None, problem, hint)`` naming the file and line; so do bad bytes and binary data.
    """
    source = str(path)
    for line, raw in iter_text_lines(path, error):
        if not raw.strip():
            continue
        record = parse_json(raw, source, line, hint, error)
        if objects and not isinstance(record, dict):
            raise error(source, line, None, f"{json_type(record)}, not a JSON object", hint)
        yield line, record


def nonfinite_field(record: dict) -> str | None:
    """The first field of a JSON record holding NaN or ±Infinity (Python's json accepts them; JSON does not)."""
    for key, value in record.items():
        if isinstance(value, float) and not math.isfinite(value):
            return str(key)
        if isinstance(value, dict):
            inner = nonfinite_field(value)
            if inner is not None:
                return f"{key}.{inner}"
    return None


def require_rows(n: int, source: str, what: str = "rows", hint: str = "",
                 error: type[ValueError] = InputError) -> None:
    """An empty input is an error, never a silent zero."""
    if n == 0:
        raise error(source, None, None, f"no {what} (the file is empty or has only a header)",
                    hint or "check that you passed the right file")


def read_csv(path: str | Path, error: type[ValueError] = InputError, **kwargs: Any) -> Any:
    """``pandas.read_csv`` (UTF-8, ``.gz`` allowed) with empty files, binary data, bad bytes and ragged rows
    as input errors naming the file and line."""
    import re

    import pandas as pd

    path = Path(path)
    source = str(path)
    head = _head(path, error)
    check_text(head, source, error)
    if not head.strip():
        raise error(source, None, None, "empty file (no header line)", "write a header line, then one row per line")
    try:
        return pd.read_csv(path, encoding="utf-8", encoding_errors="strict", **kwargs)
    except UnicodeDecodeError as e:
        data = read_bytes(path, error)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as first:
            raise decode_error(data, source, first, error=error) from None
        raise error(source, None, None, f"not UTF-8 text ({e})", "save the file as UTF-8") from None
    except pd.errors.EmptyDataError:
        raise error(source, None, None, "empty file (no header line)",
                    "write a header line, then one row per line") from None
    except pd.errors.ParserError as e:
        m = re.search(r"line (\d+)", str(e))
        raise error(source, int(m.group(1)) if m else None, None, f"not valid CSV ({str(e).strip()[:120]})",
                    "quote fields that contain commas or newlines") from None


def read_parquet(path: str | Path, error: type[ValueError] = InputError, **kwargs: Any) -> Any:
    """``pandas.read_parquet`` with a corrupt or non-Parquet file as an input error."""
    import pandas as pd

    try:
        import pyarrow as pa
        arrow_errors: tuple[type[BaseException], ...] = (pa.ArrowException,)
    except ImportError:  # pragma: no cover  (pyarrow is a dependency)
        arrow_errors = ()
    source = str(path)
    if not Path(path).is_file():
        raise error(source, None, None, "file not found", "check the path")
    try:
        _pandas_metadata_read(path)
        return pd.read_parquet(path, **kwargs)
    except (*arrow_errors, OSError, ValueError, KeyError, TypeError) as e:  # Key/Type: corrupt pandas metadata
        raise error(source, None, None, f"not a readable Parquet file ({str(e).strip()[:160]})",
                    "write it again with pandas/pyarrow, or pass CSV or JSONL") from None


def _pandas_metadata_read(path: str | Path) -> None:
    """The file's ``pandas`` metadata applied to no rows, before any page is read: ``read_parquet`` reads it first
    when given ``columns=`` and after the pages otherwise, so a file corrupt in both was named for one problem or
    the other by the reads of one file (a fuzz draw, seed 5). Nothing when the footer is unreadable: the read
    names that."""
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except Exception:  # noqa: BLE001
        return
    if schema.metadata and b"pandas" in schema.metadata:
        schema.empty_table().to_pandas()


def strict_json(value: Any) -> Any:
    """``value`` with every non-finite float (an unbounded interval, a missing value) as ``None``: strict JSON
    has no ``Infinity`` or ``NaN``, and a reader should not need to guess them."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:  # numpy scalars
        return strict_json(value.item())
    return value


#: First characters that make a spreadsheet read a cell as a formula (OWASP "CSV Injection"), with the
#: full-width and small forms that spreadsheets fold to them (U+FF1D, U+FF0B, U+FF0D, U+FF20; U+FE66, ...).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20", "\ufe66",
                  "\ufe62", "\ufe63", "\ufe6b")


def csv_safe(df: Any) -> Any:
    """A copy of ``df`` whose text cells cannot run as spreadsheet formulas: a cell starting with
    ``= + - @`` (or their full-width forms), tab, carriage return or line feed gets a leading ``'`` (OWASP,
    "CSV Injection"). Numbers (also negative ones) are untouched; only text columns change. Use it (through
    :func:`safe_csv_bytes`) for every CSV that people open."""
    out = df.copy()
    for col in out.columns:
        if getattr(out[col].dtype, "kind", "O") not in "biufcmM":  # text, object or category columns
            out[col] = out[col].map(lambda v: "'" + v if isinstance(v, str) and v.startswith(FORMULA_STARTS) else v)
    return out


def safe_csv_bytes(df: Any) -> bytes:
    """``df`` as CSV for people to open: formulas neutralised (:func:`csv_safe`), and every cell holding a
    carriage return or line feed quoted (CRLF row ends make the writer quote both; a bare CR in an unquoted
    cell split the row in spreadsheets)."""
    return csv_safe(df).to_csv(index=False, lineterminator="\r\n").encode()


def write_table(df: Any, path: str | Path, meta_key: str | None = None, stdout_format: str = "csv") -> str:
    """Write a result table by extension (.csv, .json, .jsonl, .parquet); ``-`` writes ``stdout_format``
    (csv or jsonl) to stdout.

    With ``meta_key`` a .json file holds ``{meta_key: records, "meta": df.attrs}`` (leaderboards keep their
    footer); otherwise a plain list of records. Returns where it wrote (``"stdout"`` for ``-``).
    """
    if is_stdout(path):
        if stdout_format == "jsonl":
            sys.stdout.write(df.to_json(orient="records", lines=True, force_ascii=False))
        else:
            df.to_csv(sys.stdout, index=False)
        sys.stdout.flush()
        return "stdout"
    path = Path(path)
    name = path.name.lower()
    if name.endswith(".csv"):
        df.to_csv(path, index=False)
    elif name.endswith(".jsonl"):
        df.to_json(path, orient="records", lines=True)
    elif name.endswith(".json"):
        if meta_key:
            doc = {meta_key: df.to_dict("records"), "meta": dict(df.attrs.items())}
            path.write_text(json.dumps(strict_json(doc), indent=1, default=str, allow_nan=False),
                            encoding="utf-8")
        else:
            df.to_json(path, orient="records", indent=1)
    elif name.endswith((".parquet", ".pq")):
        plain = df.copy()
        plain.attrs = {}
        plain.to_parquet(path, index=False)
    else:
        raise ValueError(f"{path}: unknown output format; use .csv, .json, .jsonl, .parquet or - for stdout")
    return str(path)
