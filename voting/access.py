"""Who may vote, and as whom: admin-issued invites (a token in the link, stored hashed) and open voting
(an anonymous id per browser, labelled as such). No Streamlit here; the pages call these.

Invites: :func:`issue_invite` returns a token once; the store keeps only its SHA-256, so a copy of the
database cannot be used to vote as someone. Issuing a new invite for a voter revokes the old one.
Open voting: the browser's token (random, kept in the page's URL so a reload keeps the identity) maps to
``guest-`` and 10 hex digits of its hash.
"""

from __future__ import annotations

import hashlib
import secrets
import time

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from voting.items import check_name
from voting.store import invites_t, retry, writing

GUEST_PREFIX = "guest-"


def token_hash(token: str) -> str:
    """The stored form of a token (hex SHA-256)."""
    return hashlib.sha256(token.strip().encode()).hexdigest()


def check_voter_name(voter: str) -> str:
    """The stripped name, or ``InputError`` when the store cannot keep it or it looks like an open id."""
    voter = voter.strip()
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


def new_guest_token() -> str:
    return secrets.token_urlsafe(18)


def guest_voter(token: str) -> str:
    """The open-voting id of a browser's token."""
    return GUEST_PREFIX + token_hash(token)[:10]


def invite_url(base: str, token: str) -> str:
    """The link a voter opens: the app's address with ``?invite=TOKEN``."""
    return f"{base.rstrip('/')}/?invite={token}"
