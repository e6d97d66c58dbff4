"""Who may vote, and as whom: admin-issued invites (a token in the link, stored hashed) and open voting
(an anonymous id per browser, labelled as such). No Streamlit here; the pages call these.

Invites: :func:`issue_invite` returns a token once; the store keeps only its SHA-256, so a copy of the
database cannot be used to vote as someone. Issuing a new invite for a voter revokes the old one.
Open voting: the server issues a random token (:func:`issue_guest`, kept in the page's URL so a reload keeps
the identity; the store keeps its hash) that maps to ``guest-`` and 10 hex digits of that hash; a token the
server did not issue is refused.
"""

from __future__ import annotations

import hashlib
import secrets
import time

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from voting.engine import retry, writing
from voting.items import check_name, normal_name
from voting.tables import guests_t, invites_t, votes_t

GUEST_PREFIX = "guest-"


def token_hash(token: str) -> str:
    """The stored form of a token (hex SHA-256)."""
    return hashlib.sha256(token.strip().encode()).hexdigest()


def check_voter_name(voter: str) -> str:
    """The stripped name, or ``InputError`` when the store cannot keep it or it looks like an open id."""
    voter = normal_name(voter.strip())
    check_name(voter, "<invite>", None, "voter")
    if not voter or voter.startswith(GUEST_PREFIX):
        from voting.items import ItemDataError

        raise ItemDataError("<invite>", None, "voter", f"{voter!r} is not a usable voter name",
                            f"give a non-empty name that does not start with {GUEST_PREFIX!r}")
    return voter


def issue_invite(engine: Engine, voter: str) -> str:
    """A new invite token for ``voter`` (earlier ones are revoked). Raises ``InputError`` for a name the
    store cannot keep (see :func:`voting.items.check_name`) or one that looks like an open-voting id."""
    voter = check_voter_name(voter)
    token = secrets.token_urlsafe(18)

    def attempt() -> str:
        with writing(engine) as conn:
            now = time.time()
            conn.execute(invites_t.update().where(invites_t.c.voter == voter, invites_t.c.revoked_at.is_(None))
                         .values(revoked_at=now))
            conn.execute(invites_t.insert().values(token_hash=token_hash(token), voter=voter, created_at=now))
        return token

    return retry(attempt)


def revoke_invites(engine: Engine, voter: str) -> int:
    """Revoke every live invite of ``voter``; returns how many."""
    def attempt() -> int:
        with writing(engine) as conn:
            res = conn.execute(invites_t.update().where(invites_t.c.voter == voter.strip(),
                                                        invites_t.c.revoked_at.is_(None)).values(revoked_at=time.time()))
            return int(res.rowcount or 0)

    return retry(attempt)


def invite_voter(engine: Engine, token: str) -> str | None:
    """The voter a live invite token belongs to, or None (unknown, mistyped or revoked)."""
    if not token or len(token) > 200:
        return None
    with engine.connect() as conn:
        return conn.execute(sa.select(invites_t.c.voter).where(
            invites_t.c.token_hash == token_hash(token), invites_t.c.revoked_at.is_(None))).scalar()


def guest_voter(token: str) -> str:
    """The open-voting id of a guest token."""
    return GUEST_PREFIX + token_hash(token)[:10]


class GuestLimit(Exception):
    """No new guest id: the client address was issued its limit of guest ids in the last hour."""


def issue_guest(engine: Engine, address: str | None = None, per_hour: int | None = None) -> str:
    """A new open-voting token, recorded in the store (only such tokens sign in: :func:`issued_guest`).

    With ``address`` and ``per_hour``, at most ``per_hour`` ids are issued to that client address an hour,
    counted in the store in the same transaction (every app process shares the count); else
    :class:`GuestLimit`. A new browser context therefore gets no fresh guest id past the limit."""
    from voting.limits import address_key
    from voting.writes import VoteChecks, VoteRefused, check_rate, serialise

    token = secrets.token_urlsafe(18)
    rate = ((address_key("guest-ids", address), per_hour),) if address is not None and per_hour is not None else ()

    def attempt() -> None:
        with writing(engine) as conn:
            now = time.time()
            serialise(conn, *(k for k, _ in rate))
            try:
                check_rate(conn, VoteChecks(rate=rate, rate_window_s=3600.0), now)
            except VoteRefused:
                raise GuestLimit(f"{per_hour} guest ids issued to this address in the last hour") from None
            conn.execute(guests_t.insert().values(token_hash=token_hash(token), voter=guest_voter(token),
                                                  created_at=now))

    retry(attempt)
    return token


def issued_guest(engine: Engine, token: str) -> str | None:
    """The open-voting id of a token this server issued, or None (a token a visitor made up)."""
    if not token or len(token) > 200:
        return None
    with engine.connect() as conn:
        return conn.execute(sa.select(guests_t.c.voter).where(guests_t.c.token_hash == token_hash(token))).scalar()


def guest_vote_counts(engine: Engine, dataset: str | None = None) -> dict[str, int]:
    """How many stored votes came from open-voting guests, and from how many guest ids (for the admin)."""
    c = votes_t.c
    q = sa.select(sa.func.count(), sa.func.count(sa.distinct(c.voter))).where(c.voter.startswith(GUEST_PREFIX))
    q = q.where(c.dataset == dataset) if dataset is not None else q
    with engine.connect() as conn:
        votes, guests = conn.execute(q).one()
    return {"votes": int(votes), "guests": int(guests)}


def invite_url(base: str, token: str) -> str:
    """The link a voter opens: the app's address with ``?invite=TOKEN``."""
    return f"{base.rstrip('/')}/?invite={token}"
