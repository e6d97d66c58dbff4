"""Two models answering the same turn side by side, streamed (the Battle page's live answers).

Each side stops at its spec's timeout; an error or a timeout is that side's result, never the other's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from answering.model_specs import ModelSpec
from llm.providers import make_provider
from llm.providers.base import ProviderError
from llm.providers.generation import Generation


async def stream_answers(specs: dict[str, ModelSpec], conversations: dict[str, list[dict]], max_tokens: int,
                         on_text: Callable[[str, str], None],
                         generators: dict[str, object] | None = None) -> dict[str, Generation | Exception]:
    """Stream both sides' next answers at once; ``on_text(side, text so far)`` after every piece. Each side
    stops at its spec's timeout; an error or a timeout is that side's result (the other side finishes).
    ``generators`` (by side) are the caller's to keep open; without them each side's is built and closed."""

    async def one(side: str) -> Generation | Exception:
        spec = specs[side]
        gen = generators[side] if generators else make_provider(spec.spec, timeout=spec.timeout)
        request = spec.request(conversations[side])
        request = type(request)(request.messages, min(request.max_tokens, max_tokens), request.temperature,
                                request.top_p, request.seed)
        text = ""
        try:
            async with asyncio.timeout(spec.timeout):
                async for piece in gen.stream(request):
                    if isinstance(piece, Generation):
                        return piece
                    text += piece
                    on_text(side, text)
            return ProviderError("the stream ended early", retryable=False, kind="connection")
        except (ProviderError, TimeoutError, OSError) as e:
            return e if isinstance(e, ProviderError) else ProviderError(type(e).__name__, retryable=False,
                                                                        kind="timeout")
        finally:
            if not generators:
                await gen.aclose()

    a, b = await asyncio.gather(one("a"), one("b"))
    return {"a": a, "b": b}
