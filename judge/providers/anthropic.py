"""Anthropic Messages API through the official ``anthropic`` SDK.

The Messages API returns no logprobs, so an Anthropic judge always runs the K-sample fallback: K calls
at temperature > 0, verdict shares with Wilson intervals, labelled ``sampled`` (see :mod:`judge.run`).
"""

from __future__ import annotations

import inspect
import time
from typing import Any

import anthropic

from judge.providers.base import (
    Completion,
    JudgeRequest,
    api_key,
    prices,
    sdk_errors,
)

_SDK_TAKES_TEMPERATURE = "temperature" in inspect.signature(anthropic.resources.messages.AsyncMessages.create).parameters


class AnthropicProvider:
    """A Claude model as a judge (text verdicts only). ``http_client`` is passed to the SDK as is (recent
    ``anthropic`` releases want an ``httpx2.AsyncClient``)."""

    provider = "anthropic"
    supports_logprobs = False

    def __init__(self, model: str, *, base_url: str | None = None, timeout: float = 60.0,
                 api_key_env: str = "ANTHROPIC_API_KEY", http_client: Any = None) -> None:
        self.model = model
        self.price_in, self.price_out = prices(model)
        self._client = anthropic.AsyncAnthropic(api_key=api_key(api_key_env), base_url=base_url, timeout=timeout,
                                                max_retries=0, http_client=http_client)

    @staticmethod
    def split_system(messages: tuple[dict, ...]) -> tuple[str | None, list[dict]]:
        """Anthropic takes the system prompt as a separate field."""
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system") or None
        return system, [m for m in messages if m["role"] != "system"]

    async def complete(self, request: JudgeRequest) -> Completion:
        """One message; SDK errors become :class:`ProviderError`."""
        system, msgs = self.split_system(request.messages)
        kwargs: dict = {"model": self.model, "messages": msgs, "max_tokens": request.max_tokens}
        if _SDK_TAKES_TEMPERATURE:
            kwargs["temperature"] = request.temperature
        else:  # recent SDK releases dropped the keyword; the API field is sent as is
            kwargs["extra_body"] = {"temperature": request.temperature}
        if system:
            kwargs["system"] = system
        t0 = time.perf_counter()
        with sdk_errors(anthropic):
            resp = await self._client.messages.create(**kwargs)
        data = resp.model_dump()
        text = "".join(b.get("text", "") for b in data.get("content") or [] if b.get("type") == "text")
        usage = data.get("usage") or {}
        return Completion(text, None, int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0),
                          time.perf_counter() - t0, data)

    async def aclose(self) -> None:
        """Close the SDK client."""
        await self._client.close()
