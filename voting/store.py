"""Vote storage: SQLAlchemy over SQLite (default, WAL) or PostgreSQL (``postgresql+psycopg://``).

One transaction per vote; a unique (voter, dataset, item_id, round) constraint so a double click cannot
vote twice; SQLite writes take the write lock up front (``BEGIN IMMEDIATE``) and retry on "database is
locked". The schema is created, and missing columns added, when a store is opened.
"""

from __future__ import annotations

import json
import random
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, OperationalError

from arena import __version__ as APP_VERSION
from arena.io.battles import Battles
from preflab.outcomes import VOTE_CHOICES, battle_label
from voting.items import ItemDataError, ItemSet, check_name, normal_name

SCHEMA_VERSION = 1
Choice = Literal["A", "B", "tie", "bothbad"]
CHOICES: tuple[str, ...] = tuple(VOTE_CHOICES)


def stored_outcome(choice: str) -> str:
    """The ``votes.outcome`` column for a click: "win" (the winner is in ``winner_model``), or the tie label."""
    code = VOTE_CHOICES[choice]
    return battle_label(code) if code.is_tie else "win"
T = TypeVar("T")

metadata = sa.MetaData()
_name = sa.String(200)
items_t = sa.Table(
    "items", metadata,
    sa.Column("dataset", _name, primary_key=True),
    sa.Column("item_id", _name, primary_key=True),
    sa.Column("prompt", sa.Text, nullable=False),
    sa.Column("category", _name),
    sa.Column("imported_at", sa.Float, nullable=False),
)
answers_t = sa.Table(
    "answers", metadata,
    sa.Column("dataset", _name, primary_key=True),
    sa.Column("item_id", _name, primary_key=True),
    sa.Column("model", _name, primary_key=True),
    sa.Column("answer", sa.Text, nullable=False),
    sa.ForeignKeyConstraint(["dataset", "item_id"], ["items.dataset", "items.item_id"]),
)
votes_t = sa.Table(
    "votes", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("voter", _name, nullable=False),
    sa.Column("dataset", _name, nullable=False),
    sa.Column("item_id", _name, nullable=False),
    sa.Column("round", sa.Integer, nullable=False, server_default="1"),
    sa.Column("model_left", _name, nullable=False),  # shown as "A"
    sa.Column("model_right", _name, nullable=False),  # shown as "B"
    # "xy" when the alphabetically first model was shown on the left, else "yx" (the judge's convention)
    sa.Column("shown_order", sa.String(2), nullable=False),
    sa.Column("outcome", sa.String(16), nullable=False),  # "win", "tie" or "tie (bothbad)"
    sa.Column("winner_model", _name),  # by identity; NULL for ties
    sa.Column("reason", sa.Text),
    sa.Column("shown_at", sa.Float),
    sa.Column("voted_at", sa.Float, nullable=False),
    sa.Column("app_version", sa.String(32)),
    sa.Column("source", sa.String(200), server_default="app"),
    sa.Column("conv_metadata", sa.Text),  # JSON style counts per side (Chatbot Arena's), when known
    sa.Column("seconds_on_pair", sa.Float),  # from the round's issue to the vote, server clocks (app votes)
    sa.UniqueConstraint("voter", "dataset", "item_id", "round", name="uq_votes_voter_item_round"),
    sa.Index("ix_votes_dataset_item", "dataset", "item_id"),
    sa.Index("ix_votes_dataset_time", "dataset", "voted_at"),  # the leaderboard's date range and window
    sqlite_autoincrement=True,  # never reuse the id of an undone vote (SQLite's default reuses max(id) + 1)
)
# Undone votes are moved here, not dropped: the audit trail of what voters took back. Its own key: a vote
# id can appear twice (stores made before ``sqlite_autoincrement`` reused the ids of undone votes).
undone_t = sa.Table(
    "undone_votes", metadata,
    sa.Column("undo_id", sa.Integer, primary_key=True, autoincrement=True),
    *[sa.Column(c.name, c.type, nullable=c.nullable) for c in votes_t.columns],
    sa.Column("undone_at", sa.Float, nullable=False),
    sa.Column("revealed", sa.Boolean),  # the names were shown before the undo (NULL: stores from before)
    sa.Index("ix_undone_voter", "voter", "dataset", "round"),
)
skips_t = sa.Table(
    "skips", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("voter", _name, nullable=False),
    sa.Column("dataset", _name, nullable=False),
    sa.Column("item_id", _name, nullable=False),
    sa.Column("round", sa.Integer, nullable=False, server_default="1"),
    sa.Column("skipped_at", sa.Float, nullable=False),
    sa.UniqueConstraint("voter", "dataset", "item_id", "round", name="uq_skips_voter_item_round"),
)
# Voter invites: the token is given to the voter once (in a link); only its SHA-256 is stored.
invites_t = sa.Table(
    "invites", metadata,
    sa.Column("token_hash", sa.String(64), primary_key=True),
    sa.Column("voter", _name, nullable=False, index=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("revoked_at", sa.Float),
)
# Open-voting ids: issued by the server only (the token goes into the voter's link; its SHA-256 is kept).
guests_t = sa.Table(
    "guests", metadata,
    sa.Column("token_hash", sa.String(64), primary_key=True),
    sa.Column("voter", _name, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)
# Vote counts per (item, shown pair, outcome), kept by database triggers in the transaction of every insert or
# delete on ``votes`` (any writer, any process): the vote page and the leaderboard read these cells instead of
# scanning every vote, so a click costs the same at 1k and 1M stored votes.
counts_t = sa.Table(
    "vote_counts", metadata,
    sa.Column("dataset", _name, primary_key=True),
    sa.Column("item_id", _name, primary_key=True),
    sa.Column("model_left", _name, primary_key=True),
    sa.Column("model_right", _name, primary_key=True),
    sa.Column("outcome", sa.String(16), primary_key=True),
    sa.Column("winner", _name, primary_key=True),  # winner_model, '' for ties (a key cannot be NULL)
    sa.Column("n", sa.Integer, nullable=False),
)
COUNT_KEY = "dataset, item_id, model_left, model_right, outcome, winner"
SQLITE_TRIGGERS = (
    f"""CREATE TRIGGER IF NOT EXISTS vote_counts_ins AFTER INSERT ON votes BEGIN
    INSERT INTO vote_counts ({COUNT_KEY}, n) VALUES (NEW.dataset, NEW.item_id, NEW.model_left,
        NEW.model_right, NEW.outcome, COALESCE(NEW.winner_model, ''), 1)
    ON CONFLICT ({COUNT_KEY}) DO UPDATE SET n = n + 1; END""",
    """CREATE TRIGGER IF NOT EXISTS vote_counts_del AFTER DELETE ON votes BEGIN
    UPDATE vote_counts SET n = n - 1 WHERE dataset = OLD.dataset AND item_id = OLD.item_id
        AND model_left = OLD.model_left AND model_right = OLD.model_right AND outcome = OLD.outcome
        AND winner = COALESCE(OLD.winner_model, ''); END""",
)
_PG_TRIGGERS = (
    f"""CREATE OR REPLACE FUNCTION preflab_vote_counts() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO vote_counts ({COUNT_KEY}, n) VALUES (NEW.dataset, NEW.item_id, NEW.model_left,
        NEW.model_right, NEW.outcome, COALESCE(NEW.winner_model, ''), 1)
    ON CONFLICT ({COUNT_KEY}) DO UPDATE SET n = vote_counts.n + 1;
    RETURN NEW;
  END IF;
  UPDATE vote_counts SET n = n - 1 WHERE dataset = OLD.dataset AND item_id = OLD.item_id
      AND model_left = OLD.model_left AND model_right = OLD.model_right AND outcome = OLD.outcome
      AND winner = COALESCE(OLD.winner_model, '');
  RETURN OLD;
END $$ LANGUAGE plpgsql""",
    """CREATE OR REPLACE TRIGGER vote_counts_trg AFTER INSERT OR DELETE ON votes
    FOR EACH ROW EXECUTE FUNCTION preflab_vote_counts()""",
)
# One row per pair drawn for a voter: its id is issued here, checked and consumed in the vote's (or skip's)
# transaction, so a message can only vote on the pair it was drawn for, once, and not sooner than the page's
# minimum time after it was drawn (server clocks).
rounds_t = sa.Table(
    "rounds", metadata,
    sa.Column("round_id", sa.String(64), primary_key=True),
    sa.Column("voter", _name, nullable=False),
    sa.Column("dataset", _name, nullable=False),
    sa.Column("item_id", _name, nullable=False),
    sa.Column("model_left", _name, nullable=False),
    sa.Column("model_right", _name, nullable=False),
    sa.Column("round", sa.Integer, nullable=False),
    sa.Column("shown_at", sa.Float, nullable=False),
    sa.Column("used_at", sa.Float),
)
# Recent events per key (an open-voting guest, a client address, an admin sign-in from an address): the
# rate limits and the admin lockout read them, so every app process on the store shares one count.
events_t = sa.Table(
    "rate_events", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("key", _name, nullable=False),
    sa.Column("at", sa.Float, nullable=False),
    sa.Index("ix_rate_events_key_at", "key", "at"),
)
meta_t = sa.Table("preflab_meta", metadata, sa.Column("key", _name, primary_key=True), sa.Column("value", sa.Text))


class DuplicateVote(Exception):
    """This voter already voted (or skipped) this item in this round: a double click, or a second tab."""


class VoteRefused(Exception):
    """The store refused a vote or skip; ``reason`` says why: "stale" (the round is unknown, not this voter's,
    another pair's, or used already), "fast" (sooner than the minimum time on the pair; ``wait`` seconds
    more) or "rate" (the open-voting limit of a guest or a client address)."""

    def __init__(self, reason: str, message: str, wait: float = 0.0) -> None:
        super().__init__(message)
        self.reason, self.wait = reason, wait


@dataclass(frozen=True)
class VoteChecks:
    """What the store checks in a vote's transaction beyond "one vote per (voter, item, round)".

    ``round_id``: the round the pair was drawn under (:func:`issue_round`), consumed by the vote;
    ``min_seconds``: the least time from the round's issue to the vote; ``rate``: ``(key, limit)`` pairs (a
    guest, a client address): no key may have ``limit`` votes in the last ``rate_window_s`` seconds."""

    round_id: str | None = None
    min_seconds: float = 0.0
    rate: tuple[tuple[str, int], ...] = ()
    rate_window_s: float = 60.0


@dataclass(frozen=True)
class Vote:
    """One vote as cast: ``choice`` is what was clicked ("A" = left, "B" = right, "tie", "bothbad")."""

    voter: str
    dataset: str
    item_id: str
    model_left: str
    model_right: str
    choice: Choice
    shown_at: float | None = None
    reason: str = ""
    round: int = 1
    meta: dict | None = None  # Chatbot Arena conv_metadata style totals per side (left = a), when known


# ------------------------------------------------------------------------------------------- opening


def resolve_url(url: str) -> str:
    """``sqlite:///relative.db`` made absolute (against the current directory), other URLs unchanged."""
    prefix, _, path = url.partition(":///")
    if prefix.startswith("sqlite") and path and path != ":memory:" and not path.startswith("/"):
        return f"{prefix}:///{Path(path).resolve()}"
    return url


def open_store(url: str = "sqlite:///data/preflab.db", *, busy_timeout_ms: int = 10_000) -> Engine:
    """An engine for ``url`` with the schema created/migrated. SQLite gets WAL and ``busy_timeout``."""
    if url.startswith("sqlite") and "///" in url and not url.endswith(":memory:"):
        Path(url.split("///", 1)[1]).parent.mkdir(parents=True, exist_ok=True)
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
        for ddl in _PG_TRIGGERS if conn.dialect.name == "postgresql" else SQLITE_TRIGGERS:
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


# --------------------------------------------------------------------------------------------- writes


def vote_row(vote: Vote, voted_at: float | None = None, source: str = "app") -> dict:
    """The stored row of a vote: outcome by model identity plus what was shown where."""
    if vote.choice not in CHOICES:
        raise ValueError(f"unknown choice {vote.choice!r}; use one of {CHOICES}")
    if vote.model_left == vote.model_right:
        raise ValueError(f"both sides show the same model {vote.model_left!r}")
    winner = {"A": vote.model_left, "B": vote.model_right}.get(vote.choice)
    return dict(
        voter=vote.voter, dataset=vote.dataset, item_id=vote.item_id, round=vote.round,
        model_left=vote.model_left, model_right=vote.model_right,
        shown_order="xy" if vote.model_left < vote.model_right else "yx",
        outcome=stored_outcome(vote.choice), winner_model=winner, reason=vote.reason or None,
        shown_at=vote.shown_at, voted_at=time.time() if voted_at is None else voted_at,
        app_version=APP_VERSION, source=source, conv_metadata=json.dumps(vote.meta) if isinstance(vote.meta, dict) else None,
    )


def issue_round(engine: Engine, voter: str, dataset: str, item_id: str, model_left: str, model_right: str,
                round: int = 1) -> tuple[str, float]:
    """Draw a round for a pair shown to ``voter``: its one-time id (for :class:`VoteChecks`) and its issue time."""
    round_id, now = secrets.token_hex(16), time.time()
    row = dict(round_id=round_id, voter=voter, dataset=dataset, item_id=item_id, model_left=model_left,
               model_right=model_right, round=round, shown_at=now)

    def attempt() -> None:
        with writing(engine) as conn:
            conn.execute(rounds_t.insert().values(**row))

    retry(attempt)
    return round_id, now


def _use_round(conn: sa.Connection, round_id: str, voter: str, dataset: str, item_id: str,
               pair: tuple[str, str] | None, min_seconds: float) -> tuple[float, float]:
    """Check the round and mark it used, in the caller's transaction: (now, seconds since it was issued)."""
    r = conn.execute(sa.select(rounds_t).where(rounds_t.c.round_id == round_id)).mappings().first()
    if (r is None or r["voter"] != voter or (r["dataset"], r["item_id"]) != (dataset, item_id)
            or (pair is not None and (r["model_left"], r["model_right"]) != pair) or r["used_at"] is not None):
        raise VoteRefused("stale", f"round {round_id!r} is not {voter!r}'s open round on item {item_id!r}")
    now = time.time()
    on_pair = now - r["shown_at"]
    if on_pair < min_seconds:
        raise VoteRefused("fast", f"{on_pair:.2f} s on the pair (at least {min_seconds:g} s)", min_seconds - on_pair)
    used = conn.execute(rounds_t.update().where(rounds_t.c.round_id == round_id, rounds_t.c.used_at.is_(None))
                        .values(used_at=now))
    if used.rowcount != 1:  # another transaction used it first
        raise VoteRefused("stale", f"round {round_id!r} was used already")
    return now, on_pair


def _check_rate(conn: sa.Connection, checks: VoteChecks, now: float) -> None:
    """Refuse when a rate key already has its limit of events in the window; else count this one for each."""
    if not checks.rate:
        return
    e, keys = events_t.c, [k for k, _ in checks.rate]
    since = now - checks.rate_window_s
    counts = dict(conn.execute(sa.select(e.key, sa.func.count()).where(e.key.in_(keys), e.at >= since)
                               .group_by(e.key)).all())
    if full := [(k, n) for k, n in checks.rate if counts.get(k, 0) >= n]:
        raise VoteRefused("rate", f"{full[0][0]} cast {full[0][1]} votes in {checks.rate_window_s:g} s",
                          checks.rate_window_s)
    conn.execute(events_t.delete().where(e.key.in_(keys), e.at < since))
    conn.execute(events_t.insert(), [dict(key=k, at=now) for k in keys])


def _serialise(conn: sa.Connection, *keys: str) -> None:
    """PostgreSQL: hold a transaction lock per key, taken in one order (SQLite's ``BEGIN IMMEDIATE`` already
    runs one writer at a time). Under READ COMMITTED a vote's "seen" check could miss an undo committing
    meanwhile, and two votes could both pass a rate count; with the lock the second waits and reads the
    first's result."""
    if conn.dialect.name == "postgresql":
        for key in sorted(set(keys)):
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(hashtext(:k))"), {"k": key})


def _item_key(voter: str, dataset: str, item_id: str) -> str:
    return f"vote\x1f{voter}\x1f{dataset}\x1f{item_id}"


def _seen_before(conn: sa.Connection, voter: str, dataset: str, item_id: str, round: int) -> bool:
    """The voter skipped the item, or voted and took the vote back after seeing the names (this round)."""
    s, u = skips_t.c, undone_t.c
    skipped = sa.select(s.id).where(s.voter == voter, s.dataset == dataset, s.item_id == item_id, s.round == round)
    undone = sa.select(u.undo_id).where(u.voter == voter, u.dataset == dataset, u.item_id == item_id,
                                        u.round == round, sa.or_(u.revealed.is_(None), u.revealed.is_(True)))
    return conn.execute(sa.select(sa.exists(skipped) | sa.exists(undone))).scalar_one()


def _duplicate(row: dict) -> DuplicateVote:
    return DuplicateVote(f"{row['voter']!r} already answered item {row['item_id']!r} (round {row['round']})")


def _is_unique_error(e: IntegrityError) -> bool:
    text = str(e.orig).lower()
    return "unique" in text or "uq_" in text or "duplicate" in text


def record_vote(engine: Engine, vote: Vote, checks: VoteChecks | None = None) -> int:
    """Store one vote in its own transaction; returns its id.

    In that transaction: the round of ``checks`` is checked and used (:class:`VoteRefused` "stale" or
    "fast"), the rate keys counted ("rate"), and the item must be new to the voter: no vote, skip, or
    vote taken back after the reveal on it in this round, from any tab or process (:class:`DuplicateVote`)."""
    checks = checks or VoteChecks()
    row = vote_row(vote)

    def attempt() -> int:
        try:
            with writing(engine) as conn:
                _serialise(conn, _item_key(vote.voter, vote.dataset, vote.item_id), *(k for k, _ in checks.rate))
                if checks.round_id is not None:
                    row["voted_at"], row["seconds_on_pair"] = _use_round(
                        conn, checks.round_id, vote.voter, vote.dataset, vote.item_id,
                        (vote.model_left, vote.model_right), checks.min_seconds)
                if _seen_before(conn, vote.voter, vote.dataset, vote.item_id, vote.round):
                    raise _duplicate(row)
                _check_rate(conn, checks, time.time())
                return int(conn.execute(votes_t.insert().values(**row)).inserted_primary_key[0])
        except IntegrityError as e:
            if _is_unique_error(e):
                raise _duplicate(row) from None
            raise

    return retry(attempt)


def record_skip(engine: Engine, voter: str, dataset: str, item_id: str, round: int = 1,
                round_id: str | None = None) -> int:
    """Remember that ``voter`` skipped the item (it is not shown to them again); ``round_id`` (when given) is
    checked and used as a vote's is (:class:`VoteRefused` "stale")."""
    row = dict(voter=voter, dataset=dataset, item_id=item_id, round=round, skipped_at=time.time())

    def attempt() -> int:
        try:
            with writing(engine) as conn:
                if round_id is not None:
                    _use_round(conn, round_id, voter, dataset, item_id, None, 0.0)
                return int(conn.execute(skips_t.insert().values(**row)).inserted_primary_key[0])
        except IntegrityError as e:
            if _is_unique_error(e):
                raise _duplicate(row) from None
            raise

    return retry(attempt)


def undo_vote(engine: Engine, vote_id: int, voter: str, window_s: float = 30.0, revealed: bool = True) -> bool:
    """Take back the voter's own vote if it is younger than ``window_s``; True when it was taken back.

    The row moves to ``undone_votes`` (with ``undone_at``, and ``revealed``: whether the voter saw the names,
    which makes the item seen for good) in the same transaction, so nothing is lost.
    """
    def attempt() -> bool:
        with writing(engine) as conn:
            row = conn.execute(sa.select(votes_t).where(
                votes_t.c.id == vote_id, votes_t.c.voter == voter, votes_t.c.voted_at >= time.time() - window_s)
            ).mappings().first()
            if row is None:
                return False
            _serialise(conn, _item_key(voter, row["dataset"], row["item_id"]))
            if conn.execute(votes_t.delete().where(votes_t.c.id == vote_id)).rowcount != 1:
                return False  # another process took it back meanwhile
            conn.execute(undone_t.insert().values(**row, undone_at=time.time(), revealed=revealed))
            return True

    return retry(attempt)


def import_items(engine: Engine, items: ItemSet, dataset: str) -> int:
    """Insert a validated dataset in one transaction (all or nothing); returns the number of items.

    Raises :class:`ItemDataError` when the dataset already holds one of the item ids.
    """
    dataset = normal_name(dataset)
    check_name(dataset, items.source, None, "dataset")
    now = time.time()
    item_rows = [dict(dataset=dataset, imported_at=now, item_id=r.item_id, prompt=r.prompt,
                      category=None if pd.isna(r.category) else r.category) for r in items.items.itertuples()]
    answer_rows = [dict(dataset=dataset, item_id=r.item_id, model=r.model, answer=r.answer)
                   for r in items.answers.itertuples()]

    def attempt() -> int:
        with writing(engine) as conn:
            ids = [r["item_id"] for r in item_rows]
            clash = conn.execute(sa.select(items_t.c.item_id).where(
                items_t.c.dataset == dataset, items_t.c.item_id.in_(ids)).limit(5)).scalars().all()
            if clash:
                raise ItemDataError(items.source, None, "item_id",
                                    f"dataset {dataset!r} already has item id(s) {clash}; nothing was imported",
                                    "import under another dataset name or rename the item ids")
            conn.execute(items_t.insert(), item_rows)
            conn.execute(answers_t.insert(), answer_rows)
        return len(item_rows)

    return retry(attempt)


def import_battles(engine: Engine, battles: Battles, dataset: str, source: str) -> int:
    """Store existing battles as votes in one transaction, once per ``source`` (idempotent).

    ``judge`` becomes the voter (default: ``source``), ``question_id`` the item; model_a is the left side.
    Returns the number of votes inserted (0 when ``source`` was imported before).
    """
    df = battles.df
    voters = df["judge"].astype(str) if "judge" in df else pd.Series(source, index=df.index)
    items = df["question_id"].astype(str) if "question_id" in df else "battle-" + df["line"].astype(str)
    rounds = pd.DataFrame({"v": voters, "i": items}).groupby(["v", "i"]).cumcount() + 1
    tstamp = df["tstamp"] if "tstamp" in df else pd.Series(time.time(), index=df.index)
    choice = df["winner"].astype(str).map({battle_label(code): c for c, code in VOTE_CHOICES.items()})
    metas = df["conv_metadata"] if "conv_metadata" in df else pd.Series(None, index=df.index, dtype=object)
    rows = [
        vote_row(Vote(v, dataset, i, str(a), str(b), c, None, "", int(r), m if isinstance(m, dict) else None),
                 float(t), source)
        for v, i, a, b, c, r, t, m in zip(voters, items, df["model_a"], df["model_b"], choice, rounds, tstamp, metas,
                                          strict=True)
    ]

    def attempt() -> int:
        with writing(engine) as conn:
            done = conn.execute(sa.select(sa.func.count()).select_from(votes_t).where(votes_t.c.source == source))
            if done.scalar_one():
                return 0
            if rows:
                conn.execute(votes_t.insert(), rows)
        return len(rows)

    return retry(attempt)


# ---------------------------------------------------------------------------------------------- reads


def _frame(engine: Engine, query: sa.Select) -> pd.DataFrame:
    with engine.connect() as conn:
        res = conn.execute(query)
        columns, rows = list(res.keys()), res.fetchall()
    if not rows:
        return pd.DataFrame(columns=columns)
    # column lists, not Row objects: pandas probes each Row's attributes, which costs more than the query
    return pd.DataFrame(dict(zip(columns, map(list, zip(*rows, strict=True)), strict=True)), columns=columns)


def _scalars(engine: Engine, query: sa.Select) -> list:
    with engine.connect() as conn:
        return list(conn.execute(query).scalars())


def list_datasets(engine: Engine) -> list[str]:
    """Dataset names that have items, sorted."""
    return _scalars(engine, sa.select(items_t.c.dataset).distinct().order_by(items_t.c.dataset))


def load_items_frame(engine: Engine, dataset: str) -> pd.DataFrame:
    """The dataset's items (``item_id, prompt, category``) with their answering models as a list."""
    items = _frame(engine, sa.select(items_t.c.item_id, items_t.c.prompt, items_t.c.category)
                   .where(items_t.c.dataset == dataset).order_by(items_t.c.item_id))
    models = _frame(engine, sa.select(answers_t.c.item_id, answers_t.c.model).where(answers_t.c.dataset == dataset))
    by_item = models.groupby("item_id")["model"].apply(sorted) if len(models) else pd.Series(dtype=object)
    items["models"] = items["item_id"].map(by_item)
    return items


def load_answers(engine: Engine, dataset: str, item_id: str) -> dict[str, str]:
    """``{model: answer}`` for one item."""
    q = sa.select(answers_t.c.model, answers_t.c.answer).where(
        answers_t.c.dataset == dataset, answers_t.c.item_id == item_id)
    with engine.connect() as conn:
        return {model: answer for model, answer in conn.execute(q)}


def seen_items(engine: Engine, voter: str, dataset: str, round: int = 1) -> set[str]:
    """Items this voter already voted on, skipped or undid (in this round): an undone item does not come
    back, since the voter may have seen which models it showed."""
    q = sa.union(*(sa.select(t.c.item_id).where(t.c.voter == voter, t.c.dataset == dataset, t.c.round == round)
                   for t in (votes_t, skips_t, undone_t)))
    return set(_scalars(engine, q))


def vote_tallies(engine: Engine, dataset: str) -> pd.DataFrame:
    """Vote counts of a dataset: ``item_id, model_left, model_right, outcome, winner_model, n``.

    One row per (item, shown pair, outcome) with votes, read from the trigger-kept ``vote_counts`` table, so
    the result and its cost are bounded by the dataset's size, not by the number of votes (what pair
    assignment and progress need; see :mod:`voting.assign`).
    """
    c = counts_t.c
    winner = sa.case((c.winner == "", sa.null()), else_=c.winner).label("winner_model")
    out = _frame(engine, sa.select(c.item_id, c.model_left, c.model_right, c.outcome, winner, c.n)
                 .where(c.dataset == dataset, c.n > 0))
    out["n"] = out["n"].astype(int)
    return out


def voter_votes(engine: Engine, voter: str, dataset: str) -> pd.DataFrame:
    """``model_left, model_right`` of this voter's votes on a dataset (bounded by the voter's own votes:
    what ``balanced`` assignment spreads evenly over models)."""
    c = votes_t.c
    return _frame(engine, sa.select(c.model_left, c.model_right).where(c.voter == voter, c.dataset == dataset))


def dataset_version(engine: Engine, dataset: str) -> tuple:
    """Changes when a dataset's items change (their number and last import time): the key for caching
    items, models and answers, which votes never change."""
    c = items_t.c
    with engine.connect() as conn:
        n, last = conn.execute(sa.select(sa.func.count(), sa.func.max(c.imported_at)).where(c.dataset == dataset)).one()
    return int(n), last


def pair_outcome_counts(engine: Engine, dataset: str | None = None, voters: list[str] | None = None,
                        since: float | None = None, until: float | None = None,
                        categories: list[str] | None = None) -> pd.DataFrame:
    """Votes as leaderboard cells ``model_left, model_right, outcome, winner_model, n``, counted by the database
    (the ``vote_counts`` table, joined to the items for ``categories``, unless voters or a time window need
    each vote: then a GROUP BY over the votes those filters select): a result bounded by the number of model
    pairs, with the same filters as :func:`load_votes` plus the items' ``categories``."""
    if not (voters or since is not None or until is not None):
        c = counts_t.c
        winner = sa.case((c.winner == "", sa.null()), else_=c.winner)
        keys = (c.model_left, c.model_right, c.outcome, winner)
        q = sa.select(*keys, sa.func.sum(c.n)).where(c.n > 0).group_by(*keys)
        q = q.where(c.dataset == dataset) if dataset is not None else q
        if categories:
            on = sa.and_(items_t.c.dataset == c.dataset, items_t.c.item_id == c.item_id)
            q = q.select_from(counts_t.join(items_t, on)).where(items_t.c.category.in_(categories))
    else:
        v = votes_t.c
        keys = (v.model_left, v.model_right, v.outcome, v.winner_model)
        q = sa.select(*keys, sa.func.count()).where(*_vote_filters(dataset, voters, since, until))
        if categories:
            on = sa.and_(items_t.c.dataset == v.dataset, items_t.c.item_id == v.item_id)
            q = q.select_from(votes_t.join(items_t, on)).where(items_t.c.category.in_(categories))
        q = q.group_by(*keys)
    with engine.connect() as conn:
        rows = conn.execute(q).all()
    out = pd.DataFrame(rows, columns=["model_left", "model_right", "outcome", "winner_model", "n"])
    out["n"] = out["n"].astype(int)
    return out[out["n"] > 0].reset_index(drop=True)


def item_categories(engine: Engine, dataset: str | None = None) -> list[str]:
    """The distinct item categories of a dataset (all datasets for None), sorted."""
    q = sa.select(items_t.c.category).where(items_t.c.category.is_not(None)).distinct()
    q = q.where(items_t.c.dataset == dataset) if dataset is not None else q
    with engine.connect() as conn:
        return sorted(str(r[0]) for r in conn.execute(q))


def votes_stamp(engine: Engine) -> tuple[int, int]:
    """(number of votes, highest vote id): changes whenever a vote is cast or undone; cheap (counts table, key)."""
    with engine.connect() as conn:
        total = conn.execute(sa.select(sa.func.coalesce(sa.func.sum(counts_t.c.n), 0))).scalar_one()
        last = conn.execute(sa.select(sa.func.max(votes_t.c.id))).scalar_one()
    return int(total), int(last or 0)


#: The leaderboard's voter filter lists at most this many voters (beyond it the voter ids are typed).
MAX_VOTER_OPTIONS = 2000
# Distinct voters by a walk down the unique (voter, dataset, ...) index, one step per voter ("loose index
# scan", https://wiki.postgresql.org/wiki/Loose_indexscan): its cost grows with the voters, not the votes.
_VOTERS_SQL = """WITH RECURSIVE v(voter) AS (
  SELECT (SELECT voter FROM votes WHERE {cond} ORDER BY voter LIMIT 1)
  UNION ALL
  SELECT (SELECT voter FROM votes WHERE voter > v.voter AND {cond} ORDER BY voter LIMIT 1) FROM v
  WHERE v.voter IS NOT NULL)
SELECT voter FROM v WHERE voter IS NOT NULL LIMIT :limit"""


def vote_summary(engine: Engine, dataset: str | None = None, max_voters: int | None = None) -> dict:
    """Voters (sorted, at most ``max_voters``; ``more_voters`` says there were more) and the first and last
    ``voted_at`` of the stored votes, from the indexes: a few index probes per dataset and per voter, not a
    scan of the votes. ``max_voters`` defaults to :data:`MAX_VOTER_OPTIONS`."""
    c, max_voters = votes_t.c, MAX_VOTER_OPTIONS if max_voters is None else max_voters
    with engine.connect() as conn:
        if dataset is None:
            datasets = conn.execute(sa.select(counts_t.c.dataset).where(counts_t.c.n > 0).distinct()).scalars().all()
        else:
            datasets = [dataset]
        spans = [conn.execute(sa.select(sa.func.min(c.voted_at), sa.func.max(c.voted_at))
                              .where(c.dataset == d)).one() for d in datasets]
        # SQLite: the unary + keeps the planner off the dataset indexes (which would sort every vote of the
        # dataset for each step) and on the unique index, in voter order
        col = "+dataset" if conn.dialect.name == "sqlite" else "dataset"
        cond, params = (f"{col} = :dataset", {"dataset": dataset}) if dataset is not None else ("1 = 1", {})
        voters = conn.execute(sa.text(_VOTERS_SQL.format(cond=cond)),
                              {**params, "limit": max_voters + 1}).scalars().all()
    los = [lo for lo, _ in spans if lo is not None]
    his = [hi for _, hi in spans if hi is not None]
    return {"voters": list(voters[:max_voters]), "more_voters": len(voters) > max_voters,
            "first": min(los) if los else None, "last": max(his) if his else None}


def _vote_filters(dataset: str | None, voters: list[str] | None, since: float | None,
                  until: float | None) -> list:
    c, out = votes_t.c, []
    if dataset is not None:
        out.append(c.dataset == dataset)
    if voters:
        out.append(c.voter.in_(voters))
    if since is not None:
        out.append(c.voted_at >= since)
    if until is not None:
        out.append(c.voted_at < until)
    return out


def load_votes(
    engine: Engine, dataset: str | None = None, voters: list[str] | None = None,
    since: float | None = None, until: float | None = None,
) -> pd.DataFrame:
    """Stored votes (all columns, plus the item's ``category``), optionally filtered by dataset, voters and
    a ``voted_at`` window."""
    on = sa.and_(items_t.c.dataset == votes_t.c.dataset, items_t.c.item_id == votes_t.c.item_id)
    q = sa.select(votes_t, items_t.c.category).select_from(votes_t.outerjoin(items_t, on))
    return _frame(engine, q.where(*_vote_filters(dataset, voters, since, until)).order_by(votes_t.c.id))


def count_rows(engine: Engine, table: str = "votes") -> int:
    """Number of rows in a table."""
    t = metadata.tables[table]
    with engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one())


def get_criteria(engine: Engine, dataset: str) -> str:
    """The dataset's judging criteria (Markdown shown to voters), '' when none were set."""
    with engine.connect() as conn:
        text = conn.execute(sa.select(meta_t.c.value).where(meta_t.c.key == f"criteria:{dataset}")).scalar()
    return text or ""


def set_criteria(engine: Engine, dataset: str, text: str) -> None:
    """Set (or with '' clear) the dataset's judging criteria, in one transaction."""
    key = f"criteria:{dataset}"

    def attempt() -> None:
        with writing(engine) as conn:
            conn.execute(meta_t.delete().where(meta_t.c.key == key))
            if text.strip():
                conn.execute(meta_t.insert().values(key=key, value=text.strip()))

    retry(attempt)
