"""On-disk SQLite cache of judge calls, so a rerun or a killed-and-restarted run re-calls nothing answered.

Keyed by (provider, model, rubric fingerprint, prompt hash, order, sampling params incl. sample index).
Answers are committed in small groups (every ``commit_every`` answers or ``commit_interval`` seconds, WAL
journal), so a process killed mid-run loses at most those last few answers, which a restart calls again.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from pathlib import Path

from judge.providers.base import Completion

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    provider TEXT NOT NULL, model TEXT NOT NULL, rubric TEXT NOT NULL,
    prompt_hash TEXT NOT NULL, order_ TEXT NOT NULL, params TEXT NOT NULL,
    completion TEXT NOT NULL, created REAL NOT NULL
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
    """A SQLite file of completions (``path=":memory:"`` for a throwaway run)."""

    def __init__(self, path: str | Path, commit_every: int = 64, commit_interval: float = 0.25) -> None:
        self.path = str(path)
        self.commit_every, self.commit_interval = commit_every, commit_interval
        self._pending, self._last_commit = 0, time.monotonic()
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)

    def get(self, key: str) -> Completion | None:
        """The cached completion for a key, or None."""
        row = self._db.execute("SELECT completion FROM calls WHERE key = ?", (key,)).fetchone()
        return Completion.from_json(json.loads(row[0])) if row else None

    def put(self, key: str, completion: Completion, *, provider: str, model: str, rubric: str,
            p_hash: str, order: str, params: dict) -> None:
        """Store one completion; commits every ``commit_every`` puts or ``commit_interval`` seconds."""
        if not self._db.in_transaction:
            self._db.execute("BEGIN")
        self._db.execute(
            "INSERT OR REPLACE INTO calls VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (key, provider, model, rubric, p_hash, order, json.dumps(params, sort_keys=True),
             json.dumps(completion.to_json()), time.time()),
        )
        self._pending += 1
        if self._pending >= self.commit_every or time.monotonic() - self._last_commit > self.commit_interval:
            self.flush()

    def flush(self) -> None:
        """Commit pending answers now."""
        if self._db.in_transaction:
            self._db.execute("COMMIT")
        self._pending, self._last_commit = 0, time.monotonic()

    def keys(self) -> set[str]:
        """All cached keys."""
        return {r[0] for r in self._db.execute("SELECT key FROM calls")}

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    def close(self) -> None:
        """Commit and close the database."""
        self.flush()
        self._db.close()
