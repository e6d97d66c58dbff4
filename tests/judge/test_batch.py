"""Batch APIs at the HTTP transport level: OpenAI Batch and Anthropic Message Batches through their SDKs."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from judge.runner.batch import run_batch
from judge.runner.run import RunConfig, arun_judge
from judge.verdicts.pairs import Pair
from judge.verdicts.rubrics import BUILTIN
from llm.calls.cache import CallCache
from llm.providers.anthropic import AnthropicProvider
from llm.providers.openai import OpenAIProvider

PAIRS = [Pair(f"q{i}", f"prompt {i}", "mx", f"x{i}", "my", f"y{i}") for i in range(3)]


def chat_body(token: str) -> dict:
    tops = [{"token": token, "logprob": -0.1, "bytes": None}, {"token": "B" if token == "A" else "A",
                                                                "logprob": -2.4, "bytes": None}]
    return {"id": "c", "object": "chat.completion", "created": 0, "model": "gpt-4.1-mini",
            "choices": [{"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": token},
                         "logprobs": {"content": [{"token": token, "logprob": -0.1, "bytes": None,
                                                   "top_logprobs": tops}]}}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 1, "total_tokens": 51}}


def test_openai_batch_submit_poll_collect_then_run_from_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    state = {"polls": 0, "input": None, "direct_calls": 0}

    def batch_obj(status):
        return {"id": "batch_1", "object": "batch", "endpoint": "/v1/chat/completions", "input_file_id": "file_in",
                "completion_window": "24h", "status": status, "created_at": 0,
                "output_file_id": "file_out" if status == "completed" else None}

    def handler(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/v1/files" and request.method == "POST":
            state["input"] = request.content
            return httpx.Response(200, json={"id": "file_in", "object": "file", "bytes": 1, "created_at": 0,
                                             "filename": "preflab-batch.jsonl", "purpose": "batch",
                                             "status": "processed"})
        if path == "/v1/batches" and request.method == "POST":
            assert json.loads(request.content)["input_file_id"] == "file_in"
            return httpx.Response(200, json=batch_obj("validating"))
        if path == "/v1/batches/batch_1":
            state["polls"] += 1
            return httpx.Response(200, json=batch_obj("completed" if state["polls"] >= 3 else "in_progress"))
        if path == "/v1/files/file_out/content":
            lines = [ln for ln in state["input"].decode("utf-8", "replace").splitlines() if '"custom_id"' in ln]
            out = []
            for i, ln in enumerate(lines):
                cid = json.loads(ln)["custom_id"]
                resp = ({"status_code": 500, "body": {"error": "x"}} if i == 0 else
                        {"status_code": 200, "body": chat_body("A" if i % 2 else "B")})
                out.append(json.dumps({"id": f"r{i}", "custom_id": cid, "response": resp, "error": None}))
            return httpx.Response(200, text="\n".join(out))
        if path == "/v1/chat/completions":  # the later normal run re-calls only what the batch lost
            state["direct_calls"] += 1
            return httpx.Response(200, json=chat_body("A"))
        return httpx.Response(404, json={"error": {"message": path}})

    cache = CallCache(tmp_path / "c.sqlite")

    async def go():
        prov = OpenAIProvider("gpt-4.1-mini", http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)))
        try:
            config = RunConfig(BUILTIN["ab"])
            summary = await run_batch(PAIRS, prov, config, cache, poll_s=0.0)
            result = await arun_judge(PAIRS, prov, config, cache)
            return summary, result
        finally:
            await prov.aclose()

    summary, result = asyncio.run(go())
    # the input file: one JSONL line per uncached call, custom_id = cache key, logprobs requested
    parts = [json.loads(ln) for ln in state["input"].decode("utf-8", "replace").splitlines() if '"custom_id"' in ln]
    assert len(parts) == 6 and all(p["body"]["logprobs"] and p["url"] == "/v1/chat/completions" for p in parts)
    assert summary == {"status": "completed", "batches": ["batch_1"], "stored": 5, "errored": 1, "unknown": 0}
    assert state["polls"] >= 3
    # the later normal run (given the provider itself: a live fallback) calls only what the batch lost
    assert result.stats.cache_hits == 5 and result.stats.calls == 1 and state["direct_calls"] == 1
    assert len(result.verdicts) == 6 and result.verdicts["p_a"].notna().all()


def test_anthropic_message_batches(monkeypatch, tmp_path):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    from anthropic import _base_client

    hx = getattr(_base_client, "httpx2", None) or _base_client.httpx  # the SDK's own HTTP package
    state = {"polls": 0, "requests": None}

    def batch_obj(ended: bool) -> dict:
        return {"id": "msgbatch_1", "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
                "request_counts": {"processing": 0, "succeeded": 4, "errored": 0, "canceled": 0, "expired": 0},
                "created_at": "2025-01-01T00:00:00Z", "expires_at": "2025-01-02T00:00:00Z", "ended_at": None,
                "cancel_initiated_at": None, "archived_at": None,
                "results_url": "https://api.anthropic.com/v1/messages/batches/msgbatch_1/results" if ended else None}

    def handler(request):
        path = request.url.path
        if path == "/v1/messages/batches" and request.method == "POST":
            state["requests"] = json.loads(request.content)["requests"]
            return hx.Response(200, json=batch_obj(False))
        if path == "/v1/messages/batches/msgbatch_1":
            state["polls"] += 1
            return hx.Response(200, json=batch_obj(state["polls"] >= 2))
        if path.endswith("/results"):
            lines = []
            for i, r in enumerate(state["requests"]):
                msg = {"id": f"m{i}", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
                       "content": [{"type": "text", "text": "[[A]]" if i % 3 else "[[B]]"}], "stop_reason": "end_turn",
                       "stop_sequence": None, "usage": {"input_tokens": 80, "output_tokens": 4}}
                lines.append(json.dumps({"custom_id": r["custom_id"], "result": {"type": "succeeded", "message": msg}}))
            return hx.Response(200, text="\n".join(lines), headers={"content-type": "application/binary"})
        return hx.Response(404, json={"type": "error", "error": {"type": "not_found", "message": path}})

    cache = CallCache(tmp_path / "c.sqlite")

    async def go():
        prov = AnthropicProvider("claude-haiku-4-5", http_client=hx.AsyncClient(transport=hx.MockTransport(handler)))
        try:
            config = RunConfig(BUILTIN["abt"], samples=3)
            summary = await run_batch(PAIRS[:2], prov, config, cache, poll_s=0.0)
            return summary, await arun_judge(PAIRS[:2], prov, config, cache)
        finally:
            await prov.aclose()

    summary, result = asyncio.run(go())
    reqs = state["requests"]
    assert len(reqs) == 2 * 2 * 3  # pairs x orders x samples
    # API version 2026-10-21: no sampling parameter in any batch request
    assert all(not {"temperature", "top_p", "top_k"} & set(r["params"]) and "system" in r["params"] for r in reqs)
    # 12 batch requests answer 4 calls (pair x order) of 3 samples each
    assert summary["status"] == "ended" and summary["stored"] == 4
    assert result.stats.calls == 0 and result.stats.cache_hits == 4 and (result.verdicts["samples"] == 3).all()
    assert (result.verdicts["method"] == "sampled").all()
    assert result.verdicts["p_a"].tolist() == pytest.approx([2 / 3] * 4)
