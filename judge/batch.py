"""Provider batch APIs for large runs: OpenAI Batch and Anthropic Message Batches.

``submit`` builds one batch of every call not yet in the cache (``custom_id`` = the cache key), ``wait``
polls until the provider says it ended, ``collect`` stores each answer in the same SQLite cache. A normal
:func:`judge.run.run_judge` afterwards reads every verdict from the cache without calling the API.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from judge.cache import CallCache
from judge.pairs import Pair
from judge.providers import make_provider
from judge.providers.base import Completion, Provider, logprob_content
from judge.run import Call, RunConfig, RunResult, arun_judge, plan_calls

OPENAI_DONE = {"completed", "failed", "expired", "cancelled"}


@dataclass
class BatchJob:
    """A submitted batch: provider batch id and the calls it carries (by cache key)."""

    provider: str
    batch_id: str
    keys: list[str]


def _pending(pairs: Sequence[Pair], provider: Provider, config: RunConfig, cache: CallCache) -> list[Call]:
    sampled = config.samples > 0 or not provider.supports_logprobs
    return [c for c in plan_calls(pairs, provider, config, sampled) if cache.get(c.key) is None]


def openai_line(call: Call, model: str) -> dict:
    """One OpenAI Batch input line for a call."""
    req = call.request
    body = {"model": model, "messages": list(req.messages), "max_completion_tokens": req.max_tokens,
            "temperature": req.temperature}
    if req.seed is not None:
        body["seed"] = req.seed
    if req.logprobs:
        body.update(logprobs=True, top_logprobs=min(req.top_logprobs, 20))
    return {"custom_id": call.key, "method": "POST", "url": "/v1/chat/completions", "body": body}


def anthropic_request(call: Call, model: str) -> dict:
    """One Anthropic Message Batches request for a call."""
    system = "\n\n".join(m["content"] for m in call.request.messages if m["role"] == "system")
    params = {"model": model, "max_tokens": call.request.max_tokens, "temperature": call.request.temperature,
              "messages": [m for m in call.request.messages if m["role"] != "system"]}
    if system:
        params["system"] = system
    return {"custom_id": call.key, "params": params}


async def submit(pairs: Sequence[Pair], provider: Provider, config: RunConfig, cache: CallCache) -> BatchJob | None:
    """Submit every uncached call as one provider batch; None when everything is cached already."""
    if provider.provider not in ("openai", "anthropic"):
        raise ValueError(f"{provider.provider} has no batch API; run without --batch (judge.run.run_judge)")
    calls = _pending(pairs, provider, config, cache)
    if not calls:
        return None
    client = provider._client  # the provider's SDK client: same keys, base URL and transport
    if provider.provider == "openai":
        data = "".join(json.dumps(openai_line(c, provider.model)) + "\n" for c in calls).encode()
        f = await client.files.create(file=("preflab-batch.jsonl", data), purpose="batch")
        b = await client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h")
    else:
        b = await client.messages.batches.create(requests=[anthropic_request(c, provider.model) for c in calls])
    return BatchJob(provider.provider, b.id, [c.key for c in calls])


async def wait(provider: Provider, job: BatchJob, *, poll_s: float = 30.0, timeout_s: float = 86400.0) -> str:
    """Poll until the batch ends; returns the final status (``completed``/``ended``/``failed``/...)."""
    client = provider._client
    deadline = time.monotonic() + timeout_s
    while True:
        if job.provider == "openai":
            b = await client.batches.retrieve(job.batch_id)
            if b.status in OPENAI_DONE:
                return b.status
        else:
            b = await client.messages.batches.retrieve(job.batch_id)
            if b.processing_status == "ended":
                return "ended"
        if time.monotonic() > deadline:
            raise TimeoutError(f"batch {job.batch_id} not done after {timeout_s:.0f} s; collect it later")
        await asyncio.sleep(poll_s)


async def collect(pairs: Sequence[Pair], provider: Provider, config: RunConfig, cache: CallCache,
                  job: BatchJob) -> dict[str, int]:
    """Store every successful batch answer in the cache; returns counts ``stored``, ``errored``, ``unknown``."""
    calls = {c.key: c for c in plan_calls(pairs, provider, config, config.samples > 0 or not provider.supports_logprobs)}
    client = provider._client
    counts = {"stored": 0, "errored": 0, "unknown": 0}
    answers: list[tuple[str, Completion | None]] = []
    if job.provider == "openai":
        b = await client.batches.retrieve(job.batch_id)
        if b.output_file_id:
            text = (await client.files.content(b.output_file_id)).text
            for line in filter(None, text.splitlines()):
                row = json.loads(line)
                resp = row.get("response") or {}
                if resp.get("status_code") != 200:
                    answers.append((row["custom_id"], None))
                    continue
                body = resp["body"]
                choice, usage = body["choices"][0], body.get("usage") or {}
                answers.append((row["custom_id"], Completion(
                    choice["message"].get("content") or "", logprob_content(choice.get("logprobs")),
                    int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))))
    else:
        async for entry in await client.messages.batches.results(job.batch_id):
            if entry.result.type != "succeeded":
                answers.append((entry.custom_id, None))
                continue
            msg = entry.result.message
            text = "".join(getattr(b, "text", "") for b in msg.content)
            answers.append((entry.custom_id, Completion(text, None, msg.usage.input_tokens, msg.usage.output_tokens)))
    for key, comp in answers:
        call = calls.get(key)
        if call is None:
            counts["unknown"] += 1
        elif comp is None:
            counts["errored"] += 1  # left uncached: a later run or batch retries it
        else:
            cache.put(key, comp, provider=provider.provider, model=provider.model,
                      rubric=config.rubric.fingerprint, p_hash=call.p_hash, order=call.order,
                      params={**call.request.sampling_params(), "sample": call.sample})
            counts["stored"] += 1
    return counts


async def run_batch(pairs: Sequence[Pair], provider: Provider, config: RunConfig, cache: CallCache,
                    *, poll_s: float = 30.0) -> dict[str, int | str]:
    """Submit, wait and collect in one go (the cache then answers :func:`judge.run.run_judge`)."""
    job = await submit(pairs, provider, config, cache)
    if job is None:
        return {"status": "cached", "stored": 0, "errored": 0, "unknown": 0}
    status = await wait(provider, job, poll_s=poll_s)
    return {"status": status, "batch_id": job.batch_id, **await collect(pairs, provider, config, cache, job)}


def batch_judge(pairs: Sequence[Pair], spec: str, config: RunConfig, cache_path: str | Path,
                *, poll_s: float = 30.0) -> tuple[dict, RunResult]:
    """Batch-API run for a spec (``openai:`` or ``anthropic:``): submit, wait, collect, then read the verdicts
    from the cache with :func:`judge.run.arun_judge` (which calls the API only for answers the batch lost)."""

    async def go() -> tuple[dict, RunResult]:
        provider = make_provider(spec, timeout=config.timeout)
        cache = CallCache(cache_path)
        try:
            summary = await run_batch(pairs, provider, config, cache, poll_s=poll_s)
            return summary, await arun_judge(pairs, provider, config, cache)
        finally:
            await provider.aclose()
            cache.close()

    return asyncio.run(go())
