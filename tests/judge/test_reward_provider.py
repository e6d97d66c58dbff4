"""The reward-model provider (vLLM's /pooling) through a contract fake over httpx, the scoring runner's
cache and retries, and ``preflab judge score`` end to end (issue 39, item 2)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from judge.runner.scoring import ScoreRunConfig, score_pairs
from judge.verdicts.pairs import Pair
from judge.verdicts.scores import load_scores
from llm.calls.cache import CallCache
from llm.providers.base import ProviderError
from llm.providers.reward import RewardProvider, parse_reward_spec, reward_messages
from tests.judge.compare_files import preflab, write_jsonl
from tests.judge.fake_vllm_pooling import SERVED, PoolingFake, pooling_reply, reward_of

URL = "http://rm.test:8000"


def _provider(fake: PoolingFake, model: str = SERVED) -> RewardProvider:
    return RewardProvider(model, URL, transport=fake.transport())


def _score(provider: RewardProvider, prompt: str, answer: str) -> float:
    async def go() -> float:
        try:
            return float((await provider.score(reward_messages(prompt, answer))).text)
        finally:
            await provider.aclose()
    return asyncio.run(go())


def test_the_provider_sends_chat_messages_for_the_raw_reward_and_reads_it():
    fake = PoolingFake()
    assert _score(_provider(fake), "What is 2+2?", "4, GOOD") == pytest.approx(reward_of("4, GOOD"))
    assert fake.bodies == [{"model": SERVED, "task": "classify", "use_activation": False,
                            "messages": [{"role": "user", "content": "What is 2+2?"},
                                         {"role": "assistant", "content": "4, GOOD"}]}]


def test_the_fake_enforces_the_documented_request_shape():
    assert pooling_reply("/pooling", {"model": SERVED})[0] == 400  # neither input nor messages
    assert pooling_reply("/pooling", {"input": "a", "messages": []})[0] == 400
    assert pooling_reply("/pooling", {"messages": [{"role": "robot", "content": "x"}]})[0] == 400
    assert pooling_reply("/pooling", {"input": "a", "task": "embed"})[0] == 400
    assert pooling_reply("/v1/pooling/x", {"input": "a"})[0] == 404
    status, body = pooling_reply("/pooling", {"input": "GOOD"})  # activation on by default: a sigmoid
    assert status == 200 and 0 < body["data"][0]["data"][0] < 1


def test_vllm_error_json_reaches_the_error_and_is_not_retried():
    with pytest.raises(ProviderError) as e:
        _score(_provider(PoolingFake(), model="other-model"), "q", "a")
    assert not e.value.retryable and e.value.status == 404
    assert "The model `other-model` does not exist." in str(e.value)


def test_server_errors_are_retried_by_the_judge_retry_loop():
    fake = PoolingFake(fail_first=2, fail_status=503)
    pairs = [Pair("q1", "Q?", "a", "x GOOD", "b", "y")]
    rows, stats = score_pairs(pairs, _provider(fake), ScoreRunConfig(backoff_base=0.001))
    assert stats.retries == 4 and stats.retry_reasons == {"503": 4} and stats.failed == 0
    assert rows[0]["score_x"] == pytest.approx(reward_of("x GOOD")) and rows[0]["score_y"] == reward_of("y")


def test_each_prompt_answer_is_sent_once_and_a_rerun_sends_nothing(tmp_path):
    # model a's answer to q1 appears in two pairs; both orders are read from the same two scores
    pairs = [Pair("q1", "Q1?", "a", "answer a", "b", "answer b"), Pair("q1", "Q1?", "a", "answer a", "c", "c GOOD"),
             Pair("q2", "Q2?", "a", "answer a", "b", "answer b")]
    fake = PoolingFake()
    cache = CallCache(tmp_path / "c.sqlite")
    rows, stats = score_pairs(pairs, _provider(fake), cache=cache)
    assert (stats.answers, stats.distinct, stats.calls, stats.cache_hits) == (6, 5, 5, 0)
    assert len(fake.bodies) == 5 and len({json.dumps(b, sort_keys=True) for b in fake.bodies}) == 5
    assert "both orders cost nothing extra" in stats.summary()
    again = PoolingFake()
    rows2, stats2 = score_pairs(pairs, _provider(again), cache=cache)
    assert again.bodies == [] and stats2.cache_hits == 5 and rows2 == rows
    cache.close()


def test_a_scoring_runs_call_counts_are_the_shared_call_stats():
    """The call counting lives once (llm.calls.retry.CallStats): a scoring run's stats are CallStats with the
    answers' counts added, and their cost is unknown (None: no price for a reward endpoint), not 0."""
    from llm.calls.retry import CallStats

    pairs = [Pair("q1", "Q1?", "a", "answer a", "b", "answer b")]
    _, stats = score_pairs(pairs, _provider(PoolingFake()))
    assert isinstance(stats, CallStats) and (stats.calls, stats.cache_hits, stats.failed) == (2, 0, 0)
    assert stats.cost is None and stats.wall_s > 0 and stats.tokens_in > 0


def test_a_failed_answer_keeps_its_row_with_the_error(tmp_path):
    class Broken(PoolingFake):
        def __call__(self, request: httpx.Request) -> httpx.Response:
            if b"BROKEN" in request.content:
                return httpx.Response(400, json={"error": {"message": "too long", "type": "BadRequestError",
                                                           "param": None, "code": 400}})
            return super().__call__(request)

    rows, stats = score_pairs([Pair("q1", "Q?", "a", "ok", "b", "BROKEN")], _provider(Broken()))
    assert stats.failed == 1 and rows[0]["score_y"] is None and "too long" in rows[0]["error"]
    assert rows[0]["score_x"] == reward_of("ok")


def test_reward_specs():
    assert parse_reward_spec("reward:http://h:8000#org/m") == ("http://h:8000", "org/m")
    with pytest.raises(ValueError, match="reward:http://HOST:PORT#MODEL"):
        parse_reward_spec("reward:h#m")


def test_judge_score_writes_rows_every_verdict_command_reads(tmp_path, capsys):
    from tests.judge.fault_server import Faults, FaultServer

    rows = [{"item_id": f"q{i}", "prompt": f"Q{i % 2}?", "model_x": "a", "answer_x": "GOOD" if i % 3 else "meh",
             "model_y": "b", "answer_y": "fine" * (1 + i % 4)} for i in range(12)]
    pairs = write_jsonl(tmp_path / "pairs.jsonl", rows)
    distinct = len({(r["prompt"], r[f"answer_{s}"]) for r in rows for s in "xy"})
    with FaultServer(Faults(rate_500=0.2, seed=3)) as srv:
        base = srv.url.removesuffix("/v1")
        code, out, err = preflab(capsys, "judge", "score", str(pairs), "--reward-model", f"reward:{base}#{SERVED}",
                                 "--output", str(tmp_path / "s.jsonl"), "--cache", str(tmp_path / "c.sqlite"),
                                 "--quiet")
    assert code == 0, err
    assert f"12 pairs: 24 answers, {distinct} distinct" in out and "both orders cost nothing extra" in out
    table = load_scores(tmp_path / "s.jsonl")
    assert table.attrs["settings"]["judge model"] == f"reward:{base}#{SERVED}"
    assert table["margin_xy"].tolist() == pytest.approx(
        [reward_of(r["answer_x"]) - reward_of(r["answer_y"]) for r in rows])
