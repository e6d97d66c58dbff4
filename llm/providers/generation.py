"""What answering sends and gets back: the request (:class:`GenerationRequest`) and the answer (:class:`Generation`)
of a provider's ``generate`` (one call) and ``stream`` (a token stream).

Each provider answers with the client, key handling (keys from the environment only, redacted from every
error) and error mapping it judges with; only the request differs. Parameters
are sent only when the model spec sets them, so a provider's own default applies otherwise. The Anthropic
API version the SDK sends (2026-10-21) has no ``temperature``/``top_p``: a spec asking for them is refused
before any call (:func:`unsupported_settings`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: Finish reasons in one vocabulary: ``stop`` (the model ended), ``length`` (cut at max tokens: a truncated
#: answer), ``content_filter``, ``tool_calls``, ``unknown`` (the server did not say).
FINISH_REASONS = {"stop": "stop", "end_turn": "stop", "stop_sequence": "stop", "eos": "stop",
                  "length": "length", "max_tokens": "length", "model_context_window_exceeded": "length",
                  "content_filter": "content_filter", "refusal": "content_filter",
                  "tool_calls": "tool_calls", "tool_use": "tool_calls", "function_call": "tool_calls"}


def finish_reason(raw: str | None) -> str:
    """A provider's finish or stop reason in the one vocabulary of :data:`FINISH_REASONS`."""
    return FINISH_REASONS.get(raw or "", "unknown")


@dataclass(frozen=True)
class GenerationRequest:
    """One answer to generate: chat ``messages`` (system first, if any) and the sampling settings
    (``None``: not sent, the provider's default applies)."""

    messages: tuple[dict, ...]
    max_tokens: int = 512
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None

    def settings(self) -> dict:
        """The settings that change the answer (part of the cache key, and of every output row)."""
        return {"max_tokens": self.max_tokens, "temperature": self.temperature, "top_p": self.top_p,
                "seed": self.seed}


@dataclass(frozen=True)
class Generation:
    """A generated answer: text, token counts (``None``: the server did not report them), finish reason,
    latency and, when streamed, the time to the first token."""

    text: str
    tokens_in: int | None
    tokens_out: int | None
    finish_reason: str
    latency: float
    first_token_s: float | None = None

    @property
    def truncated(self) -> bool:
        """Cut at the token limit (such an answer loses unfairly)."""
        return self.finish_reason == "length"

    def to_json(self) -> dict:
        """JSON-able form for the cache."""
        return {"text": self.text, "tokens_in": self.tokens_in, "tokens_out": self.tokens_out,
                "finish_reason": self.finish_reason, "latency": self.latency, "first_token_s": self.first_token_s}

    @classmethod
    def from_json(cls, data: Mapping) -> Generation:
        """Inverse of :meth:`to_json`."""
        return cls(data["text"], data.get("tokens_in"), data.get("tokens_out"), data.get("finish_reason", "unknown"),
                   float(data.get("latency", 0.0)), data.get("first_token_s"))


def unsupported_settings(provider: str, request: GenerationRequest) -> list[str]:
    """Settings the provider's API version refuses (Anthropic 2026-10-21: ``temperature``, ``top_p``, ``seed``)."""
    if provider == "anthropic":
        return [k for k in ("temperature", "top_p", "seed") if getattr(request, k) is not None]
    return []


def sampling(request: GenerationRequest) -> dict:
    return {k: v for k, v in (("temperature", request.temperature), ("top_p", request.top_p),
                              ("seed", request.seed)) if v is not None}


def int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) else None
