"""Secrets never leave the process: every configured API key, and anything shaped like one, is redacted from
error messages, logs, caches and outputs."""

from __future__ import annotations

import os
import re

REDACTED = "[REDACTED]"
#: Environment variables whose values are API keys (redacted whenever set, used or not).
KEY_ENV_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "PREFLAB_LOCAL_API_KEY")
# sk-..., sk-ant-..., sk-proj-...: provider key shapes; Bearer tokens in echoed headers.
_SHAPES = re.compile(r"sk-[A-Za-z0-9_\-]{8,}|(?i:bearer)\s+[A-Za-z0-9._~+/\-]{8,}=*")
_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember a key this process uses (short values are ignored: they would redact ordinary words)."""
    if value and len(value) >= 6:
        _secrets.add(value)


def _known() -> list[str]:
    keys = set(_secrets)
    for var in KEY_ENV_VARS:
        value = os.environ.get(var)
        if value and len(value) >= 6:
            keys.add(value)
    return sorted(keys, key=len, reverse=True)  # longest first: a key containing another goes whole


def redact(text: str) -> str:
    """``text`` with every known key and key-shaped string replaced by ``[REDACTED]``."""
    if not text:
        return text
    for key in _known():
        text = text.replace(key, REDACTED)
    return _SHAPES.sub(lambda m: "Bearer " + REDACTED if m.group(0).lower().startswith("bearer") else REDACTED,
                       text)


def redact_any(value: object) -> object:
    """Redact the strings inside a JSON-like value (dicts, lists), leaving other values as they are."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_any(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_any(v) for v in value]
    return value
