"""The judge runner: every pair in both orders, bounded concurrency, rate limits, retries, an on-disk cache.

Calls go through a pool of ``concurrency`` workers. Each call is looked up in the SQLite cache first; a miss
waits for the per-provider rate limiter (requests and tokens per minute), then calls the provider, retrying
429/5xx/timeouts/dropped connections/malformed bodies with exponential backoff and full jitter (Brooker,
"Exponential backoff and jitter", AWS 2015), never sooner than the server's ``Retry-After``. Answers are
committed to the cache as they arrive, so a killed run restarts without re-calling anything answered.
"""

from __future__ import annotations

import asyncio
import math
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from judge.verdicts.locate import read_verdict
from judge.verdicts.pairs import Pair, by_identity
from judge.verdicts.parsing import NO_LOGPROBS, Verdict, sampled_verdict, unparsable
from judge.verdicts.provenance import run_columns, served_columns
from judge.verdicts.rubrics import Rubric
from llm.calls.cache import CallCache, cache_key, prompt_hash
from llm.calls.retry import CallStats, RateLimiter, call_with_retries, run_pool
from llm.calls.spend import SpendMeter, estimated_input_tokens
from llm.prices import Price
from llm.providers import make_provider
from llm.providers.base import (
    Completion,
    JudgeRequest,
    LogprobsUnsupported,
    Provider,
    ProviderError,
    ServerUnreachable,
)
from preflab.io import write_output
from preflab.redact import redact


@dataclass(frozen=True)
class RunConfig:
    """How to run a judge. ``samples=0`` reads logprobs; ``samples=K`` samples K text verdicts per order."""

    rubric: Rubric
    both_orders: bool = True
    samples: int = 0
    fallback_samples: int = 5  # K used when the provider has no logprobs
    sample_temperature: float = 1.0  # not sent to models that fix their sampling (they sample at their default)
    max_tokens: int | None = None  # default: the rubric's, else 3 for logprob verdicts, 16 for sampled ones
    top_logprobs: int = 20
    concurrency: int = 16
    rpm: float | None = None  # per-provider requests per minute
    tpm: float | None = None  # per-provider tokens per minute (estimated before, corrected after)
    max_attempts: int = 8
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    completions_prompt: bool = False  # send a plain prompt (base models on /v1/completions)
    timeout: float = 60.0  # per call, when the provider is built from a spec string
    seed: int = 0
    progress: bool = False
    max_cost: float | None = None  # USD: no call is started once the run's spend reaches it (llm.calls.estimate)
    price: Price | None = None  # USD per 1M tokens; None: the dated table (llm.prices), unknown stays unknown


@dataclass
class RunStats(CallStats):
    """A judge run's accounting: the calls' (:class:`llm.calls.retry.CallStats`) and its verdicts'."""

    unparsable: int = 0
    low_mass: int = 0
    method: str = "logprob"
    methods: Counter = field(default_factory=Counter)  # verdict rows per reading method (verdicts.parsing.METHODS)
    no_logprobs: int = 0  # rows that asked for logprobs, got none, and were read from the text
    price: str = "unknown"

    def summary(self) -> str:
        """One line for the CLI."""
        cost = f"${self.cost:.4f}" if self.cost is not None else f"unknown ({self.price}; pass --price in=..,out=..)"
        methods = ", ".join(f"{m} {n}" for m, n in sorted(self.methods.items())) or self.method
        return (f"{self.calls} calls, {self.cache_hits} cached, {self.retries} retries, {self.failed} failed, "
                f"{self.unparsable} unparsable, {self.low_mass} low label mass (no Brier/ECE); tokens "
                f"{self.tokens_in} in / {self.tokens_out} out; cost {cost}; {self.wall_s:.1f} s (methods: {methods})")


@dataclass
class RunResult:
    """Verdict rows (one per pair and order) and the run's accounting."""

    verdicts: pd.DataFrame
    stats: RunStats

    def write_jsonl(self, path: str | Path) -> None:
        """Write the verdicts as JSONL (``item_id, model_x, model_y, order, p_a, p_b, p_tie, verdict, ...``);
        ``-`` is standard output."""
        write_output(path, self.verdicts.to_json(orient="records", lines=True, force_ascii=False))


