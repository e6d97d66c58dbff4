"""Generate answers: every model on every prompt, through the same providers and call machinery as the judge.

Calls go through ``concurrency`` workers with the judge runner's rate limiter (per endpoint) and backoff
(:func:`llm.calls.retry.call_with_retries`, never sooner than ``Retry-After``). Each answer is committed to a SQLite
cache as it arrives (:class:`GenerationCache`, the judge cache's file handling), so a killed run restarts
without generating anything answered twice. The result is an items table in the long layout
(``item_id, prompt, model, answer`` plus tokens, latency, cost, finish reason and settings) that
``preflab import`` reads, and :func:`pairs_table` turns it into ``judge run`` pairs.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from answering.model_specs import ModelSpec
from llm.calls.cache import CallCache, cache_key, prompt_hash
from llm.calls.estimate import RunEstimate
from llm.calls.retry import CallStats, RateLimiter, call_with_retries, run_pool
from llm.calls.spend import SpendMeter, estimated_input_tokens, per_token, spec_price
from llm.providers import make_provider
from llm.providers.base import ProviderError, ServerUnreachable, parse_spec
from llm.providers.generation import Generation, GenerationRequest
from preflab.redact import redact, redact_any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS generations (
    key TEXT PRIMARY KEY, model TEXT NOT NULL, item_id TEXT NOT NULL, generation TEXT NOT NULL, created REAL NOT NULL
)"""


class GenerationCache(CallCache):
    """The judge's SQLite call cache file, with a table of generated answers (same commit grouping, WAL,
    busy retries)."""

    def __init__(self, path: str | Path, **kwargs: float) -> None:
        super().__init__(path, **kwargs)
        self.execute(_SCHEMA)

    def get_generation(self, key: str) -> Generation | None:
        """The cached answer for a key, or None."""
        row = self.execute("SELECT generation FROM generations WHERE key = ?", (key,)).fetchone()
        return Generation.from_json(json.loads(row[0])) if row else None

    def put_generation(self, key: str, generation: Generation, *, model: str, item_id: str) -> None:
        """Store one answer (secrets redacted); committed now, or with the next group."""
        self.insert("generations", (key, model, item_id, json.dumps(redact_any(generation.to_json())), time.time()))

    def count_generations(self) -> int:
        """How many answers the cache holds."""
        return int(self.execute("SELECT COUNT(*) FROM generations").fetchone()[0])


@dataclass(frozen=True)
class GenerateConfig:
    """How to run: calls in flight, per-endpoint rate limits, retries (as :class:`judge.runner.run.RunConfig`)."""

    concurrency: int = 16
    rpm: float | None = None
    tpm: float | None = None
    max_attempts: int = 8
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    seed: int = 0
    progress: bool = False
    max_cost: float | None = None  # USD over all models: no call is started once the spend reaches it


@dataclass
class GenerateStats(CallStats):
    """A generate run's accounting: the calls' (:class:`llm.calls.retry.CallStats`), and truncated and empty
    answers (by model)."""

    truncated: Counter = field(default_factory=Counter)
    empty: Counter = field(default_factory=Counter)

    def summary(self) -> str:
        """One line for the CLI."""
        cost = "unknown (no price for this model)" if self.cost is None else f"${self.cost:.4f}"
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(self.retry_reasons.items()))
        return (f"{self.calls} generated, {self.cache_hits} cached, {self.retries} retries"
                f"{f' ({reasons})' if reasons else ''}, {self.failed} failed; tokens {self.tokens_in} in / "
                f"{self.tokens_out} out; cost {cost}; {self.wall_s:.1f} s")


@dataclass
class GenerateResult:
    """The answers (long layout, one row per item and model), the failures, and the accounting."""

    answers: pd.DataFrame
    failures: pd.DataFrame
    stats: GenerateStats

    def truncation_note(self) -> str:
        """How many answers were cut at max tokens, by model (a truncated answer loses unfairly), or ''."""
        n = sum(self.stats.truncated.values())
        if not n:
            return ""
        by = ", ".join(f"{m} {k}" for m, k in sorted(self.stats.truncated.items()))
        return (f"{n} of {len(self.answers)} answers truncated at max_tokens (finish reason length): {by}; "
                "raise max_tokens for those models, or a judge and voters will see cut answers")


