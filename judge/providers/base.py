"""The one protocol every judge provider implements, the request/response shapes, errors, and spec parsing.

A provider turns one :class:`JudgeRequest` into one :class:`Completion` and raises :class:`ProviderError`
(``retryable`` set for 429, 5xx, timeouts, dropped connections and malformed bodies). Retrying, caching,
rate limiting and verdict parsing live in :mod:`judge.run`, so each provider module stays small.
"""

from __future__ import annotations

import contextlib
import email.utils
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

from preflab.redact import redact, register_secret


@dataclass(frozen=True)
class JudgeRequest:
    """One call: chat ``messages`` (or a plain ``prompt`` for ``/v1/completions``) and sampling params."""

    messages: tuple[dict, ...] = ()
    prompt: str | None = None
    max_tokens: int = 3
    temperature: float = 0.0
    top_logprobs: int = 20
    logprobs: bool = True
    seed: int | None = 0

    def sampling_params(self) -> dict:
        """The parameters that change the answer (part of the cache key)."""
        return {"max_tokens": self.max_tokens, "temperature": self.temperature,
                "top_logprobs": self.top_logprobs if self.logprobs else 0, "seed": self.seed}


@dataclass
class Completion:
    """A provider's answer in one shape: text, OpenAI-style per-token logprobs (or None), token counts."""

    text: str
    tokens: list[dict] | None = None  # [{"token", "logprob", "top_logprobs": [{"token", "logprob"}]}]
    tokens_in: int = 0
    tokens_out: int = 0
    latency: float = 0.0
    raw: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        """JSON-able form for the cache."""
        return {"text": self.text, "tokens": self.tokens, "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out, "latency": self.latency,
                # the model version the API said it served, so a cached verdict keeps its provenance
                "served": {k: self.raw.get("served", self.raw).get(k) for k in ("model", "system_fingerprint")}}

    @classmethod
    def from_json(cls, data: Mapping) -> Completion:
        """Inverse of :meth:`to_json`."""
        return cls(data["text"], data.get("tokens"), int(data.get("tokens_in", 0)),
                   int(data.get("tokens_out", 0)), float(data.get("latency", 0.0)), {"served": data.get("served") or {}})


class ProviderError(Exception):
    """A failed call. ``retryable`` calls are retried by the runner, waiting at least ``retry_after`` s."""

    def __init__(self, message: str, *, retryable: bool, status: int | None = None,
                 retry_after: float | None = None, kind: str | None = None) -> None:
        super().__init__(redact(message))  # a server may echo the key back in its error body
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after
        self.kind = kind or (str(status) if status else "error")  # "429", "500", "timeout", "connection", ...


class LogprobsUnsupported(ProviderError):
    """The model refuses logprobs (e.g. reasoning models); the runner switches to the K-sample fallback."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=False, status=400)


@runtime_checkable
class Provider(Protocol):
    """What the runner needs from a judge backend."""

    provider: str
    model: str
    supports_logprobs: bool
    price_in: float  # USD per input token (0 when unknown or local)
    price_out: float

    async def complete(self, request: JudgeRequest) -> Completion:
        """Answer one request or raise :class:`ProviderError`."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date), if given."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def status_error(status: int, headers: Mapping[str, str] | None, detail: str) -> ProviderError:
    """The error for an HTTP status: 408/409/429/5xx retryable, other 4xx final; logprob refusals flagged."""
    retryable = status in (408, 409, 429) or status >= 500
    if status == 400 and "logprob" in detail.lower():
        return LogprobsUnsupported(f"the model refuses logprobs ({detail[:200]}); use the K-sample fallback")
    return ProviderError(f"HTTP {status}: {detail[:300]}", retryable=retryable, status=status,
                         retry_after=parse_retry_after(headers))


def api_key(env_var: str, required: bool = True) -> str | None:
    """An API key from the environment only (never from files or arguments, never logged)."""
    key = os.environ.get(env_var)
    register_secret(key)
    if required and not key:
        raise ProviderError(f"set the environment variable {env_var} to use this judge", retryable=False)
    return key


