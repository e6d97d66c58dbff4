"""Answers from OpenAI chat completions through the official SDK: one call or a token stream."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import openai

from llm.providers.base import ProviderError, sdk_errors
from llm.providers.generation import Generation, GenerationRequest, finish_reason, sampling
from llm.providers.openai import OpenAIProvider


class OpenAIGenerator(OpenAIProvider):
    """Answers from OpenAI chat completions through the official SDK."""

    def _kwargs(self, request: GenerationRequest) -> dict:
        return {"model": self.model, "messages": list(request.messages),
                "max_completion_tokens": request.max_tokens, **sampling(request)}

    async def generate(self, request: GenerationRequest) -> Generation:
        """One answer; SDK errors become :class:`ProviderError`."""
        t0 = time.perf_counter()
        with sdk_errors(openai):
            resp = await self._client.chat.completions.create(**self._kwargs(request))
        if not resp.choices:
            raise ProviderError("malformed response body (no choices)", retryable=True, kind="malformed")
        choice, usage = resp.choices[0], resp.usage
        return Generation(choice.message.content or "", usage.prompt_tokens if usage else None,
                          usage.completion_tokens if usage else None, finish_reason(choice.finish_reason),
                          time.perf_counter() - t0)

    async def stream(self, request: GenerationRequest) -> AsyncIterator[str | Generation]:
        """Text pieces as they arrive, then the finished :class:`Generation`."""
        t0 = time.perf_counter()
        parts: list[str] = []
        first, reason, usage = None, None, None
        with sdk_errors(openai):
            chunks = await self._client.chat.completions.create(**self._kwargs(request), stream=True,
                                                                stream_options={"include_usage": True})
            async for chunk in chunks:
                usage = chunk.usage or usage
                for choice in chunk.choices:
                    reason = choice.finish_reason or reason
                    if choice.delta and choice.delta.content:
                        first = first if first is not None else time.perf_counter() - t0
                        parts.append(choice.delta.content)
                        yield choice.delta.content
        yield Generation("".join(parts), usage.prompt_tokens if usage else None,
                         usage.completion_tokens if usage else None, finish_reason(reason),
                         time.perf_counter() - t0, first)
