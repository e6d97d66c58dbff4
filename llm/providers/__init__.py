"""One provider class per API (OpenAI, Anthropic, OpenAI-compatible servers), each serving both judging
(``complete``: :class:`llm.providers.base.Provider`) and answering (``generate``, ``stream``); :func:`make_provider`
is the one factory (each SDK is imported only when used)."""

from __future__ import annotations

from typing import Any

from llm.providers.base import (
    Completion,
    JudgeRequest,
    JudgeSpec,
    LogprobsUnsupported,
    Provider,
    ProviderError,
    parse_spec,
)

__all__ = ["Completion", "JudgeRequest", "JudgeSpec", "LogprobsUnsupported", "Provider", "ProviderError",
           "make_provider", "parse_spec"]


def make_provider(spec: str | JudgeSpec, *, timeout: float = 60.0, **kwargs: Any) -> Provider:
    """Build the provider for a spec such as ``openai:gpt-4.1-mini`` or ``local:http://127.0.0.1:8080/v1#m``
    (the judge runner, ``preflab generate`` and the Battle page all build theirs here)."""
    s = parse_spec(spec) if isinstance(spec, str) else spec
    if s.provider == "openai":
        from llm.providers.openai import OpenAIProvider

        return OpenAIProvider(s.model, base_url=s.base_url, timeout=timeout, **kwargs)
    if s.provider == "anthropic":
        from llm.providers.anthropic import AnthropicProvider

        return AnthropicProvider(s.model, base_url=s.base_url, timeout=timeout, **kwargs)
    from llm.providers.compatible import CompatibleProvider

    return CompatibleProvider(s.model, s.base_url or "", completions=s.completions, timeout=timeout, **kwargs)
