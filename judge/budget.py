"""What a judge run will cost before it is sent (``judge run --dry-run``).

:func:`estimate_run` plans exactly the calls :func:`judge.run.arun_judge` would make (the same
:func:`judge.run.plan_calls`, identical requests once, cached answers left out) and prices them at the
provider's price (the price table's lookup, or an override). Input tokens are estimated at four characters
a token (the rule the runner's tokens-per-minute limiter uses; no tokenizer is assumed), output tokens at
``max_tokens`` a call (an upper bound). An unknown price is reported as unknown, never as $0. The cap a run
keeps while it runs is :class:`judge.spend.SpendMeter`. :func:`estimate_generate` does the same for
``preflab generate`` (the run's own :func:`judge.generate.plan_jobs`), and ``preflab compare --dry-run``
estimates each rubric's judge run with :func:`dry_run`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from judge.cache import CallCache
from judge.providers.base import Provider
from judge.run import open_provider, plan_calls
from judge.spend import BudgetReached, SpendMeter, estimated_input_tokens, known_price, per_token, spec_price

__all__ = ["BudgetReached", "RunEstimate", "SpendMeter", "dry_run", "estimate_generate", "estimate_run",
           "estimated_input_tokens", "generation_line", "known_price", "total_summary"]


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


def estimate_generate(prompts, models: Sequence, cache: str | Path | None = None) -> list[RunEstimate]:
    """One estimate per model of what ``preflab generate`` sends: the run's own jobs (identical requests once),
    cached answers left out, input at four characters a token, output at ``max_tokens`` a call; nothing is
    sent, no key is needed, and the cache is read but never created."""
    from judge.generate import GenerationCache, plan_jobs

    db = GenerationCache(cache) if cache is not None and Path(cache).exists() else None
    try:
        unique = list({j.key: j for j in plan_jobs(prompts, models)}.values())
        cached = {j.key for j in unique if db is not None and db.get_generation(j.key) is not None}
    finally:
        if db is not None:
            db.close()
    out = []
    for m in models:
        mine = [j for j in unique if j.spec is m]
        todo = [j for j in mine if j.key not in cached]
        out.append(RunEstimate(f"{m.name} ({m.spec})", len(todo), len(mine) - len(todo),
                               sum(estimated_input_tokens(j.request) for j in todo),
                               sum(j.request.max_tokens for j in todo), per_token(spec_price(m.spec)), False, 1))
    return out


def total_summary(estimates: Sequence[RunEstimate]) -> str:
    """The estimates' total: calls, tokens and cost, where an unknown price keeps the total unknown (the known
    part is shown as a lower bound)."""
    calls = sum(e.calls for e in estimates)
    t_in, t_out = sum(e.tokens_in for e in estimates), sum(e.tokens_out for e in estimates)
    known = sum(e.cost for e in estimates if e.cost is not None)
    unpriced = [e.judge for e in estimates if e.cost is None and e.calls]
    cost = (f"unknown: no price for {', '.join(unpriced)} (at least ${known:.4f} for the rest)" if unpriced
            else f"${known:.4f}")
    return (f"total: {calls} calls to send, {sum(e.cached for e in estimates)} answered by the cache; estimated "
            f"tokens {t_in} in, at most {t_out} out; estimated cost {cost}; nothing was sent")


def generation_line(e: RunEstimate) -> str:
    """One model's line for ``generate --dry-run``."""
    cost = ("unknown (no price in the table)" if e.price is None else "$0 (local server)" if e.price == (0.0, 0.0)
            else f"${e.cost:.4f}")
    return (f"{e.judge}: {e.calls} calls to send, {e.cached} cached; estimated tokens {e.tokens_in} in, at most "
            f"{e.tokens_out} out; cost {cost}")
