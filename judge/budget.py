"""What a judge run will cost before it is sent (``judge run --dry-run``).

:func:`estimate_run` plans exactly the calls :func:`judge.run.arun_judge` would make (the same
:func:`judge.run.plan_calls`, identical requests once, cached answers left out) and prices them at the
provider's price (the price table's lookup, or an override). Input tokens are estimated at four characters
a token (the rule the runner's tokens-per-minute limiter uses; no tokenizer is assumed), output tokens at
``max_tokens`` a call (an upper bound). An unknown price is reported as unknown, never as $0. The cap a run
keeps while it runs is :class:`judge.spend.SpendMeter`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from judge.cache import CallCache
from judge.prices import price_for
from judge.providers.base import Provider, parse_spec
from judge.run import open_provider, plan_calls
from judge.spend import BudgetReached, SpendMeter, estimated_input_tokens, known_price

__all__ = ["BudgetReached", "RunEstimate", "SpendMeter", "dry_run", "estimate_run", "estimated_input_tokens",
           "known_price", "spec_price"]


def spec_price(spec: str) -> tuple[float, float] | None:
    """(USD per input token, per output token) of a judge spec (``openai:gpt-4.1-mini``) without opening a
    provider: a local server is free, a model the price table does not list is unknown (None)."""
    parsed = parse_spec(spec)
    if parsed.provider == "local":
        return 0.0, 0.0
    price = price_for(parsed.model)
    return None if price is None else (price.input / 1e6, price.output / 1e6)


@dataclass(frozen=True)
class RunEstimate:
    """The calls a run will send, their estimated tokens, and the cost (None when the price is unknown)."""

    judge: str
    calls: int
    cached: int
    tokens_in: int
    tokens_out: int
    price: tuple[float, float] | None
    sampled: bool
    samples_per_order: int

    @property
    def cost(self) -> float | None:
        if self.price is None:
            return None
        return self.tokens_in * self.price[0] + self.tokens_out * self.price[1]

    def summary(self) -> str:
        """Lines for ``judge run --dry-run``."""
        if self.price is None:
            cost = f"unknown: no price for {self.judge} in the price table (give one to price the run)"
        elif self.price == (0.0, 0.0):
            cost = "$0 (a self-hosted judge: no per-token price)"
        else:
            cost = (f"${self.cost:.4f} at ${self.price[0] * 1e6:g} / ${self.price[1] * 1e6:g} per million tokens "
                    "in / out")
        method = f"sampled, {self.samples_per_order} per order" if self.sampled else "logprob"
        return (f"dry run ({self.judge}, {method}): {self.calls} calls to send, {self.cached} calls answered by the "
                f"cache\nestimated tokens: {self.tokens_in} in (4 characters a token), at most {self.tokens_out} "
                f"out\nestimated cost: {cost}\nnothing was sent")


def estimate_run(pairs: Sequence, provider: Provider, config, cache=None) -> RunEstimate:
    """Plan the run's calls without sending any (see the module docstring). A model that refuses logprobs
    only when called is found out by the run itself, which then re-plans sampled calls."""
    sampled = config.samples > 0 or not provider.supports_logprobs
    calls = plan_calls(pairs, provider, config, sampled)
    unique = list({c.key: c for c in calls}.values())
    cached = {c.key for c in unique if cache is not None and cache.get(c.key) is not None}
    todo = [c for c in unique if c.key not in cached]
    sends = [requests_per_call(provider, c.request.n) for c in todo]
    k = max((c.request.n for c in calls), default=0)
    return RunEstimate(f"{provider.provider}:{provider.model}", sum(sends), len(cached),
                       sum(estimated_input_tokens(c.request) * r for c, r in zip(todo, sends, strict=True)),
                       sum(c.request.max_tokens * c.request.n for c in todo), known_price(provider), sampled, k)


def requests_per_call(provider: Provider, n: int) -> int:
    """HTTP requests one call of ``n`` answers makes: one where the API takes ``n`` (OpenAI, unless the model
    refused it), else one per answer (Anthropic, OpenAI-compatible servers)."""
    takes_n = provider.provider == "openai" and getattr(provider, "capabilities", {}).get("n", True)
    return 1 if n == 1 or takes_n else n


def dry_run(pairs: Sequence, provider: Provider | str, config, cache: str | Path | None = None) -> RunEstimate:
    """The estimate for a judge spec (or provider), reading but never creating the cache; nothing is sent."""
    prov, config, own = open_provider(provider, config)
    db = CallCache(cache) if cache is not None and Path(cache).exists() else None
    try:
        return estimate_run(pairs, prov, config, db)
    finally:
        if db is not None:
            db.close()
        if own:
            asyncio.run(prov.aclose())