@dataclass(frozen=True)
class Call:
    pair: int
    order: str
    sample: int
    request: JudgeRequest
    key: str
    p_hash: str


def plan_calls(pairs: Sequence[Pair], provider: Provider, config: RunConfig, sampled: bool) -> list[Call]:
    """Every call the run needs: pairs x orders x samples, each with its cache key."""
    orders = ("xy", "yx") if config.both_orders else ("xy",)
    k = max(config.samples, 1) if config.samples else (config.fallback_samples if sampled else 1)
    max_tokens = config.max_tokens or config.rubric.max_tokens or (16 if sampled else 3)
    # K samples are one request for n answers (one API call with `n` where the API takes it)
    temperature = (config.sample_temperature if getattr(provider, "sets_temperature", True) else None) if sampled \
        else (0.0 if getattr(provider, "sets_temperature", True) else None)
    calls = []
    rubric_fp = config.rubric.fingerprint
    for i, pair in enumerate(pairs):
        for order in orders:
            _, ans_a, _, ans_b = pair.slots(order)
            msgs = tuple(config.rubric.messages(pair.prompt, ans_a, ans_b, pair.reference))
            prompt = (config.rubric.completion_prompt(pair.prompt, ans_a, ans_b, pair.reference)
                      if config.completions_prompt else None)
            p_hash = prompt_hash(msgs, prompt)
            req = JudgeRequest(msgs, prompt, max_tokens, temperature, config.top_logprobs,
                               logprobs=not sampled, seed=config.seed, n=k if sampled else 1)
            params = {**req.sampling_params(), "sample": 0}
            key = cache_key(provider.provider, provider.model, rubric_fp, p_hash, order, params)
            calls.append(Call(i, order, 0, req, key, p_hash))
    return calls


async def _execute(calls: list[Call], provider: Provider, config: RunConfig, cache: CallCache | None,
                   stats: RunStats, meter: SpendMeter | None = None) -> dict[str, Completion | Exception]:
    """Run the calls through ``concurrency`` workers; returns completion or exception per cache key."""
    results: dict[str, Completion | Exception] = {}
    limiter = RateLimiter(config.rpm, config.tpm)
    rng = random.Random(config.seed)
    rubric = config.rubric.fingerprint

    async def complete(c: Call) -> None:
        hit = cache.get(c.key) if cache is not None else None
        if hit is not None:
            stats.cache_hits += 1
            results[c.key] = replace(hit, raw={**hit.raw, "cached": True})
            return
        try:
            if meter is not None:
                meter.check()
            est = (estimated_input_tokens(c.request) + c.request.max_tokens) * c.request.n
            comp = await call_with_retries(lambda: provider.complete(c.request), est, config, limiter, stats, rng)
            if meter is not None:
                meter.charge(comp)
            stats.calls += 1
            stats.tokens_in += comp.tokens_in
            stats.tokens_out += comp.tokens_out
            if cache is not None:
                cache.put(c.key, comp, provider=provider.provider, model=provider.model, rubric=rubric,
                          p_hash=c.p_hash, order=c.order, params={**c.request.sampling_params(), "sample": c.sample})
            results[c.key] = comp
        except ServerUnreachable:
            raise  # no server at the URL: every other call would be refused too; stop the run
        except ProviderError as e:
            results[c.key] = e

    unique = list({c.key: c for c in calls}.values())  # identical requests (duplicate pairs) are made once
    try:
        await run_pool(unique, complete, config.concurrency, progress=config.progress, unit="call")
    finally:
        if cache is not None:
            cache.flush()
    return results


def _verdict(comps: list[Completion], rubric: Rubric, sampled: bool) -> Verdict:
    if sampled:
        return sampled_verdict([read_verdict(t, None, rubric.labels, rubric.all_labels, rubric.case_sensitive,
                                             rubric.verdict_marker) for c in comps for t in c.texts], rubric.outcomes)
    comp = comps[0]
    return read_verdict(comp.text, comp.tokens, rubric.labels, rubric.all_labels, rubric.case_sensitive,
                        rubric.verdict_marker)


