"""OpenAI-compatible servers (vLLM, llama.cpp server, Ollama, LM Studio) through httpx and a base URL.

``/v1/chat/completions`` with ``logprobs``/``top_logprobs`` for chat models, ``/v1/completions`` with
``logprobs=k`` for base models. The API key, if the server wants one, comes from an environment variable.
"""

from __future__ import annotations

import functools
import itertools
import json
import time
from collections.abc import AsyncIterator
from dataclasses import replace

import httpx

from llm.prices import FREE
from llm.providers.base import (
    CUT_BY_MAX_TOKENS,
    Completion,
    JudgeRequest,
    LearnsCapabilities,
    LogprobsUnsupported,
    ProviderError,
    api_key,
    gather_samples,
    learn,
    logprob_content,
    status_error,
    transport_error,
)
from llm.providers.generation import Generation, GenerationRequest, finish_reason, int_or_none, sampling

THINKING_MIN_TOKENS = 2048  # a model that thinks aloud first (<think>...</think>) needs room to finish


async def send(transport: httpx.AsyncBaseTransport, req: httpx.Request, url: str, read: bool = True) -> httpx.Response:
    """Send one request on a transport (the body read and the response closed with ``read``); a transport
    failure is :func:`llm.providers.base.transport_error` of the server's ``url`` (a refused connection:
    :class:`ServerUnreachable`; a timeout or a lost connection: retryable). Every httpx provider sends this way."""
    try:
        resp = await transport.handle_async_request(req)
        if read:
            try:
                await resp.aread()
            finally:
                await resp.aclose()
        return resp
    except httpx.TransportError as e:  # refused (no server), timeout, reset, server disconnected
        raise transport_error(e, url) from None


def _unfinished_thinking(text: str) -> bool:
    head = text.lstrip()
    return head.startswith("<think>") and "</think>" not in head


