"""OpenAI chat completions through the official ``openai`` SDK, with ``logprobs`` and ``top_logprobs`` (<= 20).

Reasoning models refuse logprobs: they are detected by name up front, or by the API's 400 answer, and the
runner routes them to the K-sample fallback with a clear message. The SDK's own retries are off; the
runner retries (honouring ``Retry-After``) so that every provider behaves the same.
"""

from __future__ import annotations

import time

import httpx
import openai

from judge.providers.base import (
    Completion,
    JudgeRequest,
    ProviderError,
    api_key,
    logprob_content,
    prices,
    sdk_errors,
)

REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")  # no logprobs on these
REASONING_MIN_TOKENS = 2048  # their hidden reasoning counts against max_completion_tokens


class OpenAIProvider:
    """An OpenAI (or Azure/OpenAI-proxy via ``base_url``) chat model as a judge."""

    provider = "openai"

    def __init__(self, model: str, *, base_url: str | None = None, timeout: float = 60.0,
                 api_key_env: str = "OPENAI_API_KEY", http_client: httpx.AsyncClient | None = None) -> None:
        self.model = model
        self.supports_logprobs = not model.startswith(REASONING_PREFIXES)
        self.price_in, self.price_out = prices(model)
        self._client = openai.AsyncOpenAI(api_key=api_key(api_key_env), base_url=base_url, timeout=timeout,
                                          max_retries=0, http_client=http_client)

    async def complete(self, request: JudgeRequest) -> Completion:
        """One chat completion; SDK errors become :class:`ProviderError`."""
        max_tokens = request.max_tokens if self.supports_logprobs else max(request.max_tokens, REASONING_MIN_TOKENS)
        kwargs: dict = {"model": self.model, "messages": list(request.messages),
                        "max_completion_tokens": max_tokens, "temperature": request.temperature}
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if request.logprobs:
            kwargs.update(logprobs=True, top_logprobs=min(request.top_logprobs, 20))
        t0 = time.perf_counter()
        with sdk_errors(openai):
            resp = await self._client.chat.completions.create(**kwargs)
        data = resp.model_dump()
        try:
            choice = data["choices"][0]
        except (KeyError, IndexError, TypeError):
            raise ProviderError("malformed response body (no choices)", retryable=True, kind="malformed") from None
        usage = data.get("usage") or {}
        return Completion(choice["message"].get("content") or "", logprob_content(choice.get("logprobs")),
                          int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0),
                          time.perf_counter() - t0, data)

    async def aclose(self) -> None:
        """Close the SDK client."""
        await self._client.close()
