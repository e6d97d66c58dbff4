"""The typed data model, :class:`Battles`, and :func:`validate`, which makes one from a raw frame.

Every reader's raw frame (whole-file, chunked or lean) and every frame handed in (the app, the simulator, judge
verdicts) passes through :func:`validate`: columns renamed to the Chatbot Arena layout, names and labels checked
on their unique values, then typed. Its checks are declared in one table, in the order a row's first problem is
reported.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from arena.io.schema import (
    NUMBER_RANGES,
    OPTIONAL_TEXT,
    REQUIRED,
    STYLE_COLUMNS,
    ColumnMap,
    OnError,
    SkippedRow,
    not_utf8_rows,
    number_checks,
    quoted_bytes,
    style_from_metadata,
)
from preflab.errors import InputError, closest, did_you_mean, shown
from preflab.io import require_rows
from preflab.outcomes import BATTLE_LABELS


@dataclass(frozen=True)
class Battles:
    """Validated battles in the Chatbot Arena layout.

    ``df`` has ``model_a``/``model_b`` as categoricals sharing one category list (the model names,
    sorted), ``winner`` as a categorical over :data:`preflab.outcomes.BATTLE_LABELS`, optional columns
    (``judge``, ``tstamp``, ``question_id``, ``category``, ``language``, ``anony``, the style totals of
    :data:`STYLE_COLUMNS`, ``conv_metadata`` as loaded) and any extra source columns, kept for a lossless round trip.
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
        """Outcome codes (:class:`preflab.outcomes.Outcome`: FIRST, SECOND, TIE, TIE_BOTHBAD) as int8."""
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


#: What to do about each problem validation finds (number checks carry their own: see ``number_checks``).
WHAT_TO_DO = {
    "not a string": "write names and labels as strings",
    "not valid UTF-8 text": "write the file's text as UTF-8",
    "empty model name": "give every battle two model names",
    "unknown winner label": f"use one of {list(BATTLE_LABELS)} or map labels with ColumnMap(winners={{...}})",
    "a model battling itself": "drop the row or fix the names",
}

Check = tuple[str, str, str, np.ndarray]
"""One declared check: (column, problem, what to do, the rows that have the problem)."""


def _check(col: str, problem: str, rows: np.ndarray | None) -> list[Check]:
    return [] if rows is None else [(col, problem, WHAT_TO_DO[problem], rows)]


def validate(raw: pd.DataFrame, source: str, cmap: ColumnMap, on_error: OnError = "raise",
             read: Collection[str] | None = None) -> Battles:
    """Rename, check and type a raw frame (see :func:`arena.io.battles.load_battles`). ``read``: the canonical
    columns the caller keeps, whose text must be UTF-8 (None: every column); a lean load ignores bad bytes in
    the columns it drops. Each row is reported (or skipped) for the first of its problems, in the order of
    the checks."""
    df = _renamed(raw, source, cmap)
    skipped = [SkippedRow(int(n), f, p) for n, f, p in raw.attrs.get("bad_json_lines", [])]
    require_rows(len(df) + len(skipped), source, "battles", "give one battle per row (model_a, model_b, winner)")
    # Validate on the unique labels, not row by row: 10M rows cost a factorize, not 10M string ops.
    checks = _typed_names(df, cmap, read)
    _fill_style_columns(df)
    for col in (c for c in NUMBER_RANGES if c in df):
        checks += number_checks(df[col], col, *NUMBER_RANGES[col])
    bad_any = np.zeros(len(df), dtype=bool)
    for col, problem, hint, rows in checks:
        rows = rows & ~bad_any  # one reason per row: the first that applies
        if not rows.any():
            continue
        if on_error == "raise":
            raise _row_error(raw, df, source, cmap, col, problem, hint, int(np.argmax(rows)))
        skipped += [SkippedRow(int(n), col, problem) for n in df["line"].to_numpy()[rows]]
        bad_any |= rows
    if bad_any.any():  # no copy of a large, clean frame
        df = df.loc[~bad_any]
    skipped.sort(key=lambda s: s.line)
    if len(df) == 0:
        raise InputError(source, None, None, f"no valid battles: all {len(skipped)} row(s) are bad",
                         "fix the rows (load without skipping to see the first problem)")
    return Battles(_finalise(df), source, tuple(skipped))


def _renamed(raw: pd.DataFrame, source: str, cmap: ColumnMap) -> pd.DataFrame:
    """``raw`` in the canonical column names, with a ``line`` column; an input error when a required one lacks."""
    df = raw.rename(columns=dict(cmap.columns))
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        found = [str(c) for c in raw.columns.drop("line", errors="ignore")]
        spare = [c for c in found if c not in df.columns or c not in REQUIRED]
        guesses = {c: closest(c, spare) for c in missing}
        mapping = ", ".join(f"{g!r}: {c!r}" for c, g in guesses.items() if g) or "..."
        raise InputError(source, None, missing[0], f"missing column(s) {missing}"
                         f"{did_you_mean(missing[0], spare)}; found: {', '.join(found)}",
                         f"rename the columns or pass layout=ColumnMap(columns={{{mapping}}})")
    if "line" not in df:
        df["line"] = np.arange(len(df)) + 1
    return df


