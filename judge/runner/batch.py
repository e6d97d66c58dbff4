"""Provider batch APIs for large runs: OpenAI Batch and Anthropic Message Batches.

:func:`run_batch` submits every call not yet in the cache, split at the API's limits (OpenAI: 50,000
requests and 200 MB per input file; Anthropic: 100,000 requests and 256 MB per batch), waits, and stores
each answer in the same SQLite cache. Request bodies come from the provider's own builder, so a batch asks
for exactly what the live path asks for (the same reasoning budget, no parameter the model refused). A
request the API refuses for a parameter teaches the provider that capability, and the refused requests go
into a second batch; an empty reply (all reasoning) is an error, never an answer. A batch that fails,
expires or is cancelled raises :class:`BatchFailed` naming it. :func:`batch_judge` then reads every verdict
from the cache; calls the batches did not answer are failed rows unless ``fallback="live"``.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from judge.runner.run import Call, RunConfig, RunResult, arun_judge, plan_calls
from judge.verdicts.pairs import Pair
from llm.calls.cache import CallCache
from llm.providers import make_provider
from llm.providers.base import (
    CUT_BY_MAX_TOKENS,
    Completion,
    JudgeRequest,
    LogprobsUnsupported,
    Provider,
    ProviderError,
    learn,
    merge_samples,
    refused_param,
    sdk_errors,
)

OPENAI_DONE = {"completed", "failed", "expired", "cancelled"}
#: (requests, bytes) per batch, from each provider's batch documentation.
LIMITS = {"openai": (50_000, 200 * 1024 * 1024), "anthropic": (100_000, 256 * 1024 * 1024)}
FALLBACKS = ("none", "live")


class BatchFailed(ProviderError):
    """A batch ended without answers (failed, expired, cancelled): the message names it and says why."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=False, kind="batch")


@dataclass(frozen=True)
class Line:
    """One batch request: its ``custom_id``, the call it answers, and which of the call's samples."""

    custom_id: str
    call: Call
    sample: int
    body: dict


@dataclass
class BatchJob:
    """A submitted batch: provider batch id and the requests it carries (by ``custom_id``)."""

    provider: str
    batch_id: str
    lines: dict[str, Line] = field(default_factory=dict)


def _sdk(provider: Provider):
    return importlib.import_module(provider.provider)


def _pending(pairs: Sequence[Pair], provider: Provider, config: RunConfig, cache: CallCache) -> list[Call]:
    sampled = config.samples > 0 or not provider.supports_logprobs
    return [c for c in plan_calls(pairs, provider, config, sampled) if cache.get(c.key) is None]


def lines_for(call: Call, provider: Provider) -> list[Line]:
    """The batch requests for one call: one line (``n`` answers in it where the model takes ``n``), or one
    line per sample (Anthropic; OpenAI models that refused ``n``). ``custom_id`` fits Anthropic's 64 chars."""
    req = call.request
    if provider.provider == "anthropic" or (req.n > 1 and provider.capabilities.get("n") is False):
        singles = [JudgeRequest(req.messages, req.prompt, req.max_tokens, req.temperature, req.top_logprobs,
                                req.logprobs, None if req.seed is None else req.seed + s, 1) for s in range(req.n)]
    else:
        singles = [req]
    build = provider.params if provider.provider == "anthropic" else provider.body
    return [Line(f"{call.key[:58]}-{s}", call, s, build(r)) for s, r in enumerate(singles)]


def chunks(lines: list[Line], provider: str, encode) -> list[list[Line]]:
    """Split requests into batches within the provider's request and byte limits (:data:`LIMITS`)."""
    max_n, max_bytes = LIMITS[provider]
    out: list[list[Line]] = [[]]
    size = 0
    for line in lines:
        n = len(encode(line))
        if out[-1] and (len(out[-1]) >= max_n or size + n > max_bytes):
            out.append([])
            size = 0
        out[-1].append(line)
        size += n
    return [c for c in out if c]


def _openai_line(line: Line) -> bytes:
    return (json.dumps({"custom_id": line.custom_id, "method": "POST", "url": "/v1/chat/completions",
                        "body": line.body}) + "\n").encode()


def _anthropic_request(line: Line) -> dict:
    return {"custom_id": line.custom_id, "params": line.body}


async def submit(provider: Provider, lines: list[Line]) -> BatchJob:
    """Submit one batch of requests (already within the limits)."""
    client = provider.client
    with sdk_errors(_sdk(provider)):
        if provider.provider == "openai":
            data = b"".join(_openai_line(x) for x in lines)
            f = await client.files.create(file=("preflab-batch.jsonl", data), purpose="batch")
            b = await client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions",
                                            completion_window="24h")
        else:
            b = await client.messages.batches.create(requests=[_anthropic_request(x) for x in lines])
    return BatchJob(provider.provider, b.id, {x.custom_id: x for x in lines})


