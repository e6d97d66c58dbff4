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


def iter_jsonl(path: str | Path, hint: str = "write one JSON object per line",
               error: type[ValueError] = InputError) -> Iterator[tuple[int, Any]]:
    """``(line number, record)`` for each non-blank line of a JSONL file.

    A line that is not JSON raises ``error(source, line, None, problem, hint)`` naming the file and line.
    """
    source = str(path)
    with open(path, encoding="utf-8") as fh:
        for line, text in enumerate(fh, start=1):
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as e:
                raise error(source, line, None, f"not valid JSON ({e.msg})", hint) from None
            yield line, record


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


#: First characters that make a spreadsheet read a cell as a formula (OWASP "CSV Injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(df: Any) -> Any:
    """A copy of ``df`` whose text cells cannot run as spreadsheet formulas: a cell starting with
    ``= + - @``, tab or carriage return gets a leading ``'`` (OWASP, "CSV Injection"). Numbers (also
    negative ones) are untouched; only text columns change. Use it for every CSV that people open."""
    out = df.copy()
    for col in out.columns:
        if getattr(out[col].dtype, "kind", "O") not in "biufcmM":  # text, object or category columns
            out[col] = out[col].map(lambda v: "'" + v if isinstance(v, str) and v.startswith(FORMULA_STARTS) else v)
    return out


TABLE_FORMATS = (".csv", ".json", ".jsonl", ".parquet")


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
