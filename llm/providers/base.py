"""The one protocol every judge provider implements, the request/response shapes, errors, and spec parsing.

A provider turns one :class:`JudgeRequest` into one :class:`Completion` and raises :class:`ProviderError`
(``retryable`` set for 429, 5xx, timeouts, dropped connections and malformed bodies). Retrying, caching,
rate limiting and verdict parsing live in :mod:`judge.runner.run`, so each provider module stays small.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import os
import re
import time
from collections.abc import Awaitable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

from llm.prices import Price
from preflab.redact import redact, register_secret


@dataclass(frozen=True)
class JudgeRequest:
    """One call: chat ``messages`` (or a plain ``prompt`` for ``/v1/completions``) and sampling params.

    ``temperature=None`` means the model's default sampling (not sent); ``n`` is the number of sampled
    answers wanted (one API call with ``n`` where the API has it, else ``n`` calls).
    """

    messages: tuple[dict, ...] = ()
    prompt: str | None = None
    max_tokens: int = 3
    temperature: float | None = 0.0
    top_logprobs: int = 20
    logprobs: bool = True
    seed: int | None = 0
    n: int = 1

    def sampling_params(self) -> dict:
        """The parameters that change the answer (part of the cache key)."""
        params = {"max_tokens": self.max_tokens, "temperature": self.temperature,
                  "top_logprobs": self.top_logprobs if self.logprobs else 0, "seed": self.seed}
        return params if self.n == 1 else {**params, "n": self.n}


@dataclass
class Completion:
    """A provider's answer in one shape: text, OpenAI-style per-token logprobs (or None), token counts.

    ``samples`` holds every answer's text when ``n > 1`` answers were asked for (``text`` is the first).
    """

    text: str
    tokens: list[dict] | None = None  # [{"token", "logprob", "top_logprobs": [{"token", "logprob"}]}]
    tokens_in: int = 0
    tokens_out: int = 0
    latency: float = 0.0
    raw: dict = field(default_factory=dict)
    samples: list[str] | None = None

    @property
    def texts(self) -> list[str]:
        """Every sampled answer (one for an ordinary call)."""
        return list(self.samples) if self.samples else [self.text]

    def to_json(self) -> dict:
        """JSON-able form for the cache."""
        return {"text": self.text, "tokens": self.tokens, "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out, "latency": self.latency, "samples": self.samples,
                # the model version the API said it served, so a cached verdict keeps its provenance
                "served": {k: self.raw.get("served", self.raw).get(k) for k in ("model", "system_fingerprint")}}

    @classmethod
    def from_json(cls, data: Mapping) -> Completion:
        """Inverse of :meth:`to_json`."""
        return cls(data["text"], data.get("tokens"), int(data.get("tokens_in", 0)),
                   int(data.get("tokens_out", 0)), float(data.get("latency", 0.0)),
                   {"served": data.get("served") or {}},
                   samples=data.get("samples"))


async def gather_samples(calls: Iterable[Awaitable[Completion]]) -> Completion:
    """Run K single-answer calls together and merge them (:func:`merge_samples`); every call finishes before
    the first error, if any, is raised (so a retry never overlaps a call still in flight)."""
    got = await asyncio.gather(*calls, return_exceptions=True)
    for g in got:
        if isinstance(g, BaseException):
            raise g
    return merge_samples(list(got))


def merge_samples(comps: list[Completion]) -> Completion:
    """K single answers as one completion with ``samples`` (tokens and latency summed)."""
    return Completion(comps[0].text, None, sum(c.tokens_in for c in comps), sum(c.tokens_out for c in comps),
                      max(c.latency for c in comps), comps[0].raw, [t for c in comps for t in c.texts])


#: :attr:`ProviderError.kind` of a reply cut by ``max_tokens`` before it said anything usable (raise --max-tokens).
CUT_BY_MAX_TOKENS = "max_tokens"
#: :attr:`ProviderError.kind` of a call never sent because the run's --max-cost was reached.
NOT_SENT_COST_CAP = "cost_cap"


class ProviderError(Exception):
    """A failed call. ``retryable`` calls are retried by the runner, waiting at least ``retry_after`` s."""

    def __init__(self, message: str, *, retryable: bool, status: int | None = None,
                 retry_after: float | None = None, kind: str | None = None,
                 refusal: tuple[str, int | None] | None = None) -> None:
        super().__init__(redact(message))  # a server may echo the key back in its error body
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after
        # "429", "500", "timeout", "connection", "malformed", CUT_BY_MAX_TOKENS, NOT_SENT_COST_CAP, ...
        self.kind = kind or (str(status) if status else "error")
        self.refusal = refusal  # (parameter the API refused, largest value it allows or None)


class ServerUnreachable(ProviderError):
    """The connection was refused before any byte was sent: no server listens at the URL. The runner tries
    :data:`REFUSED_TRIES` times, quickly, then stops the whole run with this error (every other call would
    be refused too); nothing was sent, so nothing was charged."""

    def __init__(self, url: str, detail: str) -> None:
        super().__init__(f"{url}: connection refused ({detail}): no server is listening there; start it, or fix "
                         "the URL", retryable=True, kind="refused")
        self.url = url


#: Tries of a call whose connection is refused, and the most seconds between two: a server that is starting
#: gets a moment, one that is down costs about a second, not a run of backoffs.
REFUSED_TRIES, REFUSED_WAIT_CAP = 3, 0.5


def transport_error(error: Exception, url: str) -> ProviderError:
    """An ``httpx`` transport failure as a :class:`ProviderError`: a refused connection is
    :class:`ServerUnreachable`, a timeout and any other transport error (reset, disconnected) retryable."""
    import httpx

    if isinstance(error, httpx.ConnectError):
        return ServerUnreachable(url, f"{type(error).__name__}: {error}")
    if isinstance(error, httpx.TimeoutException):
        return ProviderError(f"timeout: {type(error).__name__}", retryable=True, kind="timeout")
    return ProviderError(f"connection error: {type(error).__name__}: {error}", retryable=True, kind="connection")


class LogprobsUnsupported(ProviderError):
    """The model refuses logprobs (e.g. reasoning models); the runner switches to the K-sample fallback."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message, retryable=False, status=status, refusal=("logprobs", None))


