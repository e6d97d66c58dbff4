"""The generator for a provider spec: which provider's ``generate``/``stream`` answers it (kept apart from
:mod:`llm.providers.generation`, whose request and answer types every generator imports)."""

from __future__ import annotations

from typing import Any

from llm.providers.base import JudgeSpec, parse_spec


def make_generator(spec: str | JudgeSpec, *, timeout: float = 60.0, **kwargs: Any) -> Any:
    """The generator for a provider spec (``openai:MODEL``, ``anthropic:MODEL``, ``local:URL#MODEL``): a judge
    provider with ``generate`` and ``stream`` (each SDK is imported only when used)."""
    s = parse_spec(spec) if isinstance(spec, str) else spec
    if s.completions:
        raise ValueError("answers are generated on /chat/completions; use local:URL#MODEL, not local+completions:")
    if s.provider == "openai":
        from llm.providers.gen_openai import OpenAIGenerator

        return OpenAIGenerator(s.model, base_url=s.base_url, timeout=timeout, **kwargs)
    if s.provider == "anthropic":
        from llm.providers.gen_anthropic import AnthropicGenerator

        return AnthropicGenerator(s.model, base_url=s.base_url, timeout=timeout, **kwargs)
    from llm.providers.gen_compatible import CompatibleGenerator

    return CompatibleGenerator(s.model, s.base_url or "", timeout=timeout, **kwargs)
