"""Answers from an OpenAI-compatible server (vLLM, llama.cpp, Ollama): one call or a token stream."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import AsyncIterator

import httpx

from llm.providers.base import ProviderError, status_error
from llm.providers.compatible import CompatibleProvider
from llm.providers.generation import Generation, GenerationRequest, finish_reason, int_or_none, sampling


class CompatibleGenerator(CompatibleProvider):
    """Answers from an OpenAI-compatible server (vLLM, llama.cpp, Ollama) on ``/chat/completions``."""

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
        try:
            return await next(self._next).handle_async_request(req)
        except httpx.TimeoutException as e:
            raise ProviderError(f"timeout: {type(e).__name__}", retryable=True, kind="timeout") from None
        except httpx.TransportError as e:
            raise ProviderError(f"connection error: {type(e).__name__}: {e}", retryable=True,
                                kind="connection") from None

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
