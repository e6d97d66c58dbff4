"""Upgrading a vote store of any earlier release to today's schema (:mod:`voting.tables`): one ordered list of
steps, run by :func:`migrate` in the one write transaction that opens the store.

Every step looks at the store and does nothing when its change is there already, so the same list upgrades a
store of any age (stores from before ``schema_version`` was recorded included) and opening an up-to-date store
changes nothing. New tables, indexes and nullable columns need no step of their own (``create_tables`` and
``add_columns`` find them); a change that moves or computes data adds a :class:`Step` to :data:`STEPS`, at the
end, and bumps :data:`voting.tables.SCHEMA_VERSION`. A store written by a newer release is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy as sa

from voting.tables import COUNT_KEY, PG_TRIGGERS, SCHEMA_VERSION, SQLITE_TRIGGERS, meta_t, metadata, undone_t


class NewerStore(RuntimeError):
    """The store's schema is newer than this code's: opening it could lose what the newer release stores."""


@dataclass(frozen=True)
class Before:
    """What the store held before the migration began (steps decide on it, not on what earlier steps made)."""

    tables: frozenset[str]
    version: int | None  # the recorded schema version; None: a store from before versions were recorded


@dataclass(frozen=True)
class Step:
    """One change to an older store: ``run(conn, before)`` does it, or nothing when it is done already."""

    name: str
    run: Callable[[sa.Connection, Before], None]


def rekey_undone(conn: sa.Connection, before: Before) -> None:
    """Stores from before ``undo_id``: their ``undone_votes`` was keyed by the vote id, which SQLite reuses
    (a second undo failed with a UNIQUE error). Rename it, make the new one, copy over."""
    insp = sa.inspect(conn)
    if "undone_votes" not in before.tables or "undo_id" in {c["name"] for c in insp.get_columns("undone_votes")}:
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


def create_tables(conn: sa.Connection, before: Before) -> None:
    """Every missing table, and every missing index of the tables that were there (``create_all`` adds none to
    an existing table)."""
    metadata.create_all(conn)
    for table in metadata.sorted_tables:
        for index in table.indexes:
            index.create(conn, checkfirst=True)


def add_columns(conn: sa.Connection, before: Before) -> None:
    """Columns added to a table since the store was made (nullable, so old rows stay valid)."""
    insp = sa.inspect(conn)
    for table in metadata.sorted_tables:
        have = {c["name"] for c in insp.get_columns(table.name)}
        for col in table.columns:
            if col.name not in have:
                ddl = col.type.compile(conn.dialect)
                conn.exec_driver_sql(f'ALTER TABLE {table.name} ADD COLUMN "{col.name}" {ddl}')


def count_votes(conn: sa.Connection, before: Before) -> None:
    """A store from before the ``vote_counts`` table: count its votes once (the triggers keep them after)."""
    if "vote_counts" in before.tables or "votes" not in before.tables:
        return
    conn.exec_driver_sql(
        f"INSERT INTO vote_counts ({COUNT_KEY}, n) SELECT dataset, item_id, model_left, model_right, "
        "outcome, COALESCE(winner_model, ''), COUNT(*) FROM votes GROUP BY dataset, item_id, model_left, "
        "model_right, outcome, COALESCE(winner_model, '')")


def vote_triggers(conn: sa.Connection, before: Before) -> None:
    """The triggers that keep ``vote_counts`` (``IF NOT EXISTS`` / ``OR REPLACE``: the newest definition)."""
    for ddl in PG_TRIGGERS if conn.dialect.name == "postgresql" else SQLITE_TRIGGERS:
        conn.exec_driver_sql(ddl)


#: The migration path, in order. Add a step at the end (and bump ``SCHEMA_VERSION``).
STEPS: tuple[Step, ...] = (
    Step("rekey undone_votes by undo_id", rekey_undone),
    Step("create missing tables and indexes", create_tables),
    Step("add missing columns", add_columns),
    Step("count the votes of a store without vote_counts", count_votes),
    Step("vote count triggers", vote_triggers),
)


def stored_version(conn: sa.Connection, tables: frozenset[str]) -> int | None:
    """The schema version a store records (None: no record, a store from before versions were kept)."""
    if "preflab_meta" not in tables:
        return None
    value = conn.execute(sa.select(meta_t.c.value).where(meta_t.c.key == "schema_version")).scalar()
    return int(value) if value is not None else None


def migrate(conn: sa.Connection) -> Before:
    """Upgrade the store on ``conn`` (inside the caller's transaction: all of it or nothing) to
    :data:`SCHEMA_VERSION`; returns what it found. Raises :class:`NewerStore` for a store of a newer release."""
    tables = frozenset(sa.inspect(conn).get_table_names())
    before = Before(tables, stored_version(conn, tables))
    if before.version is not None and before.version > SCHEMA_VERSION:
        raise NewerStore(f"the store has schema version {before.version}, newer than this preflab's "
                         f"{SCHEMA_VERSION}: open it with the release that wrote it, or upgrade preflab")
    for step in STEPS:
        step.run(conn, before)
    if before.version != SCHEMA_VERSION:
        conn.execute(meta_t.delete().where(meta_t.c.key == "schema_version"))
        conn.execute(meta_t.insert().values(key="schema_version", value=str(SCHEMA_VERSION)))
    return before