class CompatibleProvider(LearnsCapabilities):
    """A judge served by an OpenAI-compatible HTTP server."""

    provider = "local"
    price = FREE

    def __init__(self, model: str, base_url: str, *, completions: bool = False, timeout: float = 60.0,
                 api_key_env: str = "PREFLAB_LOCAL_API_KEY", transport: httpx.AsyncBaseTransport | None = None,
                 max_connections: int = 128, connections_per_pool: int = 8) -> None:
        self.model = model
        self.capabilities: dict = {}
        self.base_url = base_url.rstrip("/")
        self.completions = completions
        key = api_key(api_key_env, required=False)
        self._headers = {"content-type": "application/json", **({"authorization": f"Bearer {key}"} if key else {})}
        self._timeout = {"timeout": httpx.Timeout(timeout).as_dict()}
        # Requests go straight to httpx transports: the client layer (redirects, cookies, auth hooks) is
        # unused here and costs about a quarter of the CPU per call. httpcore's pool also scans every
        # connection for every queued request, so several small pools (round-robin) beat one big one.
        per = max(1, min(connections_per_pool, max_connections))
        limits = httpx.Limits(max_connections=per, max_keepalive_connections=per)
        ssl_context = httpx.create_ssl_context()  # loaded once, not once per pool
        self._transports = [transport] if transport is not None else [
            httpx.AsyncHTTPTransport(limits=limits, verify=ssl_context) for _ in range(max(1, max_connections // per))]
        self._next = itertools.cycle(self._transports)

    def body(self, req: JudgeRequest) -> tuple[str, dict]:
        """The endpoint path and JSON body for a request."""
        caps = self.capabilities
        if req.logprobs and not self.supports_logprobs:
            raise LogprobsUnsupported(f"{self.model} does not return logprobs (learnt earlier)")
        budget = max(req.max_tokens, THINKING_MIN_TOKENS) if caps.get("reasoning") else req.max_tokens
        common: dict = {"model": self.model, "max_tokens": budget}
        if req.temperature is not None and caps.get("temperature", True):
            common["temperature"] = req.temperature
        if req.seed is not None and caps.get("seed", True):
            common["seed"] = req.seed
        top = min(req.top_logprobs, caps.get("top_logprobs", req.top_logprobs))
        if self.completions:
            prompt = req.prompt if req.prompt is not None else "\n\n".join(m["content"] for m in req.messages)
            extra = {"logprobs": top} if req.logprobs else {}
            return "/completions", {**common, "prompt": prompt, **extra}
        extra = {"logprobs": True, "top_logprobs": top} if req.logprobs else {}
        return "/chat/completions", {**common, "messages": list(req.messages), **extra}

    async def complete(self, request: JudgeRequest) -> Completion:
        """One answer, or ``request.n`` answers as ``n`` calls (seeds ``seed``, ``seed + 1``, ...); a refused
        optional parameter (e.g. vLLM's "greater than max allowed" for top logprobs) is dropped or lowered,
        remembered in :attr:`capabilities` and the call repeated."""
        if request.n > 1:
            return await gather_samples(
                self.complete(replace(request, n=1, seed=None if request.seed is None else request.seed + s))
                for s in range(request.n))
        for _ in range(8):
            sent = self.body(request)
            try:
                return await self._post(*sent)
            except ProviderError as e:
                if e.kind == CUT_BY_MAX_TOKENS:  # a thinking model: give it the reasoning budget, once
                    self.capabilities["reasoning"] = True
                    if self.body(request) != sent:
                        continue
                if e.refusal:
                    learn(self.capabilities, e.refusal)
                # retry only when what we now know changes the request (concurrent calls learn it too)
                if isinstance(e, LogprobsUnsupported) or not e.refusal or self.body(request) == sent:
                    raise
        raise ProviderError(f"{self.model}: the server kept refusing parameters", retryable=False)

    async def _post(self, path: str, body: dict) -> Completion:
        """POST one request; map transport failures and bad bodies to retryable :class:`ProviderError`."""
        req = httpx.Request("POST", self.base_url + path, content=json.dumps(body).encode(), headers=self._headers,
                            extensions=self._timeout)
        t0 = time.perf_counter()
        resp = await send(next(self._next), req, self.base_url)
        if resp.status_code != 200:
            raise status_error(resp.status_code, resp.headers, resp.text)
        try:
            data = resp.json()
            choice = data["choices"][0]
            text = choice["message"]["content"] if "message" in choice else choice["text"]
        except (json.JSONDecodeError, KeyError, IndexError, TypeError) as e:
            raise ProviderError(f"malformed response body ({type(e).__name__})", retryable=True,
                                kind="malformed") from None
        usage = data.get("usage") or {}
        if choice.get("finish_reason") == "length" and _unfinished_thinking(text or ""):
            raise ProviderError(f"the reply was cut off inside <think> after {usage.get('completion_tokens')} tokens; "
                                "raise --max-tokens", retryable=False, kind=CUT_BY_MAX_TOKENS)
        return Completion(text or "", logprob_content(choice.get("logprobs")),
                          int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)),
                          time.perf_counter() - t0, data)

    async def aclose(self) -> None:
        """Close the connection pools."""
        for transport in self._transports:
            await transport.aclose()

    # Answering (preflab generate, the Battle page): the same client, keys and error mapping.

    def _request(self, request: GenerationRequest, stream: bool) -> httpx.Request:
        body = {"model": self.model, "messages": list(request.messages), "max_tokens": request.max_tokens,
                **sampling(request)}
        if stream:
            body.update(stream=True, stream_options={"include_usage": True})
        return httpx.Request("POST", self._chat_url, content=json.dumps(body).encode(), headers=self._headers,
                             extensions=self._timeout)

    @functools.cached_property
    def _chat_url(self) -> httpx.URL:
        return httpx.URL(self.base_url + "/chat/completions")  # parsed once, not once per call

    async def _send(self, req: httpx.Request) -> httpx.Response:
        return await send(next(self._next), req, self.base_url, read=False)

    async def _check(self, resp: httpx.Response) -> None:
        if resp.status_code != 200:
            try:
                await resp.aread()
            finally:
                await resp.aclose()
            raise status_error(resp.status_code, resp.headers, resp.text)

    async def generate(self, request: GenerationRequest) -> Generation:
        """One answer; failures map to :class:`ProviderError` as the judge's calls do."""
        t0 = time.perf_counter()
        resp = await self._send(self._request(request, stream=False))
        await self._check(resp)
        try:
            await resp.aread()
        except httpx.TransportError as e:
            raise ProviderError(f"connection error: {type(e).__name__}", retryable=True, kind="connection") from None
        finally:
            await resp.aclose()
        try:
            data = resp.json()
            choice = data["choices"][0]
            text = choice["message"]["content"]
        except (json.JSONDecodeError, KeyError, IndexError, TypeError) as e:
            raise ProviderError(f"malformed response body ({type(e).__name__})", retryable=True,
                                kind="malformed") from None
        usage = data.get("usage") or {}
        return Generation(text or "", int_or_none(usage.get("prompt_tokens")),
                          int_or_none(usage.get("completion_tokens")), finish_reason(choice.get("finish_reason")),
                          time.perf_counter() - t0)

    async def stream(self, request: GenerationRequest) -> AsyncIterator[str | Generation]:
        """Text pieces as the server sends them (server-sent events), then the finished :class:`Generation`."""
        t0 = time.perf_counter()
        resp = await self._send(self._request(request, stream=True))
        await self._check(resp)
        parts: list[str] = []
        first: float | None = None
        reason, usage = None, {}
        try:
            async for line in resp.aiter_lines():
                if not line.startswith("data:"):
                    continue
                payload = line[5:].strip()
                if payload == "[DONE]":
                    break
                chunk = json.loads(payload)
                usage = chunk.get("usage") or usage
                for choice in chunk.get("choices") or []:
                    piece = (choice.get("delta") or {}).get("content") or ""
                    reason = choice.get("finish_reason") or reason
                    if piece:
                        first = first if first is not None else time.perf_counter() - t0
                        parts.append(piece)
                        yield piece
        except httpx.TransportError as e:
            raise ProviderError(f"connection lost mid-answer: {type(e).__name__}", retryable=False,
                                kind="connection") from None
        except (json.JSONDecodeError, AttributeError, TypeError) as e:
            raise ProviderError(f"malformed stream ({type(e).__name__})", retryable=False, kind="malformed") from None
        finally:
            await resp.aclose()
        if reason is None:
            raise ProviderError("the stream ended without a finish reason", retryable=False, kind="connection")
        yield Generation("".join(parts), int_or_none(usage.get("prompt_tokens")),
                         int_or_none(usage.get("completion_tokens")), finish_reason(reason),
                         time.perf_counter() - t0, first)
