"""Deleting a dataset without losing a vote: its votes (and undone votes stay where they are) are copied to
``archived_votes`` and a row in ``archived_datasets`` says what went and when, all in the one transaction
that removes the items, answers, skips, vote counts and judging criteria.

The two audit tables live in their own metadata and are created on first use (opening a store does not
need them).
"""

from __future__ import annotations

import time

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from voting.items import ItemDataError
from voting.tables import answers_t, counts_t, items_t, meta_t, skips_t, votes_t

audit = sa.MetaData()
archived_votes_t = sa.Table(
    "archived_votes", audit,
    sa.Column("archive_id", sa.Integer, primary_key=True, autoincrement=True),
    *[sa.Column(c.name, c.type, nullable=c.nullable) for c in votes_t.columns],
    sa.Column("archived_at", sa.Float, nullable=False),
    sa.Index("ix_archived_votes_dataset", "dataset"),
)
archived_datasets_t = sa.Table(
    "archived_datasets", audit,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("dataset", sa.String(200), nullable=False),
    sa.Column("archived_at", sa.Float, nullable=False),
    sa.Column("items", sa.Integer, nullable=False),
    sa.Column("answers", sa.Integer, nullable=False),
    sa.Column("votes", sa.Integer, nullable=False),
    sa.Column("skips", sa.Integer, nullable=False),
    sa.Column("by", sa.String(200)),
)


def _count(conn: sa.Connection, table: sa.Table, dataset: str) -> int:
    return int(conn.execute(sa.select(sa.func.count()).select_from(table).where(table.c.dataset == dataset))
               .scalar_one())


def archive_dataset(engine: Engine, dataset: str, by: str = "admin") -> dict[str, int]:
    """Delete ``dataset`` (items, answers, skips, counts, criteria), its votes moved to ``archived_votes``,
    in one write transaction; returns what was removed (``items, answers, votes, skips``). Raises
    :class:`ItemDataError` when the store has no such dataset (nothing is changed)."""
    with engine.connect().execution_options(write=True) as conn, conn.begin():
        audit.create_all(conn)
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
        if not sa.inspect(conn).has_table("archived_votes"):
            return pd.DataFrame(columns=["archive_id", *(c.name for c in votes_t.columns), "archived_at"])
        q = sa.select(archived_votes_t).order_by(archived_votes_t.c.archive_id)
        if dataset is not None:
            q = q.where(archived_votes_t.c.dataset == dataset)
        res = conn.execute(q)
        return pd.DataFrame(res.fetchall(), columns=list(res.keys()))
