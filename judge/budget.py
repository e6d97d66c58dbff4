"""What a judge run will cost before it is sent, and a spending cap while it runs.

:func:`estimate_run` plans exactly the calls :func:`judge.run.arun_judge` would make (the same
:func:`judge.run.plan_calls`, identical requests once, cached answers left out) and prices them at the
provider's price (the price table's lookup, or an override). Input tokens are estimated at four characters
a token (the rule the runner's tokens-per-minute limiter uses; no tokenizer is assumed), output tokens at
``max_tokens`` a call (an upper bound). An unknown price is reported as unknown, never as $0.

:class:`SpendMeter` is the runner's cap (``--max-cost``): a call is started only while the spend so far is
below the cap, so the run stops within one round of in-flight calls (``concurrency``) of it; what was
answered is cached and a rerun continues from there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from judge.providers.base import Completion, JudgeRequest, Provider, ProviderError


def estimated_input_tokens(request: JudgeRequest) -> int:
    """Tokens a request sends, estimated at four characters a token (messages or completion prompt)."""
    return (sum(len(m["content"]) for m in request.messages) + len(request.prompt or "")) // 4


def known_price(provider: Provider) -> tuple[float, float] | None:
    """(USD per input token, per output token), or None when the price is unknown: see :func:`price_or_unknown`
    (the provider's prices come from the price table's lookup, or an override)."""
    return price_or_unknown(provider.provider, getattr(provider, "price_in", None), getattr(provider, "price_out", None))


def spec_price(spec: str) -> tuple[float, float] | None:
    """The price-table price of a judge spec (``openai:gpt-4.1-mini``) without opening a provider."""
    from judge.providers.base import parse_spec, prices

    parsed = parse_spec(spec)
    return price_or_unknown(parsed.provider, *prices(parsed.model))


def price_or_unknown(kind: str, p_in: float | None, p_out: float | None) -> tuple[float, float] | None:
    """A local (self-hosted) judge costs nothing per token. For an API judge a price that is missing, NaN,
    or 0 for both directions (how the price table marks a model it does not list) is unknown (None)."""
    if kind == "local":
        return float(p_in or 0.0), float(p_out or 0.0)
    if p_in is None or p_out is None or math.isnan(p_in) or math.isnan(p_out) or (p_in == 0 and p_out == 0):
        return None
    return float(p_in), float(p_out)


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
        return (f"dry run ({self.judge}, {method}): {self.calls} calls to send, {self.cached} answered by the "
                f"cache\nestimated tokens: {self.tokens_in} in (4 characters a token), at most {self.tokens_out} "
                f"out\nestimated cost: {cost}\nnothing was sent")


def estimate_run(pairs: Sequence, provider: Provider, config, cache=None) -> RunEstimate:
    """Plan the run's calls without sending any (see the module docstring). A model that refuses logprobs
    only when called is found out by the run itself, which then re-plans sampled calls."""
    from judge.run import plan_calls

    sampled = config.samples > 0 or not provider.supports_logprobs
    calls = plan_calls(pairs, provider, config, sampled)
    unique = list({c.key: c for c in calls}.values())
    cached = {c.key for c in unique if cache is not None and cache.get(c.key) is not None}
    todo = [c for c in unique if c.key not in cached]
    k = len({c.sample for c in calls}) if calls else 0
    return RunEstimate(f"{provider.provider}:{provider.model}", len(todo), len(cached),
                       sum(estimated_input_tokens(c.request) for c in todo),
                       sum(c.request.max_tokens for c in todo), known_price(provider), sampled, k)


class BudgetReached(ProviderError):
    """A call not sent because the run's spending cap was reached (kept as the row's error)."""

    def __init__(self, cap: float, spent: float) -> None:
        super().__init__(f"not sent: the --max-cost budget of ${cap:g} was reached (spent ${spent:.4f}); "
                         "rerun with a higher --max-cost to continue from the cache", retryable=False, kind="budget")


class SpendMeter:
    """The spend of a run's fresh calls against an optional cap (USD)."""

    def __init__(self, provider: Provider, cap: float | None) -> None:
        self.cap, self.spent = cap, 0.0
        self.price = known_price(provider)
        if cap is not None and self.price is None:
            raise ValueError(f"--max-cost needs a known price, and {provider.provider}:{provider.model} has none "
                             "in the price table; give its price or drop --max-cost")

    def check(self) -> None:
        """Raise :class:`BudgetReached` when the cap is reached (call before sending)."""
        if self.cap is not None and self.spent >= self.cap:
            raise BudgetReached(self.cap, self.spent)

    def charge(self, comp: Completion) -> None:
        """Add one answered call's cost."""
        if self.price is not None:
            self.spent += comp.tokens_in * self.price[0] + comp.tokens_out * self.price[1]

    @property
    def reached(self) -> bool:
        return self.cap is not None and self.spent >= self.cap


def dry_run(pairs: Sequence, provider: Provider | str, config, cache: str | Path | None = None) -> RunEstimate:
    """The estimate for a judge spec (or provider), reading but never creating the cache; nothing is sent."""
    import asyncio

    from judge.cache import CallCache
    from judge.run import open_provider

    prov, config, own = open_provider(provider, config)
    db = CallCache(cache) if cache is not None and Path(cache).exists() else None
    try:
        return estimate_run(pairs, prov, config, db)
    finally:
        if db is not None:
            db.close()
        if own:
            asyncio.run(prov.aclose())
