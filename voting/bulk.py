"""Many votes at once (benchmarks, tests, large imports): seconds for a million rows, not minutes.

One transaction: the per-row ``vote_counts`` triggers are switched off, the rows go in by ``COPY`` (PostgreSQL)
or one ``executemany`` (SQLite), the new rows are counted into ``vote_counts`` by one ``GROUP BY``, and the
triggers are switched back on, so the counts equal what the triggers would have kept (tested) and other
writers see either none or all of the rows.
"""

from __future__ import annotations

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from voting.engine import retry, writing
from voting.tables import COUNT_KEY, SQLITE_TRIGGERS, votes_t

#: Columns a bulk row needs (the others take their defaults or stay NULL).
COLUMNS = ("voter", "dataset", "item_id", "round", "model_left", "model_right", "shown_order", "outcome",
           "winner_model", "voted_at", "source")


def _count_new(conn: sa.Connection, after_id: int) -> None:
    """Add the votes with ``id > after_id`` to ``vote_counts`` (one GROUP BY, upsert)."""
    conn.exec_driver_sql(
        f"INSERT INTO vote_counts ({COUNT_KEY}, n) SELECT dataset, item_id, model_left, model_right, outcome, "
        f"COALESCE(winner_model, ''), COUNT(*) FROM votes WHERE id > {int(after_id)} GROUP BY dataset, item_id, "
        f"model_left, model_right, outcome, COALESCE(winner_model, '') "
        f"ON CONFLICT ({COUNT_KEY}) DO UPDATE SET n = vote_counts.n + excluded.n")


def _copy_pg(conn: sa.Connection, rows: pd.DataFrame) -> None:
    cols = ", ".join(COLUMNS)
    with conn.connection.driver_connection.cursor() as cur, cur.copy(f"COPY votes ({cols}) FROM STDIN") as copy:
        for row in rows.itertuples(index=False, name=None):
            copy.write_row(row)


def bulk_insert_votes(engine: Engine, rows: pd.DataFrame) -> int:
    """Insert ``rows`` (a frame with :data:`COLUMNS`; ``round`` an int, ``winner_model`` None for ties) as votes
    in one transaction; returns the number inserted. The unique (voter, dataset, item, round) key still holds:
    a clash fails the whole load."""
    missing = [c for c in COLUMNS if c not in rows]
    if missing:
        raise ValueError(f"bulk votes need the columns {list(COLUMNS)}; missing {missing}")
    rows = rows[list(COLUMNS)].astype(object).where(rows[list(COLUMNS)].notna(), None)
    rows["round"] = rows["round"].astype(int)
    rows["voted_at"] = rows["voted_at"].astype(float)

    def attempt() -> int:
        with writing(engine) as conn:
            pg = conn.dialect.name == "postgresql"
            if pg:
                conn.exec_driver_sql("SELECT pg_advisory_xact_lock(727208)")
            after = int(conn.execute(sa.select(sa.func.coalesce(sa.func.max(votes_t.c.id), 0))).scalar_one())
            if pg:
                conn.exec_driver_sql("ALTER TABLE votes DISABLE TRIGGER vote_counts_trg")
                _copy_pg(conn, rows)
                conn.exec_driver_sql("ALTER TABLE votes ENABLE TRIGGER vote_counts_trg")
            else:
                conn.exec_driver_sql("DROP TRIGGER IF EXISTS vote_counts_ins")
                conn.exec_driver_sql("DROP TRIGGER IF EXISTS vote_counts_del")
                marks = ", ".join("?" for _ in COLUMNS)
                conn.exec_driver_sql(f"INSERT INTO votes ({', '.join(COLUMNS)}) VALUES ({marks})",
                                     list(rows.itertuples(index=False, name=None)))
                for ddl in SQLITE_TRIGGERS:
                    conn.exec_driver_sql(ddl)
            _count_new(conn, after)
        if pg:
            with engine.connect() as conn:  # fresh statistics and visibility map for the planner
                conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("VACUUM ANALYZE votes")
        return len(rows)

    return retry(attempt)
