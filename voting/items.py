"""Voting datasets: prompts with answers from several models, validated at the edge.

Two layouts are accepted (JSONL, JSON array, CSV or Parquet):

- long: one row per answer, ``item_id, prompt, model, answer`` (optional ``category``);
- pairs: one row per pair, ``item_id, prompt, model_x, answer_x, model_y, answer_y`` (the judge's input).

Every problem raises :class:`ItemDataError` naming the file, line and field and saying what to do; nothing
is dropped silently.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from arena.io.battles import read_file
from preflab.errors import InputError

LONG_COLUMNS: tuple[str, ...] = ("item_id", "prompt", "model", "answer")
PAIR_COLUMNS: tuple[str, ...] = ("item_id", "prompt", "model_x", "answer_x", "model_y", "answer_y")
#: The store's name columns are VARCHAR(200): check before the database does (PostgreSQL raises DataError).
MAX_NAME_CHARS = 200
#: Longest prompt or answer stored (characters): a 5 MB answer froze the voting page.
MAX_TEXT_CHARS = 100_000


#: Letters that draw nothing: the Hangul fillers, the Braille blank, the combining grapheme joiner, the Khmer
#: inherent vowels (Unicode's Default_Ignorable_Code_Point outside category Cf).
_BLANK_LETTERS = frozenset({0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x034F, 0x17B4, 0x17B5})
#: Categories refused in names: format (zero-width, U+200B), control (NUL, ESC, CR, TAB), line and paragraph
#: separators (U+2028, U+2029), private use, surrogates; and spaces other than U+0020 (U+00A0, U+3000).
_REFUSED_CATEGORIES = frozenset({"Cf", "Cc", "Zl", "Zp", "Co", "Cs"})


def _invisible(c: str) -> bool:
    o, cat = ord(c), unicodedata.category(c)
    return (cat in _REFUSED_CATEGORIES or (cat == "Zs" and c != " ") or o in _BLANK_LETTERS
            or 0xFE00 <= o <= 0xFE0F or 0xE0100 <= o <= 0xE01EF or 0x180B <= o <= 0x180F)  # variation selectors


def invisible_chars(text: str) -> list[str]:
    """Characters in ``text`` a reader cannot see or that change how text breaks: format characters (category
    Cf, e.g. U+200B), control characters (NUL truncated a name in SQLite), line separators, spaces other than
    U+0020, blank letters (U+3164, U+2800, ...) and variation selectors. Two names that differ only by these
    look the same to a voter and to whoever reads the leaderboard."""
    return sorted({f"U+{ord(c):04X}" for c in text if _invisible(c)})


def normal_name(value: str) -> str:
    """A name in Unicode's NFC (composed) form: "é" typed as e + U+0301 is the same name as "é"."""
    return unicodedata.normalize("NFC", value)


def check_name(value: str, source: str, line: int | None, field: str) -> None:
    """Raise :class:`ItemDataError` for a name (dataset, item id, model, category) the store cannot keep
    as given: longer than :data:`MAX_NAME_CHARS`, or holding invisible characters."""
    if len(value) > MAX_NAME_CHARS:
        raise ItemDataError(source, line, field, f"{len(value)} characters (at most {MAX_NAME_CHARS})",
                            f"shorten the {field}")
    if bad := invisible_chars(value):
        raise ItemDataError(source, line, field, f"{value!r} holds invisible characters {bad}",
                            "remove zero-width, control and other invisible characters from names")


class ItemDataError(InputError):
    """A bad voting dataset: the file, line and field concerned, the problem and what to do."""


@dataclass(frozen=True)
class ItemSet:
    """A validated voting dataset.

    ``items``: one row per item (``item_id``, ``prompt``, ``category``); ``answers``: one row per
    (``item_id``, ``model``) with its ``answer``. Every item has answers from at least two models.
    """

    items: pd.DataFrame
    answers: pd.DataFrame
    source: str = "<dataframe>"

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def models(self) -> list[str]:
        return sorted(self.answers["model"].unique())


