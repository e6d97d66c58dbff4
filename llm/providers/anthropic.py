"""Anthropic Messages API through the official ``anthropic`` SDK (2.x, API version 2026-10-21).

That API version rejects ``temperature``, ``top_p`` and ``top_k`` (HTTP 400, even at their default values),
live and in Message Batches, and returns no logprobs. An Anthropic judge therefore runs the K-sample
fallback as K calls at the model's default sampling, labelled ``sampled`` (see :mod:`judge.runner.run`). Models
that think by default spend thinking tokens out of ``max_tokens``: every call gets at least
:data:`THINKING_MIN_TOKENS`, and an answer that is all thinking is an error, never an empty verdict.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import anthropic

from llm.prices import price_for
from llm.providers.base import (
    CUT_BY_MAX_TOKENS,
    Completion,
    JudgeRequest,
    ProviderError,
    SdkClient,
    api_key,
    gather_samples,
    sdk_errors,
)
from llm.providers.generation import Generation, GenerationRequest, finish_reason, unsupported_settings

THINKING_MIN_TOKENS = 2048  # thinking counts against max_tokens; the same budget as OpenAI reasoning models


class AnthropicProvider(SdkClient):
    """A Claude model as a judge (text verdicts only). ``http_client`` is passed to the SDK as is (the
    ``anthropic`` 2.x SDK wants an ``httpx2.AsyncClient``)."""

    provider = "anthropic"
    supports_logprobs = False
    sets_temperature = False  # API version 2026-10-21: no sampling parameters

    def __init__(self, model: str, *, base_url: str | None = None, timeout: float = 60.0,
                 api_key_env: str = "ANTHROPIC_API_KEY", http_client: Any = None) -> None:
        self.model = model
        self.price = price_for(model)
        self.capabilities: dict = {}
        self._client = anthropic.AsyncAnthropic(api_key=api_key(api_key_env), base_url=base_url, timeout=timeout,
                                                max_retries=0, http_client=http_client)

    @staticmethod
    def split_system(messages: tuple[dict, ...]) -> tuple[str | None, list[dict]]:
        """Anthropic takes the system prompt as a separate field."""
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system") or None
        return system, [m for m in messages if m["role"] != "system"]

    def params(self, request: JudgeRequest) -> dict:
        """The Messages API body for one answer (also each Message Batches request's ``params``)."""
        system, msgs = self.split_system(request.messages)
        body: dict = {"model": self.model, "messages": msgs,
                      "max_tokens": max(request.max_tokens, THINKING_MIN_TOKENS)}
        if system:
            body["system"] = system
        return body

    @staticmethod
    def completion(data: dict, latency: float = 0.0) -> Completion:
        """A Message (as a dict) as a completion; an answer with no text (all thinking) is an error."""
        text = "".join(b.get("text", "") for b in data.get("content") or [] if b.get("type") == "text")
        usage = data.get("usage") or {}
        if not text.strip() and data.get("stop_reason") == "max_tokens":
            raise ProviderError(f"the model spent all {usage.get('output_tokens')} output tokens before answering "
                                "(thinking counts against max_tokens); raise --max-tokens", retryable=False,
                                kind=CUT_BY_MAX_TOKENS)
        return Completion(text, None, int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0),
                          latency, data)

    async def _one(self, request: JudgeRequest) -> Completion:
        t0 = time.perf_counter()
        with sdk_errors(anthropic):
            resp = await self._client.messages.create(**self.params(request))
        return self.completion(resp.model_dump(), time.perf_counter() - t0)

    async def complete(self, request: JudgeRequest) -> Completion:
        """One answer, or ``request.n`` answers as ``n`` calls at the model's default sampling."""
        if request.n == 1:
            return await self._one(request)
        return await gather_samples(self._one(request) for _ in range(request.n))

    # Answering (preflab generate, the Battle page): the same client, keys and error mapping.

    def _kwargs(self, request: GenerationRequest) -> dict:
        if bad := unsupported_settings("anthropic", request):
            raise ProviderError(f"the Anthropic API takes no {', '.join(bad)}; drop them from the model spec",
                                retryable=False, kind="settings")
        system, msgs = self.split_system(request.messages)
        # thinking would count against max_tokens (models that think by default): the spec's budget is the answer's
        return {"model": self.model, "messages": msgs, "max_tokens": request.max_tokens,
                "thinking": {"type": "disabled"}, **({"system": system} if system else {})}

    async def generate(self, request: GenerationRequest) -> Generation:
        """One answer; SDK errors become :class:`ProviderError`."""
        kwargs = self._kwargs(request)
        t0 = time.perf_counter()
        with sdk_errors(anthropic):
            resp = await self._client.messages.create(**kwargs)
        text = "".join(getattr(b, "text", "") for b in resp.content if b.type == "text")
        return Generation(text, resp.usage.input_tokens, resp.usage.output_tokens, finish_reason(resp.stop_reason),
                          time.perf_counter() - t0)

    async def stream(self, request: GenerationRequest) -> AsyncIterator[str | Generation]:
        """Text pieces as they arrive (``content_block_delta`` events), then the finished :class:`Generation`."""
        kwargs = self._kwargs(request)
        t0 = time.perf_counter()
        parts: list[str] = []
        first, reason, tokens_in, tokens_out = None, None, None, None
        with sdk_errors(anthropic):
            events = await self._client.messages.create(**kwargs, stream=True)
            async for event in events:
                if event.type == "message_start":
                    tokens_in = event.message.usage.input_tokens
                elif event.type == "content_block_delta" and getattr(event.delta, "type", "") == "text_delta":
                    first = first if first is not None else time.perf_counter() - t0
                    parts.append(event.delta.text)
                    yield event.delta.text
                elif event.type == "message_delta":
                    reason = event.delta.stop_reason or reason
                    tokens_out = event.usage.output_tokens
        yield Generation("".join(parts), tokens_in, tokens_out, finish_reason(reason), time.perf_counter() - t0, first)