def verdict_rows(pairs: Sequence[Pair], calls: list[Call], results: dict, provider: Provider, rubric: Rubric,
                 sampled: bool, stats: RunStats) -> pd.DataFrame:
    """One row per (pair, order): slot and identity probabilities, verdict, mass, tokens, cost, latency."""
    groups: dict[tuple[int, str], list[Call]] = {}
    for c in calls:
        groups.setdefault((c.pair, c.order), []).append(c)
    rows = []
    for (i, order), cs in groups.items():
        pair = pairs[i]
        model_a, _, model_b, _ = pair.slots(order)
        got = [results[c.key] for c in cs]
        errors = [str(g) for g in got if isinstance(g, Exception)]
        kinds = [getattr(g, "kind", type(g).__name__) for g in got if isinstance(g, Exception)]
        comps = [g for g in got if isinstance(g, Completion)]
        if errors:
            stats.failed += 1
            v = unparsable("sampled" if sampled else "logprob-first-token", error=errors[0])
        else:
            v = _verdict(comps, rubric, sampled)
            stats.methods[v.method] += 1
            stats.no_logprobs += int(not sampled and v.extra.get("logprobs") == "none returned")
        if v.parsable and v.method != "text":
            p_a, p_b, p_tie = v.probs.get("A", 0.0), v.probs.get("B", 0.0), v.probs.get("tie", 0.0)
        else:  # a written verdict makes no probability claim
            p_a = p_b = p_tie = math.nan
            stats.unparsable += 0 if errors or v.parsable else 1
        stats.low_mass += int(v.parsable and v.low_mass)
        p_x, p_y = by_identity(order, p_a, p_b)
        t_in, t_out = sum(c.tokens_in for c in comps), sum(c.tokens_out for c in comps)
        fresh = [c for c in comps if not c.raw.get("cached")]
        fresh_in, fresh_out = sum(c.tokens_in for c in fresh), sum(c.tokens_out for c in fresh)
        unpriced = math.nan if fresh_in + fresh_out else 0.0
        cost = provider.price.cost(fresh_in, fresh_out) if provider.price else unpriced
        stats.cost = None if stats.cost is None or math.isnan(cost) else stats.cost + cost
        winner = {"A": model_a, "B": model_b, "tie": "tie"}.get(v.label or "", None)
        rows.append({
            "item_id": pair.item_id, "model_x": pair.model_x, "model_y": pair.model_y, "order": order,
            "first": model_a, "p_a": p_a, "p_b": p_b, "p_tie": p_tie, "verdict": v.label,
            "label_mass": v.label_mass,
            "raw": ([redact(t) for t in comps[0].texts] if sampled else redact(comps[0].text)) if comps else None,
            "tokens": t_in + t_out, "cost": cost, "latency": sum(c.latency for c in comps),
            "p_x": p_x, "p_y": p_y, "winner": winner, "method": v.method, "bound": v.bound,
            "low_mass": v.low_mass, "samples": sum(c.request.n for c in cs), "cached": len(fresh) == 0 and bool(comps),
            "error": redact(errors[0]) if errors else None,
            "error_kind": kinds[0] if kinds else None,  # ProviderError.kind: what the CLI's exit rule reads
            "ci": v.extra.get("ci") if sampled else None,
            **served_columns(c.raw for c in comps),
        })
    return pd.DataFrame(rows)


def open_provider(provider: Provider | str, config: RunConfig) -> tuple[Provider, RunConfig, bool]:
    """(provider, config, whether we built it): a spec string becomes a provider; a base model served on
    ``/v1/completions`` gets the plain-prompt config."""
    own = isinstance(provider, str)
    prov: Provider = make_provider(provider, timeout=config.timeout) if isinstance(provider, str) else provider
    if own and getattr(prov, "completions", False):
        config = replace(config, completions_prompt=True)
    return prov, config, own


