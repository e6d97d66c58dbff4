"""Reliability against a real loopback HTTP server that injects faults (429 + Retry-After, 500, slow,
dropped connections, malformed JSON), and a real process kill halfway through a cached run."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from judge.runner.run import RunConfig, arun_judge, run_judge
from judge.verdicts.pairs import Pair
from judge.verdicts.rubrics import BUILTIN
from llm.providers.compatible import CompatibleProvider
from tests.judge.fault_server import Faults, FaultServer

N_PAIRS = 1000  # x 2 orders = 2,000 calls
KEY = ["item_id", "order"]
COLS = ["p_a", "p_b", "p_tie", "verdict", "p_x", "p_y"]


def make_pairs(n: int = N_PAIRS) -> list[Pair]:
    return [Pair(f"q{i}", f"Question {i}: explain item {i}.", "mx", f"X answer {i}", "my",
                 f"Y answer {i} " * (i % 3 + 1))
            for i in range(n)]


def judge_against(srv: FaultServer, pairs: list[Pair], *, timeout: float = 10.0, concurrency: int = 64,
                  cache=None):
    async def go():
        prov = CompatibleProvider("fault", srv.url, timeout=timeout)
        try:
            return await arun_judge(pairs, prov, RunConfig(BUILTIN["abt"], concurrency=concurrency,
                                                           backoff_base=0.05, max_attempts=12), cache)
        finally:
            await prov.aclose()

    return asyncio.run(go())


@pytest.fixture(scope="module")
def reference_table() -> pd.DataFrame:
    """The 2,000 verdicts from a fault-free server: what every faulty or interrupted run must end with."""
    with FaultServer(Faults()) as srv:
        result = judge_against(srv, make_pairs())
    assert result.stats.calls == 2 * N_PAIRS and result.stats.retries == 0
    return result.verdicts.set_index(KEY).sort_index()


@pytest.mark.slow
def test_2000_calls_through_faults_every_verdict_exactly_once(reference_table):
    faults = Faults(rate_429=0.04, rate_500=0.04, rate_slow=0.01, rate_drop=0.03, rate_malformed=0.03,
                    slow_delay=3.0, retry_after="1", seed=7)
    with FaultServer(faults) as srv:
        result = judge_against(srv, make_pairs(), timeout=1.0)
        outcomes, answered = dict(srv.outcomes), dict(srv.answered)
    df, stats = result.verdicts, result.stats
    # every fault kind really happened
    for kind in ("429", "500", "slow", "drop", "malformed"):
        assert outcomes.get(kind, 0) > 0, outcomes
    assert len(df) == 2 * N_PAIRS
    assert not df.duplicated(KEY).any()
    assert df["error"].isna().all() and stats.failed == 0
    assert stats.calls == 2 * N_PAIRS
    reasons = stats.retry_reasons
    assert reasons["timeout"] >= outcomes["slow"]  # 3 s answers against a 1 s timeout
    # on a loaded machine an ordinary answer can also arrive after the timeout; only those can repeat a call
    late = reasons["timeout"] - outcomes["slow"]
    # every request the server saw ended in exactly one success or one retry; a late timeout may be a request
    # the server never got to see (it timed out while queued on a busy machine)
    assert 2 * N_PAIRS + stats.retries - late <= sum(outcomes.values()) <= 2 * N_PAIRS + stats.retries
    faults_sent = outcomes["429"] + outcomes["500"] + outcomes["malformed"] + outcomes["drop"]
    seen_as_kind = reasons["429"] + reasons["500"] + reasons["malformed"] + reasons["connection"]
    assert seen_as_kind <= faults_sent <= seen_as_kind + late  # each fault seen as itself, or as a late timeout
    assert all(reasons[k] <= outcomes[k] for k in ("429", "500", "malformed"))
    assert reasons["connection"] <= outcomes["drop"]
    assert outcomes["ok"] - 2 * N_PAIRS <= late  # an ok answer is repeated only if it arrived too late
    assert len(answered) == 2 * N_PAIRS and sum(answered.values()) - 2 * N_PAIRS <= late
    # Retry-After: 1 honoured: at least one wait of >= 1 s per 429 received
    assert sum(w >= 1.0 for w in stats.waits) >= reasons["429"]
    got = df.set_index(KEY).sort_index()
    pd.testing.assert_frame_equal(got[COLS], reference_table[COLS])


def _cli(pairs_path: Path, url: str, cache: Path, out: Path) -> list[str]:
    return [sys.executable, "-c", "from preflab_cli import main; main()", "judge", "run", str(pairs_path),
            "--judge", f"local:{url}#fault",
            "--cache", str(cache), "--output", str(out), "--concurrency", "8", "--quiet", "--timeout", "5"]


@pytest.mark.slow
def test_killed_run_restarts_without_recalling_cached_items(tmp_path, reference_table):
    pairs_path = tmp_path / "pairs.jsonl"
    with pairs_path.open("w") as fh:
        for p in make_pairs():
            fh.write(json.dumps({"item_id": p.item_id, "prompt": p.prompt, "model_x": p.model_x,
                                 "answer_x": p.answer_x, "model_y": p.model_y, "answer_y": p.answer_y}) + "\n")
    cache, out = tmp_path / "cache.sqlite", tmp_path / "verdicts.jsonl"
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    with FaultServer(Faults(delay=0.02, rate_500=0.02, seed=3)) as srv:
        proc = subprocess.Popen(_cli(pairs_path, srv.url, cache, out), env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while sum(srv.answered.values()) < N_PAIRS and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        assert proc.poll() is None, proc.communicate()[0].decode()[-2000:]
        os.kill(proc.pid, signal.SIGKILL)  # a real kill: no cleanup, no final flush
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        assert not out.exists()
        with sqlite3.connect(cache) as db:
            cached = {r[0] for r in db.execute("SELECT prompt_hash FROM calls")}
        assert 0 < len(cached) < 2 * N_PAIRS
        before = dict(srv.requests)

        done = subprocess.run(_cli(pairs_path, srv.url, cache, out), env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        after = dict(srv.requests)
    # no call for anything already in the cache
    recalled = [k for k in cached if after.get(k, 0) != before.get(k, 0)]
    assert recalled == []
    # everything not cached was called in the second run
    assert all(after.get(k, 0) > before.get(k, 0) for k in set(after) - cached)
    assert f"{len(cached)} cached" in done.stdout
    df = pd.read_json(out, lines=True, dtype={"item_id": str})
    assert len(df) == 2 * N_PAIRS and not df.duplicated(KEY).any()
    got = df.set_index(KEY).sort_index()
    pd.testing.assert_frame_equal(got[COLS], reference_table[COLS], check_dtype=False)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_official_sdks_through_the_fault_server(provider, monkeypatch):
    """The OpenAI and Anthropic SDK paths against the same faulty loopback server, via their base URL."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    faults = Faults(rate_429=0.08, rate_500=0.08, rate_drop=0.05, rate_malformed=0.05, retry_after="0", seed=11)
    pairs = make_pairs(40)
    with FaultServer(faults) as srv:
        spec = (f"openai:{srv.url}#gpt-4.1-mini" if provider == "openai"
                else f"anthropic:{srv.url.removesuffix('/v1')}#claude-haiku-4-5")
        config = RunConfig(BUILTIN["abt"], concurrency=16, backoff_base=0.01, max_attempts=12, timeout=10.0,
                           samples=0 if provider == "openai" else 2)
        result = run_judge(pairs, spec, config)
        outcomes = dict(srv.outcomes)
    df = result.verdicts
    # Anthropic: 2 samples per order are one request for 2 answers, made as 2 calls at default sampling
    per_request = 1 if provider == "openai" else 2
    assert sum(v for k, v in outcomes.items() if k != "ok") > 0
    assert len(df) == 80 and df["error"].isna().all() and not df.duplicated(KEY).any()
    assert result.stats.calls == 80 and sum(outcomes.values()) == per_request * (80 + result.stats.retries)
    assert (df["method"] == ("logprob-first-token" if provider == "openai" else "sampled")).all()
    assert df["p_a"].notna().all()
