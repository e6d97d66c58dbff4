"""Deleting a dataset without losing a vote: its votes (and undone votes stay where they are) are copied to
``archived_votes`` and a row in ``archived_datasets`` says what went and when, all in the one transaction
that removes the items, answers, skips, vote counts and judging criteria.

The two audit tables are part of the store's schema (:mod:`voting.tables`).
"""

from __future__ import annotations

import time

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from voting.items import ItemDataError
from voting.tables import (
    answers_t,
    archived_datasets_t,
    archived_votes_t,
    counts_t,
    items_t,
    meta_t,
    skips_t,
    votes_t,
)


def _count(conn: sa.Connection, table: sa.Table, dataset: str) -> int:
    return int(conn.execute(sa.select(sa.func.count()).select_from(table).where(table.c.dataset == dataset))
               .scalar_one())


def archive_dataset(engine: Engine, dataset: str, by: str = "admin") -> dict[str, int]:
    """Delete ``dataset`` (items, answers, skips, counts, criteria), its votes moved to ``archived_votes``,
    in one write transaction; returns what was removed (``items, answers, votes, skips``). Raises
    :class:`ItemDataError` when the store has no such dataset (nothing is changed)."""
    with engine.connect().execution_options(write=True) as conn, conn.begin():
        n = {name: _count(conn, t, dataset) for name, t in
             (("items", items_t), ("answers", answers_t), ("votes", votes_t), ("skips", skips_t))}
        if not n["items"]:
            raise ItemDataError(dataset, None, "dataset", "no such dataset in the store", "pick one from the list")
        now = time.time()
        cols = [c.name for c in votes_t.columns]
        conn.execute(archived_votes_t.insert().from_select(
            [*cols, "archived_at"],
            sa.select(*[votes_t.c[c] for c in cols], sa.literal(now, sa.Float)).where(votes_t.c.dataset == dataset)
            .order_by(votes_t.c.id)))
        conn.execute(votes_t.delete().where(votes_t.c.dataset == dataset))
        for t in (counts_t, skips_t, answers_t, items_t):
            conn.execute(t.delete().where(t.c.dataset == dataset))
        conn.execute(meta_t.delete().where(meta_t.c.key == f"criteria:{dataset}"))
        conn.execute(archived_datasets_t.insert().values(dataset=dataset, archived_at=now, by=by, **n))
    return n


def archived_votes(engine: Engine, dataset: str | None = None) -> pd.DataFrame:
    """The votes of deleted datasets (every vote column, ``archive_id`` and ``archived_at``)."""
    with engine.connect() as conn:
        q = sa.select(archived_votes_t).order_by(archived_votes_t.c.archive_id)
        if dataset is not None:
            q = q.where(archived_votes_t.c.dataset == dataset)
        res = conn.execute(q)
        return pd.DataFrame(res.fetchall(), columns=list(res.keys()))