#: Request parameters a judge can do without; an API refusal naming one drops it (see :func:`refused_param`).
OPTIONAL_PARAMS = ("temperature", "top_logprobs", "logprobs", "seed", "n", "max_tokens", "max_completion_tokens")
_QUOTED = re.compile(r"['`\"]([a-z_]+)['`\"]")
_MAX_ALLOWED = re.compile(r"logprobs of (\d+),? which is (?:greater|more) than (?:the )?max(?:imum)? allowed:?\s*(\d+)",
                          re.IGNORECASE)


def refused_param(status: int, message: str, param: str | None = None) -> tuple[str, int | None] | None:
    """Which optional parameter a 400/403/422 refuses, and the largest value allowed when the server says.

    Reads OpenAI's ``error.param`` and messages ("Unsupported parameter: 'temperature' is not supported with
    this model", "Unsupported value: 'temperature' does not support 0 ...", "You are not allowed to request
    logprobs from this model"), and vLLM's "Requested sample logprobs of 20, which is greater than max allowed:
    5" (then ``("top_logprobs", 5)``: ask for fewer rather than give up on logprobs).
    """
    if status not in (400, 403, 422):
        return None
    m = _MAX_ALLOWED.search(message)
    if m:
        return "top_logprobs", int(m.group(2))
    low = message.lower()
    lead = re.match(r"\s*([a-z_]+):", low)  # Anthropic's "temperature: Extra inputs are not permitted"
    quoted = _QUOTED.findall(low) + ([lead.group(1)] if lead else [])
    named = param if param in OPTIONAL_PARAMS else next((q for q in quoted if q in OPTIONAL_PARAMS), None)
    unsupported = any(w in low for w in ("unsupported", "not supported", "not allowed", "does not support",
                                         "extra inputs are not permitted", "not permitted", "deprecated"))
    if named and unsupported:
        return named, None
    if "logprob" in low and unsupported:
        return "logprobs", None
    return None


