"""Opening a vote store (SQLite in WAL mode, or PostgreSQL), migrating its schema, and its write transactions.

SQLite writes take the write lock up front (``BEGIN IMMEDIATE``) and are retried on "database is locked".
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError

from voting.tables import COUNT_KEY, PG_TRIGGERS, SCHEMA_VERSION, SQLITE_TRIGGERS, meta_t, metadata, undone_t, votes_t

T = TypeVar("T")


def resolve_url(url: str) -> str:
    """``sqlite:///relative.db`` made absolute (against the current directory), other URLs unchanged."""
    prefix, _, path = url.partition(":///")
    if prefix.startswith("sqlite") and path and path != ":memory:" and not path.startswith("/"):
        return f"{prefix}:///{Path(path).resolve()}"
    return url


def open_store(url: str = "sqlite:///data/preflab.db", *, busy_timeout_ms: int = 10_000,
               create: bool = True) -> Engine:
    """An engine for ``url`` with the schema created/migrated. SQLite gets WAL and ``busy_timeout``.
    ``create=False`` (a reader: exports) refuses a SQLite file that does not exist instead of creating an
    empty store, so a mistyped path is an error, not 0 votes."""
    if url.startswith("sqlite") and "///" in url and not url.endswith(":memory:"):
        path = Path(url.split("///", 1)[1])
        if not create and not path.is_file():
            from preflab.errors import InputError

            raise InputError(url, None, None, f"no store there: the file {path} does not exist",
                             "check the path; reading votes never creates a store")
        path.parent.mkdir(parents=True, exist_ok=True)
    kwargs: dict = {"pool_pre_ping": True} if url.startswith("postgresql") else {}
    engine = sa.create_engine(url, **kwargs)
    if engine.dialect.name == "sqlite":
        _configure_sqlite(engine, busy_timeout_ms)
    retry(lambda: _migrate(engine))
    return engine


def _configure_sqlite(engine: Engine, busy_timeout_ms: int) -> None:
    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record) -> None:  # noqa: ANN001
        dbapi_conn.isolation_level = None  # we emit BEGIN ourselves (below)
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        cur.execute("PRAGMA journal_mode = WAL")
        cur.execute("PRAGMA synchronous = NORMAL")
        cur.execute("PRAGMA foreign_keys = ON")
        cur.close()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(conn) -> None:  # noqa: ANN001
        # Writers take the lock at BEGIN: a deferred read->write upgrade can fail without waiting.
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("write") else "BEGIN")


def _migrate(engine: Engine) -> None:
    """Create missing tables, add missing (nullable) columns, record the schema version.

    One write transaction, serialised across processes (SQLite's write lock; a PostgreSQL advisory lock),
    so many app workers or writers can open the same store at once.
    """
    with writing(engine) as conn:
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(727208)")
        _rekey_undone(conn)
        had_counts = sa.inspect(conn).has_table("vote_counts")
        metadata.create_all(conn)
        for index in votes_t.indexes:  # create_all adds no index to a table that exists already
            index.create(conn, checkfirst=True)
        if not had_counts:  # a store from before the counts table: count its votes once
            conn.exec_driver_sql(
                f"INSERT INTO vote_counts ({COUNT_KEY}, n) SELECT dataset, item_id, model_left, model_right, "
                "outcome, COALESCE(winner_model, ''), COUNT(*) FROM votes GROUP BY dataset, item_id, model_left, "
                "model_right, outcome, COALESCE(winner_model, '')")
        for ddl in PG_TRIGGERS if conn.dialect.name == "postgresql" else SQLITE_TRIGGERS:
            conn.exec_driver_sql(ddl)
        insp = sa.inspect(conn)
        for table in metadata.sorted_tables:
            have = {c["name"] for c in insp.get_columns(table.name)}
            for col in table.columns:
                if col.name not in have:
                    ddl = col.type.compile(engine.dialect)
                    conn.exec_driver_sql(f'ALTER TABLE {table.name} ADD COLUMN "{col.name}" {ddl}')
        version = conn.execute(sa.select(meta_t.c.value).where(meta_t.c.key == "schema_version")).scalar()
        if version != str(SCHEMA_VERSION):
            conn.execute(meta_t.delete().where(meta_t.c.key == "schema_version"))
            conn.execute(meta_t.insert().values(key="schema_version", value=str(SCHEMA_VERSION)))


def _rekey_undone(conn: sa.Connection) -> None:
    """Stores from before ``undo_id``: their ``undone_votes`` was keyed by the vote id, which SQLite reuses
    (a second undo failed with a UNIQUE error). Rename it, let ``create_all`` make the new one, copy over."""
    insp = sa.inspect(conn)
    if not insp.has_table("undone_votes") or "undo_id" in {c["name"] for c in insp.get_columns("undone_votes")}:
        return
    have = {c["name"] for c in insp.get_columns("undone_votes")}
    indexes = [i["name"] for i in insp.get_indexes("undone_votes")]  # index names are schema-wide
    conn.exec_driver_sql("ALTER TABLE undone_votes RENAME TO undone_votes_v1")
    for name in indexes:
        conn.exec_driver_sql(f'DROP INDEX IF EXISTS "{name}"')
    undone_t.create(conn)
    cols = ", ".join(f'"{c.name}"' for c in undone_t.columns if c.name in have)
    conn.exec_driver_sql(f"INSERT INTO undone_votes ({cols}) SELECT {cols} FROM undone_votes_v1")
    conn.exec_driver_sql("DROP TABLE undone_votes_v1")


@contextmanager
def writing(engine: Engine) -> Iterator[sa.Connection]:
    """A connection in a write transaction (``BEGIN IMMEDIATE`` on SQLite), committed on success."""
    with engine.connect().execution_options(write=True) as conn, conn.begin():
        yield conn


def _is_locked(e: OperationalError) -> bool:
    text = str(e.orig).lower()
    return "locked" in text or "busy" in text or "deadlock" in text or "could not serialize" in text


def retry(fn: Callable[[], T], attempts: int = 12) -> T:
    """Run ``fn`` again after "database is locked" (exponential backoff with jitter)."""
    for k in range(attempts):
        try:
            return fn()
        except OperationalError as e:
            if not _is_locked(e) or k == attempts - 1:
                raise
            time.sleep(min(2.0, 0.01 * 2**k) * (0.5 + random.random()))
    raise AssertionError("unreachable")