def endpoint(spec: ModelSpec) -> str:
    """Which server a spec calls (rate limits are per endpoint, and it is part of the cache key)."""
    s = parse_spec(spec.spec)
    return f"{s.provider}:{s.base_url or 'default'}"


def generation_key(spec: ModelSpec, request: GenerationRequest) -> str:
    """The cache key: everything that changes the answer (endpoint, model, messages, settings)."""
    s = parse_spec(spec.spec)
    return cache_key(s.provider, s.model, "generate@" + endpoint(spec), prompt_hash(request.messages), "-",
                     request.settings())


@dataclass(frozen=True)
class _Job:
    row: int
    spec: ModelSpec
    request: GenerationRequest
    key: str


def plan_jobs(prompts: pd.DataFrame, models: Sequence[ModelSpec]) -> list[_Job]:
    """Every (prompt, model) answer a run asks for, in order; jobs with the same key are one call."""
    jobs = []
    for i, prompt in enumerate(prompts["prompt"]):
        for m in models:
            req = m.request([{"role": "user", "content": prompt}])
            jobs.append(_Job(i, m, req, generation_key(m, req)))
    return jobs


@dataclass
class _Answering:
    """One generate run's shared state: the workers answer jobs into ``results`` (``cached``: from the cache)."""

    gens: dict
    db: GenerationCache | None
    config: GenerateConfig
    stats: GenerateStats
    limiters: dict[str, RateLimiter]
    meter: SpendMeter | None
    item_ids: list
    rng: random.Random
    results: dict[str, Generation | ProviderError] = field(default_factory=dict)
    cached: set[str] = field(default_factory=set)

    async def answer(self, job: _Job) -> None:
        """A cached answer, or one call with retries (a provider error is the job's result); cached as it comes."""
        hit = self.db.get_generation(job.key) if self.db is not None else None
        if hit is not None:
            self.stats.cache_hits += 1
            self.results[job.key] = hit
            self.cached.add(job.key)
            return
        est = estimated_input_tokens(job.request) + job.request.max_tokens
        gen = self.gens[job.spec.name]
        try:
            if self.meter is not None:
                self.meter.check()
            got = await call_with_retries(lambda: gen.generate(job.request), est, self.config,
                                          self.limiters[endpoint(job.spec)], self.stats, self.rng)
        except ServerUnreachable:
            raise  # no server at the URL: every other call would be refused too; stop the run
        except ProviderError as e:
            self.results[job.key] = e
            return
        self.stats.calls += 1
        self.results[job.key] = got
        if self.meter is not None:
            self.meter.charge(got, gen)
        if self.db is not None:
            self.db.put_generation(job.key, got, model=job.spec.name, item_id=str(self.item_ids[job.row]))


async def _close_all(gens: dict) -> None:
    for g in gens.values():
        await g.aclose()


async def arun_generate(prompts: pd.DataFrame, models: Sequence[ModelSpec], config: GenerateConfig,
                        cache: GenerationCache | str | Path | None = None,
                        generators: dict[str, object] | None = None) -> GenerateResult:
    """Answer every prompt with every model; see :func:`run_generate`. ``generators`` (by model name)
    replaces the providers built from the specs (tests pass SDK clients over fakes this way)."""
    own = generators is None
    gens = generators or {m.name: make_provider(m.spec, timeout=m.timeout) for m in models}
    db = GenerationCache(cache) if isinstance(cache, str | Path) else cache
    try:
        meter = SpendMeter(list(gens.values()), config.max_cost) if config.max_cost is not None else None
    except ValueError:
        await _close_all(gens if own else {})
        raise
    stats = GenerateStats()
    run = _Answering(gens, db, config, stats, {e: RateLimiter(config.rpm, config.tpm) for e in map(endpoint, models)},
                     meter, prompts["item_id"].tolist(), random.Random(config.seed))
    jobs = plan_jobs(prompts, models)
    t0 = time.perf_counter()
    try:
        await run_pool(list({j.key: j for j in jobs}.values()), run.answer, config.concurrency,
                       progress=config.progress, unit="answer")
    finally:
        if db is not None:
            db.flush()
            if db is not cache:
                db.close()
        await _close_all(gens if own else {})
    answers, failures = answer_rows(prompts, jobs, run.results, run.cached, gens, stats)
    stats.wall_s = time.perf_counter() - t0
    return GenerateResult(answers, failures, stats)