@runtime_checkable
class Provider(Protocol):
    """What the runner needs from a judge backend."""

    provider: str
    model: str
    supports_logprobs: bool
    price: Price | None  # None: unknown (reported as unknown, never $0)

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


MAX_TOP_LOGPROBS = 20  # OpenAI's documented maximum


def learn(capabilities: dict, refusal: tuple[str, int | None]) -> bool:
    """Record what a refusal says the model does not take; False when it was known already (no point retrying)."""
    param, allowed = refusal
    before = dict(capabilities)
    if param == "top_logprobs" and allowed:
        capabilities["top_logprobs"] = allowed
    elif param in ("logprobs", "top_logprobs"):
        capabilities["logprobs"] = False
    elif param == "max_tokens":
        capabilities["max_tokens_field"] = "max_completion_tokens"
    elif param == "max_completion_tokens":
        capabilities["max_tokens_field"] = "max_tokens"
    elif param == "temperature":  # models that fix their sampling reason before they answer
        capabilities.update(temperature=False, reasoning=True)
    else:
        capabilities[param] = False
    return capabilities != before


class SdkClient:
    """A provider over an official SDK client (``self._client``): the client for the batch APIs, and closing it."""

    _client: Any

    @property
    def client(self) -> Any:
        """The SDK client (same key, base URL and transport), for the batch API (:mod:`judge.runner.batch`)."""
        return self._client

    async def aclose(self) -> None:
        """Close the SDK client."""
        await self._client.close()


class LearnsCapabilities:
    """What a provider has learnt its model refuses (filled by :func:`learn` from the API's refusals)."""

    capabilities: dict

    @property
    def supports_logprobs(self) -> bool:
        """False once the model refused logprobs."""
        return self.capabilities.get("logprobs", True)

    @property
    def sets_temperature(self) -> bool:
        """False once the model refused a temperature (it samples at its default)."""
        return self.capabilities.get("temperature", True)


def status_error(status: int, headers: Mapping[str, str] | None, detail: str,
                 param: str | None = None) -> ProviderError:
    """The error for an HTTP status: 408/409/429/5xx retryable, other 4xx final; a refused optional
    parameter is named in ``refusal`` (logprob refusals raise :class:`LogprobsUnsupported`)."""
    retryable = status in (408, 409, 429) or status >= 500
    refusal = refused_param(status, detail, param)
    if refusal and refusal[0] == "logprobs":
        return LogprobsUnsupported(f"the model refuses logprobs ({detail[:200]}); use the K-sample fallback", status)
    return ProviderError(f"HTTP {status}: {detail[:300]}", retryable=retryable, status=status,
                         retry_after=parse_retry_after(headers), refusal=refusal)


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
        body = e.body if isinstance(e.body, Mapping) else {}
        err = body.get("error") if isinstance(body.get("error"), Mapping) else body
        raise status_error(e.status_code, e.response.headers, str(e.message), err.get("param")) from None
    except sdk.APITimeoutError:
        raise ProviderError("timeout", retryable=True, kind="timeout") from None
    except sdk.APIConnectionError as e:
        import httpx

        if isinstance(e.__cause__, httpx.ConnectError):  # refused before any byte was sent
            raise ServerUnreachable(str(getattr(e.request, "url", "the API")), str(e.__cause__)) from None
        raise ProviderError(f"connection error: {e}", retryable=True, kind="connection") from None
    except (sdk.APIResponseValidationError, ValueError) as e:
        raise ProviderError(f"malformed response body ({type(e).__name__})", retryable=True,
                            kind="malformed") from None
