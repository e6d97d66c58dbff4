"""Run a reward model over pairs: each distinct (prompt, answer) scored once, cached, retried, written as score
rows (:mod:`judge.verdicts.scores`).

A reward model scores an answer alone, so a pair's two orders read the same two scores: "both orders" costs
nothing extra, and an answer shared by several pairs (one model against many) is sent once. Calls go through
the judge runner's retry loop (:func:`llm.calls.retry.call_with_retries`: rate limits, backoff, ``Retry-After``) and
its call cache (:class:`llm.calls.cache.CallCache`, keyed by provider, model and the exact messages), so a rerun
sends only what failed or is new.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass

from judge.verdicts.pairs import Pair
from judge.verdicts.provenance import preflab_version
from judge.verdicts.scores import score_row
from llm.calls.cache import CallCache, cache_key, prompt_hash
from llm.calls.retry import CallStats, RateLimiter, call_with_retries, run_pool
from llm.providers.base import ProviderError
from llm.providers.reward import PATH, RewardProvider, reward_messages

#: The cache's "rubric" and "order" for a reward call: no rubric, no order (one answer).
CACHE_RUBRIC, CACHE_ORDER = "reward-model", "answer"


@dataclass(frozen=True)
class ScoreRunConfig:
    """Settings of a scoring run (the retry fields are those :func:`llm.calls.retry.call_with_retries` reads)."""

    concurrency: int = 16
    max_attempts: int = 6
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    rpm: float | None = None
    tpm: float | None = None
    system: str | None = None
    progress: bool = False
    seed: int = 0


@dataclass
class ScoreRunStats(CallStats):
    """A scoring run's accounting: the calls' (:class:`llm.calls.retry.CallStats`: sent, cache hits, failures,
    retries, tokens, wall time; the cost None, as a reward endpoint has no price here) and the answers': pairs,
    answers, distinct (prompt, answer)s."""

    pairs: int = 0
    answers: int = 0
    distinct: int = 0
    cost: float | None = None  # no price is known for a reward endpoint

    def summary(self) -> str:
        """One line for the console."""
        retried = f", {self.retries} retries" if self.retries else ""
        return (f"{self.pairs} pairs: {self.answers} answers, {self.distinct} distinct (prompt, answer) scored once "
                f"each: {self.calls} sent, {self.cache_hits} from the cache, {self.failed} failed{retried}; "
                "both orders cost nothing extra (a reward model scores each answer alone)")


def _keys(provider: RewardProvider, messages: tuple[dict, ...]) -> tuple[str, str]:
    p_hash = prompt_hash(messages)
    params = {"endpoint": PATH, "use_activation": False}
    return p_hash, cache_key(provider.provider, provider.model, CACHE_RUBRIC, p_hash, CACHE_ORDER, params)


async def _score_all(todo: dict[str, tuple[dict, ...]], provider: RewardProvider, config: ScoreRunConfig,
                     cache: CallCache | None, stats: ScoreRunStats) -> dict[str, float | ProviderError]:
    """Each distinct answer's reward (or the error that ended its retries)."""
    limiter, rng = RateLimiter(config.rpm, config.tpm), random.Random(config.seed)
    got: dict[str, float | ProviderError] = {}

    async def handle(key: str) -> None:
        messages = todo[key]
        estimate = sum(len(m["content"]) for m in messages) // 4 + 8
        try:
            comp = await call_with_retries(lambda: provider.score(messages), estimate, config, limiter, stats, rng)
        except ProviderError as e:
            got[key] = e
            stats.failed += 1
            return
        stats.calls += 1
        stats.tokens_in += comp.tokens_in
        got[key] = float(comp.text)
        if cache is not None:
            cache.put(key, comp, provider=provider.provider, model=provider.model, rubric=CACHE_RUBRIC,
                      p_hash=prompt_hash(messages), order=CACHE_ORDER, params={"endpoint": PATH})
    try:
        await run_pool(list(todo), handle, config.concurrency, progress=config.progress, unit="answer")
    finally:
        await provider.aclose()
        if cache is not None:
            cache.flush()
    return got


def score_pairs(pairs: Sequence[Pair], provider: RewardProvider, config: ScoreRunConfig = ScoreRunConfig(),
                cache: CallCache | None = None) -> tuple[list[dict], ScoreRunStats]:
    """Score rows (one per pair, no order: the scores cover both) and the run's stats. A failed answer leaves
    its row's score null with the ``error``; the row is kept, never dropped."""
    t0 = time.perf_counter()
    stats = ScoreRunStats(pairs=len(pairs), answers=2 * len(pairs))
    messages = [(reward_messages(p.prompt, p.answer_x, config.system),
                 reward_messages(p.prompt, p.answer_y, config.system)) for p in pairs]
    keyed = [(_keys(provider, mx)[1], _keys(provider, my)[1]) for mx, my in messages]
    distinct = {k: m for (kx, ky), (mx, my) in zip(keyed, messages, strict=True) for k, m in ((kx, mx), (ky, my))}
    stats.distinct = len(distinct)
    scores: dict[str, float | ProviderError] = {}
    if cache is not None:
        for key in distinct:
            hit = cache.get(key)
            if hit is not None:
                scores[key] = float(hit.text)
                stats.cache_hits += 1
    todo = {k: m for k, m in distinct.items() if k not in scores}
    scores.update(asyncio.run(_score_all(todo, provider, config, cache, stats)) if todo else {})
    rows = []
    common = {"judge": provider.spec, "model_version": provider.model, "preflab_version": preflab_version()}
    for p, (kx, ky) in zip(pairs, keyed, strict=True):
        sx, sy = scores[kx], scores[ky]
        errors = [str(s) for s in (sx, sy) if isinstance(s, ProviderError)]
        row = score_row(p.item_id, p.model_x, p.model_y, None if isinstance(sx, ProviderError) else sx,
                        None if isinstance(sy, ProviderError) else sy, **common)
        if errors:
            row["error"] = "; ".join(errors)
        rows.append(row)
    stats.wall_s = time.perf_counter() - t0
    return rows, stats
