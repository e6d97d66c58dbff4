"""Calls under rate limits with retries, on a pool of workers: the one loop the judge runner and
``preflab generate`` share.

Each attempt waits for the per-endpoint rate limiter (requests and tokens per minute), then calls; a retryable
:class:`~llm.providers.base.ProviderError` (429, 5xx, timeouts, dropped connections, malformed bodies) is
retried with exponential backoff and full jitter (Brooker, "Exponential backoff and jitter", AWS 2015), never
sooner than the server's ``Retry-After``. A refused connection (no server at the URL:
:class:`~llm.providers.base.ServerUnreachable`) gets a few quick tries and then stops the whole run.
"""

from __future__ import annotations

import asyncio
import math
import random
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from tqdm import tqdm

from llm.providers.base import REFUSED_TRIES, REFUSED_WAIT_CAP, ProviderError, ServerUnreachable

T = TypeVar("T")


class RetrySettings(Protocol):
    """What the loop reads from a run's settings (``RunConfig``, ``GenerateConfig``)."""

    max_attempts: int
    backoff_base: float
    backoff_cap: float


@dataclass
class CallStats:
    """What a run of calls did, judging or answering alike: calls sent, cache hits, retries (counted by
    :func:`call_with_retries`, with their reasons and waits), failures, tokens and cost (None: the price is
    unknown). The judge's :class:`judge.runner.run.RunStats` and ``generate``'s
    :class:`answering.generate.GenerateStats` add what only they count."""

    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    failed: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float | None = 0.0  # None: the price is unknown
    wall_s: float = 0.0
    retry_reasons: Counter = field(default_factory=Counter)  # "429", "500", "timeout", "connection", "malformed"
    waits: list[float] = field(default_factory=list, repr=False)


class RetryCounts(Protocol):
    """Where the loop counts its retries (:class:`CallStats`)."""

    retries: int
    retry_reasons: Counter
    waits: list


def backoff_delay(attempt: int, retry_after: float | None, u: float, base: float = 0.5, cap: float = 30.0) -> float:
    """Seconds before retry ``attempt`` (0-based): full jitter ``u * min(cap, base * 2**attempt)`` with
    ``u ~ U[0, 1)`` (Brooker 2015), but never less than the server's ``Retry-After``."""
    return max(retry_after or 0.0, u * min(cap, base * 2.0**attempt))


class RateLimiter:
    """Token buckets for requests and tokens per minute (I/O edge; state is the buckets)."""

    def __init__(self, rpm: float | None, tpm: float | None) -> None:
        self.rates = {"req": (rpm or math.inf) / 60.0, "tok": (tpm or math.inf) / 60.0}
        self.level = {"req": rpm or math.inf, "tok": tpm or math.inf}
        self.cap = dict(self.level)
        self.t = time.monotonic()

    def _refill(self) -> None:
        now = time.monotonic()
        for k, r in self.rates.items():
            self.level[k] = min(self.cap[k], self.level[k] + r * (now - self.t))
        self.t = now

    async def acquire(self, tokens: int) -> None:
        """Wait until one request and ``tokens`` tokens are available, then take them."""
        need = {"req": 1.0, "tok": min(float(tokens), self.cap["tok"])}
        while True:
            self._refill()
            short = {k: need[k] - self.level[k] for k in need if self.level[k] < need[k]}
            if not short:
                for k in need:
                    self.level[k] -= need[k]
                return
            await asyncio.sleep(max(short[k] / self.rates[k] for k in short))

    def correct(self, estimated: int, actual: int) -> None:
        """Charge the difference between the estimate and the usage the provider reported."""
        self.level["tok"] -= actual - estimated


async def call_with_retries(call: Callable[[], Awaitable[T]], estimate: int, settings: RetrySettings,
                            limiter: RateLimiter, stats: RetryCounts, rng: random.Random) -> T:
    """Run ``call`` under ``limiter`` (``estimate`` tokens), retrying a retryable :class:`ProviderError` up to
    ``settings.max_attempts`` times in all; the answer's reported usage (``tokens_in``/``tokens_out``, unknown
    as 0) corrects the token bucket."""
    for attempt in range(settings.max_attempts):
        await limiter.acquire(estimate)
        try:
            got = await call()
        except ProviderError as e:
            refused = isinstance(e, ServerUnreachable)
            if not e.retryable or attempt == (min(REFUSED_TRIES, settings.max_attempts) if refused
                                              else settings.max_attempts) - 1:
                raise
            delay = backoff_delay(attempt, e.retry_after, rng.random(), settings.backoff_base,
                                  REFUSED_WAIT_CAP if refused else settings.backoff_cap)
            stats.retries += 1
            stats.retry_reasons[e.kind] += 1
            stats.waits.append(delay)
            await asyncio.sleep(delay)
            continue
        limiter.correct(estimate, (got.tokens_in or 0) + (got.tokens_out or 0))
        return got
    raise AssertionError("unreachable")


async def run_pool(items: list[T], handle: Callable[[T], Awaitable[None]], concurrency: int, *, progress: bool,
                   unit: str) -> None:
    """Each item through ``handle`` on ``concurrency`` workers (at least one, at most one per item), with a
    progress bar on stderr; an exception ``handle`` raises stops the pool and propagates."""
    queue: asyncio.Queue[T] = asyncio.Queue()
    for item in items:
        queue.put_nowait(item)
    bar = tqdm(total=len(items), disable=not progress, file=sys.stderr, unit=unit)

    async def worker() -> None:
        while not queue.empty():
            await handle(queue.get_nowait())
            bar.update(1)

    try:
        await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(items))))))
    finally:
        bar.close()
