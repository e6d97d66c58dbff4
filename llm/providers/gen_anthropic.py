"""Answers from the Anthropic Messages API through the official SDK: one call or a token stream."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import anthropic

from llm.providers.anthropic import AnthropicProvider
from llm.providers.base import ProviderError, sdk_errors
from llm.providers.generation import Generation, GenerationRequest, finish_reason, unsupported_settings


class AnthropicGenerator(AnthropicProvider):
    """Answers from the Anthropic Messages API through the official SDK (no sampling settings in 2026-10-21)."""

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