def logprob_content(choice_logprobs: Any) -> list[dict] | None:
    """OpenAI chat ``logprobs.content`` or legacy completions ``logprobs`` as ``[{token, logprob, top_logprobs}]``."""
    if not choice_logprobs:
        return None
    if isinstance(choice_logprobs, Mapping) and choice_logprobs.get("content") is not None:
        return [{"token": t["token"], "logprob": t["logprob"],
                 "top_logprobs": [{"token": a["token"], "logprob": a["logprob"]} for a in t.get("top_logprobs") or []]}
                for t in choice_logprobs["content"]]
    if isinstance(choice_logprobs, Mapping) and "tokens" in choice_logprobs:  # /v1/completions
        tops = choice_logprobs.get("top_logprobs") or [None] * len(choice_logprobs["tokens"])
        return [{"token": tok, "logprob": lp,
                 "top_logprobs": [{"token": k, "logprob": v} for k, v in (top or {}).items()]}
                for tok, lp, top in zip(choice_logprobs["tokens"], choice_logprobs["token_logprobs"], tops,
                                        strict=False)]
    return None


# USD per million tokens (input, output), list prices as of 2025; unknown models cost 0 and are flagged.
PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "gpt-4.1": (2.0, 8.0), "gpt-4.1-mini": (0.4, 1.6), "gpt-4.1-nano": (0.1, 0.4),
    "gpt-4o": (2.5, 10.0), "gpt-4o-mini": (0.15, 0.6), "o4-mini": (1.1, 4.4),
    "claude-haiku-4-5": (1.0, 5.0), "claude-sonnet-4-5": (3.0, 15.0), "claude-opus-4-1": (15.0, 75.0),
}


def prices(model: str) -> tuple[float, float]:
    """USD per token (input, output) for a model name (longest known prefix), or (0, 0) when unknown."""
    best = max((k for k in PRICES_PER_MTOK if model.startswith(k)), key=len, default=None)
    if best is None:
        return 0.0, 0.0
    pin, pout = PRICES_PER_MTOK[best]
    return pin / 1e6, pout / 1e6


@dataclass(frozen=True)
class JudgeSpec:
    """A parsed judge spec: ``openai:MODEL``, ``anthropic:MODEL``, ``local[+completions]:BASE_URL#MODEL``."""

    provider: str
    model: str
    base_url: str | None = None
    completions: bool = False


def parse_spec(spec: str) -> JudgeSpec:
    """Parse a judge spec string; the error says which forms are accepted."""
    kind, sep, rest = spec.partition(":")
    forms = "openai:gpt-4.1-mini, anthropic:claude-haiku-4-5, local:http://127.0.0.1:8080/v1#smollm2"
    if not sep or not rest:
        raise ValueError(f"judge spec {spec!r}: expected PROVIDER:MODEL, e.g. {forms}")
    if kind in ("openai", "anthropic"):
        base, _, model = rest.rpartition("#") if "#" in rest else ("", "", rest)
        return JudgeSpec(kind, model, base or None)
    if kind in ("local", "local+completions"):
        base, hash_, model = rest.partition("#")
        if not base.startswith(("http://", "https://")) or not hash_ or not model:
            raise ValueError(f"judge spec {spec!r}: local judges need a URL and a model, e.g. "
                             "local:http://127.0.0.1:8080/v1#smollm2")
        return JudgeSpec("local", model, base.rstrip("/"), completions=kind.endswith("completions"))
    raise ValueError(f"judge spec {spec!r}: unknown provider {kind!r}; use one of {forms}")


@contextlib.contextmanager
def sdk_errors(sdk: ModuleType) -> Iterator[None]:
    """Turn an official SDK's exceptions into :class:`ProviderError` (openai and anthropic share the names)."""
    try:
        yield
    except sdk.APIStatusError as e:
        raise status_error(e.status_code, e.response.headers, str(e.message)) from None
    except sdk.APITimeoutError:
        raise ProviderError("timeout", retryable=True, kind="timeout") from None
    except sdk.APIConnectionError as e:
        raise ProviderError(f"connection error: {e}", retryable=True, kind="connection") from None
    except (sdk.APIResponseValidationError, ValueError) as e:
        raise ProviderError(f"malformed response body ({type(e).__name__})", retryable=True,
                            kind="malformed") from None
