"""Writing to the vote store: votes, skips and undos (each in its own transaction, with the checks a vote
must pass there), the rounds a pair is drawn under, and importing item sets and existing battles.

One unique (voter, dataset, item_id, round) constraint means a double click cannot vote twice.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from arena import __version__ as APP_VERSION
from arena.io.battles import Battles
from preflab.outcomes import VOTE_CHOICES, battle_label
from voting.engine import retry, writing
from voting.items import ItemDataError, ItemSet, check_name, normal_name
from voting.tables import answers_t, events_t, items_t, meta_t, rounds_t, skips_t, undone_t, votes_t

Choice = Literal["A", "B", "tie", "bothbad"]
CHOICES: tuple[str, ...] = tuple(VOTE_CHOICES)


def stored_outcome(choice: str) -> str:
    """The ``votes.outcome`` column for a click: "win" (the winner is in ``winner_model``), or the tie label."""
    code = VOTE_CHOICES[choice]
    return battle_label(code) if code.is_tie else "win"


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
        app_version=APP_VERSION, source=source,
        conv_metadata=json.dumps(vote.meta) if isinstance(vote.meta, dict) else None,
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


def check_rate(conn: sa.Connection, checks: VoteChecks, now: float) -> None:
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


def serialise(conn: sa.Connection, *keys: str) -> None:
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


@contextmanager
def _writing_once(engine: Engine, row: dict) -> Iterator[sa.Connection]:
    """A write transaction in which a unique-key failure means the voter answered the item already."""
    try:
        with writing(engine) as conn:
            yield conn
    except IntegrityError as e:
        if _is_unique_error(e):
            raise _duplicate(row) from None
        raise


def record_vote(engine: Engine, vote: Vote, checks: VoteChecks | None = None) -> int:
    """Store one vote in its own transaction; returns its id.

    In that transaction: the round of ``checks`` is checked and used (:class:`VoteRefused` "stale" or
    "fast"), the rate keys counted ("rate"), and the item must be new to the voter: no vote, skip, or
    vote taken back after the reveal on it in this round, from any tab or process (:class:`DuplicateVote`)."""
    checks = checks or VoteChecks()
    row = vote_row(vote)

    def attempt() -> int:
        with _writing_once(engine, row) as conn:
            serialise(conn, _item_key(vote.voter, vote.dataset, vote.item_id), *(k for k, _ in checks.rate))
            if checks.round_id is not None:
                row["voted_at"], row["seconds_on_pair"] = _use_round(
                    conn, checks.round_id, vote.voter, vote.dataset, vote.item_id,
                    (vote.model_left, vote.model_right), checks.min_seconds)
            if _seen_before(conn, vote.voter, vote.dataset, vote.item_id, vote.round):
                raise _duplicate(row)
            check_rate(conn, checks, time.time())
            return int(conn.execute(votes_t.insert().values(**row)).inserted_primary_key[0])

    return retry(attempt)


def record_skip(engine: Engine, voter: str, dataset: str, item_id: str, round: int = 1,
                round_id: str | None = None) -> int:
    """Remember that ``voter`` skipped the item (it is not shown to them again); ``round_id`` (when given) is
    checked and used as a vote's is (:class:`VoteRefused` "stale")."""
    row = dict(voter=voter, dataset=dataset, item_id=item_id, round=round, skipped_at=time.time())

    def attempt() -> int:
        with _writing_once(engine, row) as conn:
            if round_id is not None:
                _use_round(conn, round_id, voter, dataset, item_id, None, 0.0)
            return int(conn.execute(skips_t.insert().values(**row)).inserted_primary_key[0])

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
            serialise(conn, _item_key(voter, row["dataset"], row["item_id"]))
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


def set_criteria(engine: Engine, dataset: str, text: str) -> None:
    """Set (or with '' clear) the dataset's judging criteria, in one transaction."""
    key = f"criteria:{dataset}"

    def attempt() -> None:
        with writing(engine) as conn:
            conn.execute(meta_t.delete().where(meta_t.c.key == key))
            if text.strip():
                conn.execute(meta_t.insert().values(key=key, value=text.strip()))

    retry(attempt)