def load_items(source: str | Path | pd.DataFrame, fmt: str | None = None) -> ItemSet:
    """Read and validate a voting dataset in the long or the pairs layout (see the module docstring)."""
    if isinstance(source, pd.DataFrame):
        name, raw = "<dataframe>", source.copy()
        raw["line"] = np.arange(len(raw)) + 1
    else:
        name = str(source)
        try:
            raw = read_file(Path(source), fmt, on_error="raise")
        except InputError as e:
            raise ItemDataError(e.source, e.line, e.field, e.problem, e.hint) from None
    cols = set(raw.columns)
    if set(LONG_COLUMNS) <= cols:
        long, layout = raw, "long"
    elif set(PAIR_COLUMNS) <= cols:
        long, layout = _melt_pairs(raw), "pairs"
    else:
        missing = [c for c in LONG_COLUMNS if c not in cols]
        have = ", ".join(str(c) for c in raw.columns if c != "line") or "(none)"
        raise ItemDataError(
            name, None, missing[0], f"missing column(s) {missing}; found: {have}",
            f"give one row per answer with columns {list(LONG_COLUMNS)} (optional 'category'), "
            f"or one row per pair with {list(PAIR_COLUMNS)}",
        )
    return validate_items(long, name, layout)


def _melt_pairs(raw: pd.DataFrame) -> pd.DataFrame:
    """Pairs layout -> long layout (each pair row gives two answer rows, same line number)."""
    keep = ["item_id", "prompt", "line"] + (["category"] if "category" in raw else [])
    sides = [
        raw[keep + [f"model_{s}", f"answer_{s}"]].rename(columns={f"model_{s}": "model", f"answer_{s}": "answer"})
        for s in ("x", "y")
    ]
    return pd.concat(sides, ignore_index=True).sort_values("line", kind="stable")


def validate_items(df: pd.DataFrame, source: str, layout: str = "long") -> ItemSet:
    """Check a long-layout frame: no empty fields, one prompt per item, one answer per (item, model),
    at least two models per item. Raises :class:`ItemDataError` on the first problem (by line)."""
    df = df.copy()
    if "category" not in df:
        df["category"] = None
    for col in LONG_COLUMNS:
        s = df[col].astype("string")
        df[col] = s.str.strip() if col in ("item_id", "model") else s
        empty = s.isna() | (s.str.strip() == "")
        if empty.any():
            line = int(df.loc[empty, "line"].iloc[0])
            raise ItemDataError(source, line, col, "empty value", f"give every row a non-empty '{col}'")
    for col in ("item_id", "model", "category"):
        df[col] = df[col].map(lambda v: normal_name(v) if isinstance(v, str) else v)
        for value, line in zip(df[col], df["line"], strict=True):
            if isinstance(value, str):
                check_name(value, source, int(line), col)
    for col in ("prompt", "answer"):
        long = df[col].str.len() > MAX_TEXT_CHARS
        if long.any():
            row = df.loc[long].iloc[0]
            raise ItemDataError(source, int(row["line"]), col,
                                f"{len(row[col]):,} characters (at most {MAX_TEXT_CHARS:,} are stored)",
                                f"shorten the {col}, or split the item")
    first = df.drop_duplicates("item_id")
    prompts = df["item_id"].map(first.set_index("item_id")["prompt"])
    clash = df["prompt"] != prompts
    if clash.any():
        row = df.loc[clash].iloc[0]
        line0 = int(first.set_index("item_id").at[row["item_id"], "line"])
        raise ItemDataError(source, int(row["line"]), "item_id",
                            f"duplicate item id {row['item_id']!r} with a different prompt (first at line {line0})",
                            "give each prompt its own item_id")
    dup = df.duplicated(["item_id", "model"], keep="first")
    if layout == "pairs":  # the same answer shown in several pairs is fine; a different one is not
        dup &= ~df.duplicated(["item_id", "model", "answer"], keep="first")
    if dup.any():
        row = df.loc[dup].iloc[0]
        raise ItemDataError(source, int(row["line"]), "item_id",
                            f"duplicate item id {row['item_id']!r}: model {row['model']!r} answers it twice",
                            "keep one answer per (item_id, model), or give the repeated prompt a new item_id")
    df = df.drop_duplicates(["item_id", "model"])
    n_models = df.groupby("item_id", sort=False)["model"].nunique()
    lonely = n_models[n_models < 2]
    if len(lonely):
        item = lonely.index[0]
        row = df.loc[df["item_id"] == item].iloc[0]
        raise ItemDataError(source, int(row["line"]), "model",
                            f"item {item!r} has only one answer (from {row['model']!r})",
                            "an item needs answers from at least two models; add answers or remove the item")
    items = first[["item_id", "prompt", "category"]].reset_index(drop=True)
    items["category"] = items["category"].astype("string")
    answers = df[["item_id", "model", "answer"]].astype(str).reset_index(drop=True)
    return ItemSet(items, answers, source)
