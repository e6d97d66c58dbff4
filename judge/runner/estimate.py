"""What a judge run will cost before it is sent (``judge run --dry-run``).

:func:`estimate_run` plans exactly the calls :func:`judge.runner.run.arun_judge` would make (the same
:func:`judge.runner.run.plan_calls`, identical requests once, cached answers left out) and prices them as
:class:`llm.calls.estimate.RunEstimate` does; ``preflab compare --dry-run`` estimates each rubric's judge run
with :func:`dry_run`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from judge.runner.run import open_provider, plan_calls
from llm.calls.cache import CallCache
from llm.calls.estimate import RunEstimate, requests_per_call
from llm.calls.spend import estimated_input_tokens, known_price
from llm.providers.base import Provider


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