def answer_rows(prompts: pd.DataFrame, jobs: list[_Job], results: dict, cached: set[str], gens: dict,
                stats: GenerateStats) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One row per (item, model) answered, and one per failed call (error redacted)."""
    rows, failed = [], []
    today = time.strftime("%Y-%m-%d")
    columns = {c: prompts[c].tolist() for c in ("item_id", "prompt", "category")}  # not a Series per row
    for job in jobs:
        item = {c: v[job.row] for c, v in columns.items()}
        got = results[job.key]
        if isinstance(got, ProviderError):
            stats.failed += 1
            failed.append({"item_id": item["item_id"], "model": job.spec.name, "error": redact(str(got)),
                           "kind": got.kind})
            continue
        gen = gens[job.spec.name]
        fresh = job.key not in cached
        cost = None  # unknown: no price for the model (llm.prices), or the server gave no token counts
        if gen.price is not None and got.tokens_in is not None and got.tokens_out is not None:
            cost = gen.price.cost(got.tokens_in, got.tokens_out)
        if fresh:
            stats.tokens_in += got.tokens_in or 0
            stats.tokens_out += got.tokens_out or 0
            stats.cost = None if stats.cost is None or cost is None else stats.cost + cost
        stats.truncated[job.spec.name] += int(got.truncated)
        stats.empty[job.spec.name] += int(not got.text.strip())
        rows.append({"item_id": item["item_id"], "prompt": item["prompt"], "category": item["category"],
                     "model": job.spec.name, "answer": got.text, "tokens_in": got.tokens_in,
                     "tokens_out": got.tokens_out, "latency": round(got.latency, 4), "cost": cost,
                     "finish_reason": got.finish_reason, "truncated": got.truncated, "cached": not fresh,
                     "provider": job.spec.spec, "settings": json.dumps(job.spec.settings(), sort_keys=True),
                     "date": today})
    stats.truncated, stats.empty = +stats.truncated, +stats.empty  # drop zero counts
    cols = ["item_id", "prompt", "category", "model", "answer", "tokens_in", "tokens_out", "latency", "cost",
            "finish_reason", "truncated", "cached", "provider", "settings", "date"]
    answers = pd.DataFrame(rows, columns=cols).astype({"tokens_in": "Int64", "tokens_out": "Int64"})
    return answers, pd.DataFrame(failed, columns=["item_id", "model", "error", "kind"])


def run_generate(prompts: pd.DataFrame, models: Sequence[ModelSpec], config: GenerateConfig,
                 cache: GenerationCache | str | Path | None = None) -> GenerateResult:
    """Answer every prompt (``item_id, prompt, category``) with every model spec.

    With a cache path, each answer is stored as it arrives and never generated again by a later run with
    the same model, messages and settings; failed calls are returned in ``failures`` and retried by a rerun.
    """
    return asyncio.run(arun_generate(prompts, models, config, cache))


def pairs_table(answers: pd.DataFrame) -> pd.DataFrame:
    """``judge run`` pairs from an answers table: every two models on each item, in the models' order."""
    order = {m: i for i, m in enumerate(dict.fromkeys(answers["model"]))}
    rows = []
    for (item_id, prompt), group in answers.groupby(["item_id", "prompt"], sort=False):
        g = group.sort_values("model", key=lambda s: s.map(order))
        recs = g[["model", "answer"]].to_dict("records")
        for i, x in enumerate(recs):
            for y in recs[i + 1:]:
                rows.append({"item_id": item_id, "prompt": prompt, "model_x": x["model"], "answer_x": x["answer"],
                             "model_y": y["model"], "answer_y": y["answer"]})
    return pd.DataFrame(rows, columns=["item_id", "prompt", "model_x", "answer_x", "model_y", "answer_y"])


def estimate_generate(prompts, models: Sequence, cache: str | Path | None = None) -> list[RunEstimate]:
    """One estimate per model of what ``preflab generate`` sends: the run's own jobs (identical requests once),
    cached answers left out, input at four characters a token, output at ``max_tokens`` a call; nothing is
    sent, no key is needed, and the cache is read but never created."""
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
