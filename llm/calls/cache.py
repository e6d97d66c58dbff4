"""On-disk SQLite cache of judge calls, so a rerun or a killed-and-restarted run re-calls nothing answered.

Keyed by (provider, model, rubric fingerprint, prompt hash, order, sampling params incl. sample index).
Answers are committed in small groups (every ``commit_every`` answers or ``commit_interval`` seconds, WAL
journal), so a process killed mid-run loses at most those last few answers, which a restart calls again.
"""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from llm.providers.base import Completion
from preflab.redact import redact_any

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    provider TEXT NOT NULL, model TEXT NOT NULL, rubric TEXT NOT NULL,
    prompt_hash TEXT NOT NULL, order_ TEXT NOT NULL, params TEXT NOT NULL,
    completion TEXT NOT NULL, created REAL NOT NULL
)"""
# What each model was found to accept (learnt from the API's refusals), so a rerun does not ask again.
_CAPS = """
CREATE TABLE IF NOT EXISTS capabilities (
    provider TEXT NOT NULL, model TEXT NOT NULL, caps TEXT NOT NULL, PRIMARY KEY (provider, model)
)"""


def prompt_hash(messages: tuple[dict, ...] | list[dict], prompt: str | None = None) -> str:
    """SHA-256 of the exact text sent (messages or completion prompt)."""
    payload = json.dumps({"messages": list(messages), "prompt": prompt}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


def cache_key(provider: str, model: str, rubric: str, p_hash: str, order: str, params: dict) -> str:
    """The cache key: a hash over everything that changes the answer."""
    payload = json.dumps([provider, model, rubric, p_hash, order, params], sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


class CallCache:
    """A SQLite file of completions (``path=":memory:"`` for a throwaway run).

    ``commit_every=1`` (the default) commits every answer; larger values group commits (also flushed every
    ``commit_interval`` seconds), trading what a kill can lose for fewer commits.
    """

    def __init__(self, path: str | Path, commit_every: int = 1, commit_interval: float = 0.25,
                 busy_timeout: float = 60.0) -> None:
        self.path = str(path)
        self.commit_every, self.commit_interval, self.busy_timeout = commit_every, commit_interval, busy_timeout
        self._pending, self._last_commit = 0, time.monotonic()
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=busy_timeout)
        self._db.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
        self.retry(lambda: self._db.execute("PRAGMA journal_mode=WAL"))  # switching needs a moment alone
        self._db.execute("PRAGMA synchronous=NORMAL")
        self.retry(lambda: self._db.execute(_SCHEMA))
        self.retry(lambda: self._db.execute(_CAPS))

    def retry(self, op: Callable[[], T]) -> T:
        """Run ``op``, retrying while another process holds the database ("database is locked")."""
        deadline = time.monotonic() + self.busy_timeout
        delay = 0.005
        while True:
            try:
                return op()
            except sqlite3.OperationalError as e:
                if ("locked" not in str(e) and "busy" not in str(e)) or time.monotonic() > deadline:
                    raise
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 0.5)

    def execute(self, sql: str, params: tuple = ()) -> sqlite3.Cursor:
        """Run one statement, retrying while another process holds the database (a table another cache
        keeps in this file, such as the generated answers, is read and created this way)."""
        return self.retry(lambda: self._db.execute(sql, params))

    def get(self, key: str) -> Completion | None:
        """The cached completion for a key, or None."""
        row = self.retry(lambda: self._db.execute("SELECT completion FROM calls WHERE key = ?", (key,)).fetchone())
        return Completion.from_json(json.loads(row[0])) if row else None

    def put(self, key: str, completion: Completion, *, provider: str, model: str, rubric: str,
            p_hash: str, order: str, params: dict) -> None:
        """Store one completion (keys redacted); commits now, or every ``commit_every`` puts."""
        row = (key, provider, model, rubric, p_hash, order, json.dumps(params, sort_keys=True),
               json.dumps(redact_any(completion.to_json())), time.time())
        self.insert("calls", row)

    def insert(self, table: str, row: tuple) -> None:
        """Insert (or replace) one row; committed now, or with the next ``commit_every`` rows or
        ``commit_interval`` seconds."""

        def write() -> None:
            if not self._db.in_transaction:
                self._db.execute("BEGIN IMMEDIATE")  # take the write lock now: waits (busy_timeout), never deadlocks
            self._db.execute(f"INSERT OR REPLACE INTO {table} VALUES ({', '.join('?' * len(row))})", row)

        self.retry(write)
        self._pending += 1
        if self._pending >= self.commit_every or time.monotonic() - self._last_commit > self.commit_interval:
            self.flush()

    def flush(self) -> None:
        """Commit pending answers now."""
        if self._db.in_transaction:
            self.retry(lambda: self._db.execute("COMMIT"))
        self._pending, self._last_commit = 0, time.monotonic()

    def capabilities(self, provider: str, model: str) -> dict:
        """What a model was found to accept or refuse (``{}`` when nothing was learnt yet)."""
        row = self.retry(lambda: self._db.execute("SELECT caps FROM capabilities WHERE provider = ? AND model = ?",
                                                   (provider, model)).fetchone())
        return json.loads(row[0]) if row else {}

    def put_capabilities(self, provider: str, model: str, caps: dict) -> None:
        """Remember a model's capabilities (committed at once)."""
        self.flush()
        self.retry(lambda: self._db.execute("INSERT OR REPLACE INTO capabilities VALUES (?, ?, ?)",
                                             (provider, model, json.dumps(caps, sort_keys=True))))

    def keys(self) -> set[str]:
        """All cached keys."""
        return {r[0] for r in self.retry(lambda: self._db.execute("SELECT key FROM calls").fetchall())}

    def __len__(self) -> int:
        return int(self.retry(lambda: self._db.execute("SELECT COUNT(*) FROM calls").fetchone())[0])

    def close(self) -> None:
        """Commit and close the database."""
        self.flush()
        self._db.close()
