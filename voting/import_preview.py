"""An uploaded dataset read and checked before anything is written: its first rows, its counts and its
problems (the Data page shows them, then imports in one transaction). Errors name the uploaded file,
never the server's temporary copy.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from voting.items import ItemDataError, ItemSet, check_name, load_items
from voting.tables import items_t

SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")
NOTHING = "Nothing was imported."


def read_upload(name: str, payload: bytes) -> ItemSet:
    """Validate an uploaded file (``name`` as the browser gave it); :class:`ItemDataError` names ``name``,
    with no trace of the temporary path it was read from."""
    suffix = Path(name).suffix.lower()
    if suffix not in SUFFIXES:
        raise ItemDataError(name, None, None, f"unknown file type {suffix or '(none)'!r}", f"upload one of {SUFFIXES}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(name).name
        path.write_bytes(payload)
        try:
            return load_items(path)
        except ItemDataError as e:  # report the uploaded name, not the temp path (some readers quote it)
            scrub = (lambda s: s and s.replace(str(path), name).replace(tmp, "(upload)"))  # noqa: E731
            raise ItemDataError(name, e.line, e.field, scrub(e.problem), scrub(e.hint)) from None


def nothing_imported(error: Exception) -> str:
    """The page's one message for a failed import: "Nothing was imported." once, then the reason."""
    text = str(error)
    for tail in ("; nothing was imported", "nothing was imported"):
        text = text.replace(tail, "")
    return f"{NOTHING} {text.strip()}"


@dataclass(frozen=True)
class ImportPreview:
    """What an import would write: ``rows`` (the first items with their answer count), the counts, and the
    ``problems`` that stop it (empty: it may go ahead)."""

    dataset: str
    rows: pd.DataFrame
    items: int = 0
    models: list[str] = field(default_factory=list)
    answers: int = 0
    answers_per_item: tuple[int, int] = (0, 0)  # fewest, most
    problems: list[str] = field(default_factory=list)


def preview_upload(engine: Engine, name: str, payload: bytes, dataset: str, first: int = 5) -> ImportPreview:
    """Read and check an upload against the store (read-only): the file's own problems, the dataset name,
    and item ids the dataset already holds."""
    dataset = dataset.strip()
    empty = pd.DataFrame(columns=["item_id", "prompt", "category", "answers"])
    try:
        items = read_upload(name, payload)
    except ItemDataError as e:
        return ImportPreview(dataset, empty, problems=[str(e)])
    per_item = items.answers.groupby("item_id").size()
    rows = items.items.head(first).assign(prompt=lambda d: d["prompt"].str.slice(0, 120),
                                          answers=lambda d: d["item_id"].map(per_item).astype(int))
    problems = []
    try:
        check_name(dataset, name, None, "dataset") if dataset else None
    except ItemDataError as e:
        problems.append(str(e))
    if not dataset:
        problems.append("no dataset name given: type a name for the dataset")
    else:
        with engine.connect() as conn:
            ids = list(items.items["item_id"])
            clash = conn.execute(sa.select(items_t.c.item_id).where(
                items_t.c.dataset == dataset, items_t.c.item_id.in_(ids)).limit(5)).scalars().all()
        if clash:
            problems.append(f"dataset {dataset!r} already has item id(s) {clash}: import under another name or "
                            "rename the item ids")
    return ImportPreview(dataset, rows[["item_id", "prompt", "category", "answers"]], items.n_items, items.models,
                         len(items.answers), (int(per_item.min()), int(per_item.max())), problems)
