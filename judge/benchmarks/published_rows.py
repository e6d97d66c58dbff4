"""RewardBench's two published per-prompt layouts, read as records: the results repository's
``eval-set-scores/<model>.json`` (one JSON object of equal-length columns plus scalar ``model``,
``model_type``, ``chat_template``; written by ``save_to_hub`` with ``indent=4``) and the ``rewardbench``
command's ``<model>_outputs.jsonl`` (one JSON object per prompt). Both come back as ``(line, record)``:
the JSONL line, or the column index + 1 (the record) for the column object. The record checks every
benchmark reader shares live here too (:func:`require_finite`, :func:`checked_subset`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from preflab.errors import InputError
from preflab.io import iter_jsonl, nonfinite_field, parse_json, read_text

SCALARS = ("model", "model_type", "chat_template")


def _columns(data: dict, source: str, hint: str) -> Iterator[tuple[int, dict]]:
    """Records from a column object: every list-valued key is a column (all as long as ``subset``); other
    keys (``model``, a ``results_leaderboard`` summary some tools add) are the file's metadata."""
    columns = {k: v for k, v in data.items() if isinstance(v, list)}
    if "subset" not in columns:
        raise InputError(source, None, "subset", "missing (or not a list)", hint)
    n = len(columns["subset"])
    for key, value in columns.items():
        if len(value) != n:
            raise InputError(source, None, key, f"{len(value)} values, but 'subset' has {n}",
                             "every column lists one value per prompt")
    for i in range(n):
        yield i + 1, {k: v[i] for k, v in columns.items()}


def iter_records(path: str | Path, hint: str) -> tuple[dict, Iterator[tuple[int, dict]]]:
    """The file's scalar fields (``model``, ...) and its per-prompt records, whichever layout it has."""
    source = str(path)
    text = read_text(path)
    if text.lstrip()[:1] == "{":
        try:
            data = parse_json(text, source, None, hint)
        except InputError as e:
            if "Extra data" not in e.problem:
                raise
            data = None  # not one object: a JSONL file
        if isinstance(data, dict):
            return {k: data.get(k) for k in SCALARS if k in data}, _columns(data, source, hint)
    return {}, iter_jsonl(path, hint)


def require_finite(rec: dict, source: str, line: int, hint: str) -> None:
    """Raise :class:`InputError` (file, line, field) when a field of a published record is NaN or Infinity."""
    bad = nonfinite_field(rec)
    if bad:
        raise InputError(source, line, bad, "NaN or Infinity is not a number here", hint)


def checked_subset(rec: dict, source: str, line: int, hint: str) -> str:
    """A RewardBench (v1 or 2) record's ``subset`` after the checks every such record gets: no NaN or
    Infinity in any field, a subset named by a non-empty string. Bad input raises :class:`InputError`."""
    require_finite(rec, source, line, hint)
    subset = rec.get("subset")
    if not isinstance(subset, str) or not subset:
        raise InputError(source, line, "subset", "missing" if subset in (None, "") else "not a string", hint)
    return subset
