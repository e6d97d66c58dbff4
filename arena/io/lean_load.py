"""Lean loads (bounded memory on large files): which columns a ``load_battles(..., lean=True)`` keeps, and
each chunk cut to them.

The plan (:func:`lean_plan`) names the columns the statistics read (names and labels held as categoricals,
``conv_metadata`` reduced to its style totals) and the numeric columns validation checks but the command does
not read (``tstamp``, style totals: ``checked``). :func:`shrink` cuts one chunk, before the next is read, and
checks those columns (:class:`Decline` on a problem: the full read then reports it in its words); :func:`concat`
and :func:`finish` join the chunks as the whole-file readers' frame. The chunked readers are :mod:`arena.io.readers`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from arena.io.schema import (
    NUMBER_RANGES,
    OPTIONAL_TEXT,
    REQUIRED,
    STYLE_COLUMNS,
    json_cell,
    number_checks,
    style_from_metadata,
)

META = "\x00meta:"  # prefix of the style totals read from conv_metadata, before the file-level decision


class Decline(Exception):  # noqa: N818
    """A chunked reader cannot give the exact frame cheaply (a checked column has a problem): read it whole."""


@dataclass
class Lean:
    """What a lean load keeps: canonical column names (after the layout's renaming), the renaming, and the
    numeric columns it checks but drops (``tstamp``, style totals the command does not read)."""

    keep: frozenset[str]
    renames: dict[str, str]
    checked: frozenset[str] = field(default=frozenset())
    saw_metadata: bool = field(default=False)

    @property
    def reads_metadata(self) -> bool:
        """Whether ``conv_metadata`` is read at all: only when a style total is kept (style control, ``info``).
        Otherwise the column is neither decoded nor parsed, nor are its totals checked: on Chatbot Arena's
        files it is most of a read's time (Parquet 7.2 s with it, 1.9 s without, 1M battles)."""
        return bool(self.keep & set(STYLE_COLUMNS))

    def canonical(self, col: object) -> object:
        return self.renames.get(col, col)  # type: ignore[call-overload]

    def kept(self, col: object) -> bool:
        return col == "line" or self.canonical(col) in self.keep


def lean_plan(renames: dict[str, str], extra: Collection[str] = (), need: Collection[str] | None = None
              ) -> Lean | None:
    """The columns the statistics (info, rank, filters, style control) read, or the required ones plus ``need``;
    None when the layout renames ``conv_metadata`` or a style column (the exact reader handles that)."""
    touched = {"conv_metadata", *STYLE_COLUMNS}
    if touched & (set(renames) | set(renames.values())):
        return None
    optional = (*OPTIONAL_TEXT, "tstamp", "anony", *STYLE_COLUMNS) if need is None else tuple(need)
    keep = frozenset((*REQUIRED, *optional, *extra))
    return Lean(keep, dict(renames), frozenset(NUMBER_RANGES) - keep)


def checks_kept(lean: Lean) -> Lean:
    """The plan for a reader that cannot decline: checked columns kept (validated, then dropped by the caller)."""
    return Lean(lean.keep | lean.checked, lean.renames)


def text_kept(lean: Lean) -> set[str]:
    """Canonical columns that become categoricals or strings downstream (safe to hold as categoricals)."""
    return {*REQUIRED, *OPTIONAL_TEXT}


class _ParsedCells:
    """A tabular file's ``conv_metadata`` JSON text, parsed one cell at a time as it is iterated (as
    :func:`arena.io.battles.parse_conv_metadata` would, without holding a chunk's dicts)."""

    def __init__(self, cells: pd.Series, lines: pd.Series, name: str) -> None:
        self.cells, self.lines, self.name = cells, lines, name

    def __len__(self) -> int:
        return len(self.cells)

    def __iter__(self) -> Iterator[object]:
        for v, n in zip(self.cells, self.lines, strict=True):
            yield json_cell(v, self.name, n)


def shrink(chunk: pd.DataFrame, lean: Lean | None, categorize: bool = True, text_of: Path | None = None
           ) -> pd.DataFrame:
    """One chunk cut to the kept columns, ``conv_metadata`` replaced by its kept style totals (under a private
    name: whether a flat column wins is decided for the whole file in :func:`finish`), the checked columns
    checked (:class:`Decline` on any problem) and dropped, and (``categorize``: chunks that all have the same
    columns) names and labels as categoricals. ``text_of``: the file whose ``conv_metadata`` is JSON text."""
    if lean is None:
        return chunk
    attrs = chunk.attrs  # before pandas copies them (deeply): the JSONL reader appends to its list later
    if "conv_metadata" in chunk and not lean.reads_metadata:
        chunk = chunk.drop(columns="conv_metadata")
    if "conv_metadata" in chunk:
        lean.saw_metadata = True
        meta = chunk["conv_metadata"]
        totals = style_from_metadata(meta if text_of is None else _ParsedCells(meta, chunk["line"], str(text_of)))
        chunk = chunk.drop(columns="conv_metadata")
    else:
        totals = {}
    by_name = {lean.canonical(c): c for c in chunk.columns}
    check(lean, {col: chunk[by_name[col]] if col in by_name else totals.get(col) for col in lean.checked})
    chunk = chunk[[c for c in chunk.columns if lean.kept(c)]]
    text = text_kept(lean)
    out = {}
    for col in chunk.columns:
        s = chunk[col]
        if categorize and lean.canonical(col) in text and not isinstance(s.dtype, pd.CategoricalDtype) \
                and _all_text(s):
            s = s.astype("category")
        out[col] = s
    for col in STYLE_COLUMNS if lean.saw_metadata else ():  # a file without conv_metadata has no totals
        if col in lean.keep:
            out[META + col] = pd.Series(totals[col] if col in totals else np.full(len(chunk), np.nan),
                                         index=chunk.index)
    lean_chunk = pd.DataFrame(out, index=chunk.index)
    lean_chunk.attrs = attrs  # the JSONL reader's list of skipped lines travels with the chunks
    return lean_chunk


def check(lean: Lean, values: dict[str, object]) -> None:
    """:class:`Decline` when a checked column's values (a flat column wins over ``conv_metadata``'s totals, as in
    :func:`arena.io.battles.validate`; None: absent) have any problem that validation would report."""
    for col, v in values.items():
        if v is not None and col in lean.checked and any(
                m.any() for *_, m in number_checks(pd.Series(v), col, *NUMBER_RANGES[col])):
            raise Decline(col)


def _all_text(s: pd.Series) -> bool:
    return s.dtype == "str" or (s.dtype == object and pd.api.types.infer_dtype(s, skipna=True) == "string")


def concat(chunks: list[pd.DataFrame]) -> pd.DataFrame:
    """Chunks with the same columns as one frame: a column categorical in every chunk stays categorical
    (categories united in order of appearance, as Arrow unites dictionaries), others are concatenated."""
    if len(chunks) == 1:
        return chunks[0]
    out = {}
    for col in list(chunks[0].columns):
        parts = [ch.pop(col) for ch in chunks]  # each chunk's column is freed once it is copied
        if isinstance(col, str) and col.startswith(META):
            out[col] = concat_values(parts)
        elif all(isinstance(p.dtype, pd.CategoricalDtype) for p in parts) and len(
                {str(p.cat.categories.dtype) for p in parts if len(p.cat.categories)}) <= 1:
            # an all-missing chunk's (empty) categories take the others' type
            typed = [p.cat.categories.dtype for p in parts if len(p.cat.categories)]
            parts = [p if len(p.cat.categories) or not typed else
                     p.cat.set_categories(pd.Index([], dtype=typed[0])) for p in parts]
            out[col] = pd.Series(pd.api.types.union_categoricals(parts, ignore_order=True))
        else:
            out[col] = pd.concat(parts, ignore_index=True)
    return pd.DataFrame(out)


def concat_values(parts: list[pd.Series]) -> np.ndarray:
    arrays = [p.to_numpy() for p in parts]
    if any(a.dtype == object for a in arrays):
        arrays = [a.astype(object) for a in arrays]
    return np.concatenate(arrays) if arrays else np.zeros(0)


def finish(df: pd.DataFrame, lean: Lean | None) -> pd.DataFrame:
    """The style totals as :func:`arena.io.battles._fill_style_columns` would add them: only the columns the file
    lacks, only when it has ``conv_metadata``, appended in :data:`STYLE_COLUMNS` order."""
    if lean is None:
        return df
    meta = [c for c in df.columns if isinstance(c, str) and c.startswith(META)]
    fill = [c for c in STYLE_COLUMNS if c not in df and META + c in df]
    out = df.drop(columns=meta)
    for col in fill:
        out[col] = df[META + col].to_numpy()
    return out