def _why(b) -> str:
    errors = getattr(b, "errors", None)
    data = getattr(errors, "data", None) or []
    return "; ".join(f"{e.code}: {e.message}" for e in data[:3]) or "no reason given"


async def wait(provider: Provider, job: BatchJob, *, poll_s: float = 30.0, timeout_s: float = 86400.0) -> str:
    """Poll until the batch ends; ``completed``/``ended``, else :class:`BatchFailed` naming the batch."""
    client = provider.client
    deadline = time.monotonic() + timeout_s
    while True:
        with sdk_errors(_sdk(provider)):
            if job.provider == "openai":
                b = await client.batches.retrieve(job.batch_id)
                if b.status == "completed":
                    return b.status
                if b.status in OPENAI_DONE:
                    raise BatchFailed(f"OpenAI batch {job.batch_id} {b.status} ({_why(b)}); nothing was answered")
            else:
                b = await client.messages.batches.retrieve(job.batch_id)
                if b.processing_status == "ended":
                    return "ended"
        if time.monotonic() > deadline:
            raise BatchFailed(f"batch {job.batch_id} not done after {timeout_s:.0f} s; collect it later")
        await asyncio.sleep(poll_s)


async def _openai_results(provider: Provider, job: BatchJob) -> list[tuple[str, dict | None, tuple]]:
    """(custom_id, chat completion body or None, (status, message, param)) for every line of both files."""
    client = provider.client
    with sdk_errors(_sdk(provider)):
        b = await client.batches.retrieve(job.batch_id)
        texts = [(await client.files.content(fid)).text for fid in (b.output_file_id, b.error_file_id) if fid]
    out = []
    for text in texts:
        for raw in filter(None, text.splitlines()):
            row = json.loads(raw)
            resp = row.get("response") or {}
            if resp.get("status_code") == 200:
                out.append((row["custom_id"], resp["body"], (200, "", None)))
            else:
                err = (resp.get("body") or {}).get("error") or row.get("error") or {}
                err = err if isinstance(err, dict) else {"message": str(err)}
                out.append((row["custom_id"], None, (resp.get("status_code") or 0, str(err.get("message", "")),
                                                     err.get("param"))))
    return out


async def _anthropic_results(provider: Provider, job: BatchJob) -> list[tuple[str, dict | None, tuple]]:
    client = provider.client
    out = []
    with sdk_errors(_sdk(provider)):
        async for entry in await client.messages.batches.results(job.batch_id):
            result = entry.result.model_dump()
            if result["type"] == "succeeded":
                out.append((entry.custom_id, result["message"], (200, "", None)))
            else:
                err = ((result.get("error") or {}).get("error") or {})
                out.append((entry.custom_id, None, (400 if err.get("type") == "invalid_request_error" else 0,
                                                    str(err.get("message", result["type"])), None)))
    return out


def _completion(provider: Provider, body: dict) -> Completion:
    if provider.provider == "anthropic":
        return provider.completion(body)
    from llm.providers.openai import completion_from_body

    return completion_from_body(body)


async def collect(provider: Provider, config: RunConfig, cache: CallCache, job: BatchJob) -> dict[str, int]:
    """Store every call whose batch requests all succeeded; learn from refused parameters. Returns counts
    ``stored``, ``errored``, ``unknown`` and ``learnt`` (requests refused for a parameter the provider now
    leaves out or lowers: they go into the next batch)."""
    fetch = _openai_results if job.provider == "openai" else _anthropic_results
    counts = {"stored": 0, "errored": 0, "unknown": 0, "learnt": 0}
    got: dict[str, dict[int, Completion]] = {}
    calls: dict[str, Call] = {}
    for custom_id, body, (status, message, param) in await fetch(provider, job):
        line = job.lines.get(custom_id)
        if line is None:
            counts["unknown"] += 1
            continue
        try:
            if body is None:
                refusal = refused_param(status, message, param)
                if refusal and learn(provider.capabilities, refusal):
                    counts["learnt"] += 1
                    continue
                counts["errored"] += 1
                continue
            comp = _completion(provider, body)
        except ProviderError as e:
            if e.kind == CUT_BY_MAX_TOKENS and not provider.capabilities.get("reasoning"):
                provider.capabilities["reasoning"] = True  # the next batch asks for the live path's budget
                counts["learnt"] += 1
            else:
                counts["errored"] += 1  # left uncached: a later batch or run retries it
            continue
        got.setdefault(line.call.key, {})[line.sample] = comp
        calls[line.call.key] = line.call
    for key, answers in got.items():
        call = calls[key]
        need = sum(1 for x in job.lines.values() if x.call.key == key)
        if len(answers) < need:
            continue
        comp = answers[0] if need == 1 else merge_samples([answers[s] for s in sorted(answers)])
        if call.request.n > 1 and len(comp.texts) != call.request.n:
            counts["errored"] += 1
            continue
        cache.put(key, comp, provider=provider.provider, model=provider.model, rubric=config.rubric.fingerprint,
                  p_hash=call.p_hash, order=call.order,
                  params={**call.request.sampling_params(), "sample": call.sample})
        counts["stored"] += 1
    cache.flush()
    return counts


