"""Counts that every app process on one store shares: wrong admin passcodes per client address, with a
lockout that doubles after each further miss. (The open-voting rate limit is checked in the vote's own
transaction: :class:`voting.store.VoteChecks`.)"""

from __future__ import annotations

import hashlib
import time

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from voting.engine import retry, writing
from voting.tables import events_t

#: Wrong admin passcodes one address may try before it must wait ``ADMIN_LOCK_S``; each miss after that
#: doubles the wait, up to ``ADMIN_MAX_LOCK_S``. Misses older than ``ADMIN_MAX_LOCK_S`` are forgotten.
ADMIN_TRIES, ADMIN_LOCK_S, ADMIN_MAX_LOCK_S = 5, 300.0, 3600.0


def address_key(kind: str, address: str) -> str:
    """The stored key of a client address for ``kind`` of count (a hash: the store keeps no addresses)."""
    return f"{kind}:{hashlib.sha256(address.encode()).hexdigest()[:16]}"


def admin_lock(engine: Engine, address: str, now: float | None = None) -> tuple[float, int]:
    """(seconds this address must still wait, wrong tries it has left before a wait)."""
    now = time.time() if now is None else now
    e = events_t.c
    with engine.connect() as conn:
        n, last = conn.execute(sa.select(sa.func.count(), sa.func.max(e.at)).where(
            e.key == address_key("admin-fail", address), e.at >= now - ADMIN_MAX_LOCK_S)).one()
    if n < ADMIN_TRIES:
        return 0.0, ADMIN_TRIES - n
    lock = min(ADMIN_LOCK_S * 2 ** (n - ADMIN_TRIES), ADMIN_MAX_LOCK_S)
    return max(last + lock - now, 0.0), 0


def admin_failed(engine: Engine, address: str) -> None:
    """Count a wrong admin passcode from ``address`` (forgetting this address's misses past the window)."""
    key, now = address_key("admin-fail", address), time.time()

    def attempt() -> None:
        with writing(engine) as conn:
            conn.execute(events_t.delete().where(events_t.c.key == key, events_t.c.at < now - ADMIN_MAX_LOCK_S))
            conn.execute(events_t.insert().values(key=key, at=now))

    retry(attempt)


def admin_succeeded(engine: Engine, address: str) -> None:
    """The right passcode from ``address``: its misses are forgotten."""
    def attempt() -> None:
        with writing(engine) as conn:
            conn.execute(events_t.delete().where(events_t.c.key == address_key("admin-fail", address)))

    retry(attempt)
