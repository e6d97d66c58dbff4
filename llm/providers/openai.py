"""OpenAI chat completions through the official ``openai`` SDK (3.x), by capability rather than model name.

A model's capabilities start unknown and are learnt from the API's own refusals: a 400/403 naming an
optional parameter ("Unsupported parameter: 'temperature' ...", "Unsupported value: 'temperature' does
not support 0", "You are not allowed to request logprobs", "'max_tokens' is not supported ... use
'max_completion_tokens'", vLLM's "Requested sample logprobs of 20, which is greater than max allowed: 5")
drops or lowers that parameter, remembers it in :attr:`OpenAIProvider.capabilities` (the runner keeps them
in the call cache, per model) and calls again. A model that refuses logprobs raises
:class:`LogprobsUnsupported` and the runner samples K verdicts instead, through ``n`` where the API takes it.
A reply cut off before any text (reasoning tokens count against the budget) raises the budget to
:data:`REASONING_MIN_TOKENS` once, then is an error: an empty answer is never a verdict.
The SDK's own retries are off; the runner retries (honouring ``Retry-After``).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import replace

import httpx
import openai

from llm.prices import price_for
from llm.providers.base import (
    CUT_BY_MAX_TOKENS,
    MAX_TOP_LOGPROBS,
    Completion,
    JudgeRequest,
    LearnsCapabilities,
    LogprobsUnsupported,
    ProviderError,
    SdkClient,
    api_key,
    gather_samples,
    learn,
    logprob_content,
    merge_samples,
    sdk_errors,
)
from llm.providers.generation import Generation, GenerationRequest, finish_reason, sampling

REASONING_MIN_TOKENS = 2048  # hidden reasoning counts against max_completion_tokens


def request_body(model: str, capabilities: dict, request: JudgeRequest) -> dict:
    """The chat completions body for a request under what the model is known to accept (live and batch)."""
    budget = max(request.max_tokens, REASONING_MIN_TOKENS) if capabilities.get("reasoning") else request.max_tokens
    body: dict = {"model": model, "messages": list(request.messages),
                  capabilities.get("max_tokens_field", "max_completion_tokens"): budget}
    if request.temperature is not None and capabilities.get("temperature", True):
        body["temperature"] = request.temperature
    if request.seed is not None and capabilities.get("seed", True):
        body["seed"] = request.seed
    if request.logprobs:
        body.update(logprobs=True, top_logprobs=min(request.top_logprobs,
                                                    capabilities.get("top_logprobs", MAX_TOP_LOGPROBS)))
    if request.n > 1 and capabilities.get("n", True):
        body["n"] = request.n
    return body


def completion_from_body(data: dict, latency: float = 0.0) -> Completion:
    """A chat completion (a dict, live or from a batch output line) as one completion; every choice's text
    goes to ``samples`` when there are several. Raises ``ProviderError(kind=CUT_BY_MAX_TOKENS)`` when the reply was cut
    off before any text."""
    try:
        choices = data["choices"]
        first = choices[0]
    except (KeyError, IndexError, TypeError):
        raise ProviderError("malformed response body (no choices)", retryable=True, kind="malformed") from None
    texts = [(c.get("message") or {}).get("content") or "" for c in choices]
    usage = data.get("usage") or {}
    if not any(t.strip() for t in texts) and first.get("finish_reason") == "length":
        reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
        raise ProviderError(f"the reply was cut off before any text ({usage.get('completion_tokens')} completion "
                            f"tokens, {reasoning} of them reasoning); raise --max-tokens", retryable=False,
                            kind=CUT_BY_MAX_TOKENS)
    return Completion(texts[0], logprob_content(first.get("logprobs")), int(usage.get("prompt_tokens") or 0),
                      int(usage.get("completion_tokens") or 0), latency, data,
                      texts if len(texts) > 1 else None)


class OpenAIProvider(SdkClient, LearnsCapabilities):
    """An OpenAI (or Azure/OpenAI-proxy via ``base_url``) chat model as a judge."""

    provider = "openai"

    def __init__(self, model: str, *, base_url: str | None = None, timeout: float = 60.0,
                 api_key_env: str = "OPENAI_API_KEY", http_client: httpx.AsyncClient | None = None) -> None:
        self.model = model
        self.price = price_for(model)
        self.capabilities: dict = {}
        self._client = openai.AsyncOpenAI(api_key=api_key(api_key_env), base_url=base_url, timeout=timeout,
                                          max_retries=0, http_client=http_client)

    def body(self, request: JudgeRequest) -> dict:
        """The request body under the capabilities learnt so far."""
        if request.logprobs and not self.supports_logprobs:
            raise LogprobsUnsupported(f"{self.model} does not return logprobs (learnt earlier)")
        return request_body(self.model, self.capabilities, request)

    async def _create(self, request: JudgeRequest) -> Completion:
        for _ in range(len(self.capabilities) + 8):  # each round learns one capability, so this ends
            body = self.body(request)
            t0 = time.perf_counter()
            try:
                with sdk_errors(openai):
                    resp = await self._client.chat.completions.create(**body)
                return completion_from_body(resp.model_dump(), time.perf_counter() - t0)
            except ProviderError as e:
                if e.kind == CUT_BY_MAX_TOKENS:
                    self.capabilities["reasoning"] = True
                elif e.refusal:
                    learn(self.capabilities, e.refusal)
                if isinstance(e, LogprobsUnsupported):
                    raise
                # retry only when what we now know changes the request (concurrent calls learn it too)
                if (e.kind == CUT_BY_MAX_TOKENS or e.refusal) and self.body(request) != body:
                    continue
                raise
        raise ProviderError(f"{self.model}: the API kept refusing parameters", retryable=False)

    async def complete(self, request: JudgeRequest) -> Completion:
        """One chat completion (``n`` answers through ``n``, or ``n`` calls where the model refuses ``n``)."""
        comp = await self._create(request)
        if request.n == 1 or len(comp.texts) == request.n:
            return comp
        rest = await gather_samples(self._create(replace(request, n=1, seed=None if request.seed is None
                                                         else request.seed + s)) for s in range(1, request.n))
        return merge_samples([comp, rest])

    # Answering (preflab generate, the Battle page): the same client, keys and error mapping.

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