async def run_batch(pairs: Sequence[Pair], provider: Provider, config: RunConfig, cache: CallCache,
                    *, poll_s: float = 30.0, max_rounds: int = 4) -> dict:
    """Submit, wait and collect until every call is cached or nothing new was learnt (the cache then answers
    :func:`judge.runner.run.run_judge`). Capabilities learnt are saved in the cache."""
    if provider.provider not in ("openai", "anthropic"):
        raise ValueError(f"{provider.provider} has no batch API; run without --batch (judge.runner.run.run_judge)")
    provider.capabilities.update(cache.capabilities(provider.provider, provider.model))
    summary: dict = {"status": "cached", "batches": [], "stored": 0, "errored": 0, "unknown": 0}
    encode = _openai_line if provider.provider == "openai" else (
        lambda x: json.dumps(_anthropic_request(x)).encode())
    for _ in range(max_rounds):
        try:
            calls = _pending(pairs, provider, config, cache)
            lines = [x for c in calls for x in lines_for(c, provider)]
        except LogprobsUnsupported:
            continue  # learnt from the last batch: the next plan samples
        if not lines:
            break
        learnt = 0
        for part in chunks(lines, provider.provider, encode):
            job = await submit(provider, part)
            summary["batches"].append(job.batch_id)
            summary["status"] = await wait(provider, job, poll_s=poll_s)
            counts = await collect(provider, config, cache, job)
            learnt += counts.pop("learnt")
            for k, v in counts.items():
                summary[k] += v
        cache.put_capabilities(provider.provider, provider.model, provider.capabilities)
        if not learnt:
            break
        summary["errored"] = 0  # requests refused for a parameter are resubmitted; count the last round only
    return summary


class _BatchOnly:
    """A provider that answers only from the cache: a call the batches left unanswered is a failed row."""

    def __init__(self, inner: Provider, batches: list[str]) -> None:
        self.inner, self.batches = inner, batches
        self.provider, self.model = inner.provider, inner.model

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    async def complete(self, request: JudgeRequest) -> Completion:
        raise ProviderError(f"no answer from batch {', '.join(self.batches) or '(none submitted)'}; rerun with "
                            "--batch to resubmit it, or add --batch-fallback live to call it live", retryable=False,
                            kind="batch")

    async def aclose(self) -> None:
        await self.inner.aclose()


def batch_judge(pairs: Sequence[Pair], spec: str, config: RunConfig, cache_path: str | Path,
                *, poll_s: float = 30.0, fallback: str = "none") -> tuple[dict, RunResult]:
    """Batch-API run for a spec (``openai:`` or ``anthropic:``): submit, wait, collect, then read the verdicts
    from the cache with :func:`judge.runner.run.arun_judge`. ``fallback="live"`` calls live what the batches did not
    answer (and everything, when a batch failed); ``"none"`` (default) makes those failed rows."""
    if fallback not in FALLBACKS:
        raise ValueError(f"--batch-fallback {fallback!r}: use one of {', '.join(FALLBACKS)}")

    async def go() -> tuple[dict, RunResult]:
        provider = make_provider(spec, timeout=config.timeout)
        cache = CallCache(cache_path)
        try:
            try:
                summary = await run_batch(pairs, provider, config, cache, poll_s=poll_s)
            except BatchFailed as e:
                if fallback != "live":
                    raise
                print(f"warning: {e}; --batch-fallback live: calling the API live at full price", file=sys.stderr)
                summary = {"status": "failed", "batches": [], "stored": 0, "errored": 0, "unknown": 0}
            judge = provider if fallback == "live" else _BatchOnly(provider, summary["batches"])
            return summary, await arun_judge(pairs, judge, config, cache)
        finally:
            await provider.aclose()
            cache.close()

    return asyncio.run(go())