async def arun_judge(pairs: Sequence[Pair], provider: Provider | str, config: RunConfig,
                     cache: CallCache | str | Path | None = None) -> RunResult:
    """Judge every pair (both orders unless ``config.both_orders`` is off); see :func:`run_judge`."""
    prov, config, own = open_provider(provider, config)
    db = CallCache(cache) if isinstance(cache, str | Path) else cache
    if config.price is not None:
        prov.price = config.price
    caps = getattr(prov, "capabilities", None)
    if db is not None and caps is not None:
        caps.update(db.capabilities(prov.provider, prov.model))
    learnt = dict(caps or {})
    t0 = time.perf_counter()
    try:
        sampled = config.samples > 0 or not prov.supports_logprobs
        if not prov.supports_logprobs and config.samples == 0:
            print(f"note: {prov.provider}:{prov.model} gives no logprobs; using {config.fallback_samples} "
                  f"sampled verdicts per order (labelled 'sampled', {_sampling(prov, config)})", file=sys.stderr)
        stats = RunStats(method="sampled" if sampled else "logprob")
        meter = SpendMeter(prov, config.max_cost)
        calls = plan_calls(pairs, prov, config, sampled)
        results = await _execute(calls, prov, config, db, stats, meter)
        if not sampled and any(isinstance(r, LogprobsUnsupported) for r in results.values()):
            print(f"note: {prov.model} refused logprobs; rerunning with {config.fallback_samples} sampled "
                  f"verdicts per order (labelled 'sampled', {_sampling(prov, config)})", file=sys.stderr)
            sampled, stats = True, RunStats(method="sampled", cache_hits=stats.cache_hits, calls=stats.calls)
            calls = plan_calls(pairs, prov, config, sampled)
            results = await _execute(calls, prov, config, db, stats, meter)
        stats.price = prov.price.label() if prov.price else f"no price known for {prov.model}"
        df = verdict_rows(pairs, calls, results, prov, config.rubric, sampled, stats)
        # the settings the judge card's checklist asks for, kept with every verdict
        sampling = {k: v for k, v in calls[0].request.sampling_params().items() if k != "temperature"} if calls else {}
        for name, value in run_columns(f"{prov.provider}:{prov.model}", config.rubric, sampling).items():
            df[name] = value
        temperature = calls[0].request.temperature if calls else None
        df["temperature"] = "model default" if temperature is None else temperature
        df["price"] = stats.price
        df["date"] = time.strftime("%Y-%m-%d")
        _warn_no_logprobs(stats, prov)
    finally:
        if db is not None and caps is not None and caps != learnt:
            db.put_capabilities(prov.provider, prov.model, caps)
        if own:
            await prov.aclose()
        if db is not None and db is not cache:
            db.close()
    stats.wall_s = time.perf_counter() - t0
    return RunResult(df, stats)


def _sampling(prov: Provider, config: RunConfig) -> str:
    if getattr(prov, "sets_temperature", True):
        return f"temperature {config.sample_temperature:g}"
    return "at the model's default sampling (it takes no temperature)"


def _warn_no_logprobs(stats: RunStats, prov: Provider) -> None:
    if stats.no_logprobs:
        print(f"WARNING: {NO_LOGPROBS} for {stats.no_logprobs} verdict(s) of {prov.provider}:{prov.model}; "
              "they were read from the text (method 'text', no probability; excluded from Brier/ECE). Use a "
              "server that returns logprobs, or --samples K for sampled verdict shares.", file=sys.stderr)


def run_judge(pairs: Sequence[Pair], provider: Provider | str, config: RunConfig,
              cache: CallCache | str | Path | None = None) -> RunResult:
    """Judge pairs with a provider (or a spec string such as ``local:http://127.0.0.1:8080/v1#smollm2``).

    Returns one verdict row per pair and order, and the run's token/cost/retry accounting. With a cache
    path, answered calls are stored as they arrive and never re-called by a later run.
    """
    return asyncio.run(arun_judge(pairs, provider, config, cache))


def failure_summary(verdicts: pd.DataFrame, top: int = 3) -> str:
    """How many verdicts failed after retries and with which errors (most common first), in one line."""
    errors = verdicts["error"].dropna() if "error" in verdicts else pd.Series(dtype=object)
    if errors.empty:
        return ""
    counts = errors.map(lambda e: str(e)[:120]).value_counts()
    shown = "; ".join(f"{n} x {msg}" for msg, n in counts.head(top).items())
    more = f"; {len(counts) - top} other error(s)" if len(counts) > top else ""
    return f"{len(errors)} of {len(verdicts)} verdicts failed after retries: {shown}{more}"
