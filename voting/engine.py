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

from voting.config import DEFAULT_STORE_URL
from voting.migrations import migrate

T = TypeVar("T")


def resolve_url(url: str) -> str:
    """``sqlite:///relative.db`` made absolute (against the current directory), other URLs unchanged."""
    prefix, _, path = url.partition(":///")
    if prefix.startswith("sqlite") and path and path != ":memory:" and not path.startswith("/"):
        return f"{prefix}:///{Path(path).resolve()}"
    return url


def open_store(url: str = DEFAULT_STORE_URL, *, busy_timeout_ms: int = 10_000,
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
    """Create or upgrade the schema (:func:`voting.migrations.migrate`) in one write transaction, serialised
    across processes (SQLite's write lock; a PostgreSQL advisory lock), so many app workers or writers can open
    the same store at once."""
    with writing(engine) as conn:
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(727208)")
        migrate(conn)


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