def _typed_names(df: pd.DataFrame, cmap: ColumnMap, read: Collection[str] | None) -> list[Check]:
    """The checks of the names, labels and text columns; ``model_a``, ``model_b`` and ``winner`` typed as
    categoricals in place (a row with a bad value gets code -1, and is dropped or reported by its check)."""
    checks: list[Check] = []
    codes, labels = {}, {}
    for col in REQUIRED:
        codes[col], labels[col], not_text, not_utf8 = _factorize_stripped(df[col])
        checks += _check(col, "not a string", not_text) + _check(col, "not valid UTF-8 text", not_utf8)
    for col in df.columns.drop([*REQUIRED, "line", "conv_metadata"], errors="ignore"):  # e.g. conversation text
        if read is None or col in read:
            checks += _check(col, "not valid UTF-8 text", not_utf8_rows(df[col]))
    if cmap.winners:
        labels["winner"] = pd.Index([cmap.winners.get(w, w) for w in labels["winner"]], dtype=object)
    for col in ("model_a", "model_b"):
        checks += _check(col, "empty model name", np.append(np.asarray(labels[col] == ""), True)[codes[col]])
    names = sorted((set(labels["model_a"]) | set(labels["model_b"])) - {""})
    model_codes = {c: _lookup(pd.Index(names).get_indexer(labels[c]))[codes[c]] for c in ("model_a", "model_b")}
    known = np.append(np.asarray(labels["winner"].isin(BATTLE_LABELS)), False)[codes["winner"]]
    checks += _check("winner", "unknown winner label", ~known)
    checks += _check("model_b", "a model battling itself",
                     (model_codes["model_a"] == model_codes["model_b"]) & (model_codes["model_a"] >= 0))
    for col in ("model_a", "model_b"):
        df[col] = pd.Categorical.from_codes(model_codes[col], names)
    df["winner"] = pd.Categorical.from_codes(
        _lookup(pd.Index(BATTLE_LABELS).get_indexer(labels["winner"]))[codes["winner"]], list(BATTLE_LABELS))
    return checks


def _row_error(raw: pd.DataFrame, df: pd.DataFrame, source: str, cmap: ColumnMap, col: str, problem: str,
               hint: str, first: int) -> InputError:
    """The input error for row ``first``: its line, the field, the problem with the value as the file has it."""
    src_col = col if col in raw else _source_name(cmap, col)
    try:
        value = shown(raw[src_col].iloc[first] if src_col in raw else df[col].iloc[first])
    except UnicodeDecodeError as e:  # quoted as the bytes that are not UTF-8
        value = quoted_bytes(e)
    if problem == "unknown winner label" and src_col in raw:
        hint = winner_map_hint(raw[src_col], cmap)
    return InputError(source, int(df["line"].iloc[first]), col, f"{problem} ({value})",
                      hint + "; or load with on_error='skip' to drop and count such rows")


def winner_map_hint(column: pd.Series, cmap: ColumnMap) -> str:
    """What to do about unknown winner labels: the mapping for every one of them in ``column`` whose meaning
    the outcome vocabulary knows (``draw`` -> ``tie``, ``A`` -> ``model_a``: :data:`preflab.outcomes.
    IDENTITY_LABELS`, A the first model), ``LABEL`` for the others."""
    from preflab.outcomes import IDENTITY_LABELS, battle_label

    seen = pd.Series(column.dropna().unique()).astype(str).str.strip()
    unknown = [v for v in seen if cmap.winners.get(v, v) not in BATTLE_LABELS][:8]
    meant = {v: battle_label(IDENTITY_LABELS[v.casefold()]) if v.casefold() in IDENTITY_LABELS else "LABEL"
             for v in unknown}
    mapping = ", ".join(f"{v!r}: {w!r}" for v, w in meant.items())
    return f"use one of {list(BATTLE_LABELS)} or map labels with ColumnMap(winners={{{mapping}}})"


def _finalise(df: pd.DataFrame) -> pd.DataFrame:
    """Type the canonical columns; flatten ``conv_metadata`` style counts into total columns."""
    df = df.reset_index(drop=True)
    df["model_a"], df["model_b"] = _shared_categoricals(df["model_a"], df["model_b"])
    winner = df["winner"].dtype
    if not isinstance(winner, pd.CategoricalDtype) or list(winner.categories) != list(BATTLE_LABELS):
        df["winner"] = pd.Categorical(df["winner"].astype(str), categories=list(BATTLE_LABELS))
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


def _fill_style_columns(df: pd.DataFrame) -> None:
    """Add the flat style columns missing from ``df`` from its nested ``conv_metadata`` (in place)."""
    if "conv_metadata" in df and not all(c in df for c in STYLE_COLUMNS):
        for col, values in style_from_metadata(df["conv_metadata"]).items():
            if col not in df:
                df[col] = values
