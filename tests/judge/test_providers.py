"""Providers through their real client code: the official SDKs over httpx.MockTransport, httpx for local servers."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from judge.runner.run import RunConfig, arun_judge
from judge.verdicts.pairs import Pair
from judge.verdicts.rubrics import BUILTIN
from llm.prices import price_for
from llm.providers.anthropic import AnthropicProvider
from llm.providers.base import JudgeRequest, LogprobsUnsupported, ProviderError, parse_spec
from llm.providers.compatible import CompatibleProvider
from llm.providers.openai import OpenAIProvider
from tests.judge.fault_server import Faults, FaultServer

SECRET = "sk-test-not-a-real-key-0123456789"
REQ = JudgeRequest(tuple(BUILTIN["abt"].messages("2+2?", "4", "5")))


def openai_body(top: dict[str, float]) -> dict:
    best = max(top, key=top.__getitem__)
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": "gpt-4.1-mini",
            "choices": [{"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": best},
                         "logprobs": {"content": [{"token": best, "logprob": top[best], "bytes": None,
                                                   "top_logprobs": [{"token": t, "logprob": lp, "bytes": None}
                                                                    for t, lp in top.items()]}]}}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 1, "total_tokens": 121}}


@pytest.mark.parametrize(("spec", "expected"), [
    ("openai:gpt-4.1-mini", ("openai", "gpt-4.1-mini", None, False)),
    ("anthropic:claude-haiku-4-5", ("anthropic", "claude-haiku-4-5", None, False)),
    ("local:http://127.0.0.1:8080/v1#smollm2", ("local", "smollm2", "http://127.0.0.1:8080/v1", False)),
    ("local+completions:http://h:1/v1/#base", ("local", "base", "http://h:1/v1", True)),
])
def test_parse_spec(spec, expected):
    s = parse_spec(spec)
    assert (s.provider, s.model, s.base_url, s.completions) == expected


@pytest.mark.parametrize("spec", ["gpt-4", "mystery:model", "local:http://x:1/v1", "local:nourl#m"])
def test_parse_spec_errors_say_what_to_write(spec):
    with pytest.raises(ValueError, match="judge spec"):
        parse_spec(spec)


def test_keys_only_from_environment(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ProviderError, match="OPENAI_API_KEY"):
        OpenAIProvider("gpt-4.1-mini")


def test_openai_sdk_sends_logprob_request_and_parses(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request, json.loads(request.content)))
        return httpx.Response(200, json=openai_body({"B": -0.2, "A": -1.8, "C": -4.0, "The": -5.0}))

    async def go():
        prov = OpenAIProvider("gpt-4.1-mini", http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)))
        try:
            return await prov.complete(REQ)
        finally:
            await prov.aclose()

    comp = asyncio.run(go())
    request, body = seen[0]
    assert request.url.path.endswith("/chat/completions")
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert body["logprobs"] is True and body["top_logprobs"] == 20 and body["temperature"] == 0.0
    assert comp.text == "B" and comp.tokens_in == 120
    assert [t["token"] for t in comp.tokens[0]["top_logprobs"]] == ["B", "A", "C", "The"]


def test_openai_429_retry_after_and_logprob_refusal(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)

    def handler(request: httpx.Request) -> httpx.Response:
        if json.loads(request.content)["model"] == "busy":
            return httpx.Response(429, headers={"retry-after": "7"}, json={"error": {"message": "slow down"}})
        return httpx.Response(400, json={"error": {"message": "logprobs are not supported with this model",
                                                   "type": "invalid_request_error"}})

    async def call(model):
        prov = OpenAIProvider(model, http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)))
        try:
            return await prov.complete(REQ)
        finally:
            await prov.aclose()

    with pytest.raises(ProviderError) as e:
        asyncio.run(call("busy"))
    assert e.value.retryable and e.value.status == 429 and e.value.retry_after == 7.0
    with pytest.raises(LogprobsUnsupported, match="K-sample"):
        asyncio.run(call("some-new-model"))
    # capabilities come from the API's answers, not from the model's name
    assert OpenAIProvider("o3-mini").supports_logprobs and OpenAIProvider("gpt-6-luna").supports_logprobs


def judge_one_pair(model: str, handler, config: RunConfig):  # noqa: ANN001, ANN201
    """The run's result on one pair, judged by the OpenAI SDK's ``model`` against a mock transport."""
    async def go():  # noqa: ANN202
        prov = OpenAIProvider(model, http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)))
        try:
            return await arun_judge([Pair("1", "q", "x", "ax", "y", "ay")], prov, config)
        finally:
            await prov.aclose()

    return asyncio.run(go())


def test_reasoning_model_sampled_with_room_to_think(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    bodies = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if body.get("logprobs"):
            return httpx.Response(403, json={"error": {"message": "You are not allowed to request logprobs from "
                                                                  "this model", "type": "invalid_request_error",
                                                       "param": None, "code": None}})
        bodies.append(body)
        return httpx.Response(200, json=openai_body({"A": -0.1}) | {"choices": [{
            "index": i, "finish_reason": "stop", "logprobs": None,
            "message": {"role": "assistant", "content": "B"}} for i in range(body.get("n", 1))]})

    res = judge_one_pair("o4-mini", handler, RunConfig(BUILTIN["abt"], fallback_samples=3, both_orders=False))
    # one request for the 3 samples (n = 3: one input charge), with room to reason
    assert len(bodies) == 1 and bodies[0]["n"] == 3 and "logprobs" not in bodies[0]
    assert res.verdicts.loc[0, "method"] == "sampled" and res.verdicts.loc[0, "p_b"] == 1.0
    assert res.verdicts.loc[0, "samples"] == 3


def test_openai_refusing_logprobs_falls_back_to_sampled_verdicts(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    temps = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if body.get("logprobs"):
            return httpx.Response(400, json={"error": {"message": "logprobs not supported"}})
        temps.append(body["temperature"])
        return httpx.Response(200, json=openai_body({"A": -0.1}) | {"choices": [{
            "index": 0, "finish_reason": "stop", "logprobs": None,
            "message": {"role": "assistant", "content": "Final verdict: [[A]]"}}]})

    res = judge_one_pair("future-model", handler, RunConfig(BUILTIN["abt"], fallback_samples=4))
    assert res.stats.method == "sampled" and len(temps) == 8 and set(temps) == {1.0}
    assert list(res.verdicts["method"]) == ["sampled", "sampled"]
    assert list(res.verdicts["p_a"]) == [1.0, 1.0] and list(res.verdicts["samples"]) == [4, 4]


def test_anthropic_sdk_k_sample_fallback(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    bodies = []
    answers = iter(["[[A]]", "B", "Verdict: A", "I refuse", "A", "[[B]]"] * 2)

    from anthropic import _base_client

    # httpx, or httpx2 in recent SDK releases: mock at the SDK's own transport
    sdk_httpx = getattr(_base_client, "httpx2", None) or _base_client.httpx

    def handler(request):
        assert request.url.path == "/v1/messages"
        assert SECRET in (request.headers.get("x-api-key", ""), request.headers.get("authorization", "")[7:])
        bodies.append(json.loads(request.content))
        return sdk_httpx.Response(200, json={
            "id": "m", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
            "content": [{"type": "text", "text": next(answers)}], "stop_reason": "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 200, "output_tokens": 3}})

    async def go():
        client = sdk_httpx.AsyncClient(transport=sdk_httpx.MockTransport(handler))
        prov = AnthropicProvider("claude-haiku-4-5", http_client=client)
        try:
            return await arun_judge([Pair("1", "q", "x", "ax", "y", "ay")], prov,
                                    RunConfig(BUILTIN["abt"], samples=6, concurrency=1, max_attempts=1))
        finally:
            await prov.aclose()

    res = asyncio.run(go())
    assert len(bodies) == 12
    # API version 2026-10-21: no sampling parameter in any request, and room for thinking
    assert all("system" in b and b["messages"][0]["role"] == "user" and not {"temperature", "top_p", "top_k"} & set(b)
               and b["max_tokens"] >= 2048 for b in bodies)
    row = res.verdicts.set_index("order").loc["xy"]
    assert row["method"] == "sampled" and row["samples"] == 6
    assert row["p_a"] == pytest.approx(3 / 5) and row["p_b"] == pytest.approx(2 / 5)  # 1 unparsable of 6
    lo, hi = row["ci"]["A"]
    assert lo < 0.6 < hi
    price = price_for("claude-haiku-4-5")
    assert res.stats.cost == pytest.approx(price.cost(12 * 200, 12 * 3))


def test_compatible_chat_and_completions_endpoints():
    with FaultServer(Faults()) as srv:
        async def go(completions):
            prov = CompatibleProvider("m", srv.url, completions=completions)
            try:
                req = REQ if not completions else JudgeRequest(prompt="Judge: ... Verdict:")
                return await prov.complete(req)
            finally:
                await prov.aclose()

        chat, legacy = asyncio.run(go(False)), asyncio.run(go(True))
    for comp in (chat, legacy):
        labels = {t["token"] for t in comp.tokens[0]["top_logprobs"]}
        assert labels == {"A", "B", "C", "The"}
        assert comp.tokens_in == 100


def test_api_key_never_written_to_cache_or_output(monkeypatch, tmp_path):
    monkeypatch.setenv("PREFLAB_LOCAL_API_KEY", SECRET)
    auth = []
    with FaultServer(Faults()) as srv:
        async def go():
            prov = CompatibleProvider("m", srv.url)
            auth.append(prov._headers["authorization"])
            try:
                return await arun_judge([Pair("1", "q", "x", "ax", "y", "ay")], prov, RunConfig(BUILTIN["ab"]),
                                        tmp_path / "c.sqlite")
            finally:
                await prov.aclose()

        res = asyncio.run(go())
    res.write_jsonl(tmp_path / "v.jsonl")
    assert auth == [f"Bearer {SECRET}"]
    for f in tmp_path.iterdir():
        assert SECRET.encode() not in f.read_bytes(), f
