"""The runner's pieces: backoff, rate limits, cache keys, both orders by identity, combining, bad input."""

from __future__ import annotations

import asyncio
import json
import math

import numpy as np
import pandas as pd
import pytest

from arena.io.battles import load_battles
from judge.runner import run as run_mod
from judge.runner.run import RunConfig, run_judge
from judge.verdicts.pairs import Pair, PairsError, combined_table, load_pairs
from judge.verdicts.rubrics import BUILTIN, RubricError, load_rubric
from judge_arena.battles_from_verdicts import identity_battles
from llm.calls.cache import CallCache, cache_key
from llm.calls.retry import RateLimiter, backoff_delay
from llm.providers.base import parse_retry_after
from preflab.outcomes import IDENTITY_LABELS
from tests.judge.fault_server import Faults, FaultServer, canned_logprobs

PAIRS = [Pair(f"q{i}", f"prompt {i}", "mx", f"x{i}", "my", f"y{i}") for i in range(6)]


def test_backoff_full_jitter_never_before_retry_after():
    assert backoff_delay(0, None, 0.5, base=1.0) == 0.5
    assert backoff_delay(3, None, 0.999, base=1.0, cap=30) == pytest.approx(0.999 * 8)
    assert backoff_delay(10, None, 1.0, base=1.0, cap=30) == 30.0  # capped
    assert backoff_delay(0, 7.0, 0.1) == 7.0  # Retry-After wins over a shorter jitter
    us = np.random.default_rng(0).random(10_000)
    d = np.array([backoff_delay(2, None, u, base=1.0) for u in us])
    assert d.min() >= 0 and d.max() < 4 and abs(d.mean() - 2.0) < 0.05  # U[0, 4)


def test_retry_after_headers():
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "3"}) == 0.25
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # a past date
    assert parse_retry_after({}) is None


def test_rate_limiter_waits_for_the_bucket(monkeypatch):
    clock = [0.0]
    sleeps: list[float] = []

    async def fake_sleep(s):
        sleeps.append(s)
        clock[0] += s

    monkeypatch.setattr(run_mod.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(run_mod.asyncio, "sleep", fake_sleep)

    async def go():
        lim = RateLimiter(rpm=2, tpm=1000)
        for _ in range(3):
            await lim.acquire(100)
        await lim.acquire(950)  # tokens: 1000 - 300 = 700 left -> wait for 250 more at 1000/60 per s

    asyncio.run(go())
    assert sleeps[0] == pytest.approx(30.0)  # third request: one request per 30 s at 2 rpm
    assert clock[0] == pytest.approx(30.0 + 30.0)  # fourth request: the next request slot (tokens refill meanwhile)


def test_cache_key_changes_with_every_part():
    base = ("local", "m", "abt@1:x", "h", "xy", {"temperature": 0.0})
    k = cache_key(*base)
    for i, alt in enumerate(["openai", "m2", "abt@2:y", "h2", "yx", {"temperature": 1.0}]):
        changed = list(base)
        changed[i] = alt
        assert cache_key(*changed) != k
    assert cache_key(*base) == k


def test_both_orders_by_identity_and_cache(tmp_path):
    db = tmp_path / "c.sqlite"
    with FaultServer(Faults()) as srv:
        spec = f"local:{srv.url}#fault"
        res = run_judge(PAIRS, spec, RunConfig(BUILTIN["abt"]), db)
        n_requests = sum(srv.requests.values())
        again = run_judge(PAIRS, spec, RunConfig(BUILTIN["abt"]), db)
        assert sum(srv.requests.values()) == n_requests  # nothing re-called
        other = run_judge(PAIRS, spec, RunConfig(BUILTIN["ab"]), db)  # new rubric -> new calls
        assert sum(srv.requests.values()) == 2 * n_requests
    assert again.stats.cache_hits == 12 and again.stats.calls == 0
    assert other.stats.calls == 12 and set(other.verdicts["p_tie"]) == {0.0}
    df = res.verdicts
    assert len(df) == 12 and len(CallCache(db)) == 24
    # slot probabilities equal the server's canned distribution for exactly that prompt
    row = df[(df.item_id == "q0") & (df.order == "yx")].iloc[0]
    msgs = BUILTIN["abt"].messages("prompt 0", "y0", "x0")
    from llm.calls.cache import prompt_hash

    top = {t["token"]: math.exp(t["logprob"]) for t in canned_logprobs(prompt_hash(msgs))[0]["top_logprobs"]}
    z = top["A"] + top["B"] + top["C"]
    assert row["p_a"] == pytest.approx(top["A"] / z) and row["p_tie"] == pytest.approx(top["C"] / z)
    assert row["first"] == "my" and row["p_y"] == row["p_a"] and row["p_x"] == row["p_b"]
    assert row["label_mass"] == pytest.approx(z / sum(top.values()))


def verdict_table(rows):
    return pd.DataFrame(rows, columns=["item_id", "model_x", "model_y", "order", "p_x", "p_y", "p_tie"])


def test_combine_conservative_and_average():
    df = verdict_table([
        ("1", "a", "b", "xy", 0.9, 0.1, 0.0), ("1", "a", "b", "yx", 0.6, 0.4, 0.0),  # agree: x
        ("2", "a", "b", "xy", 0.7, 0.3, 0.0), ("2", "a", "b", "yx", 0.2, 0.8, 0.0),  # disagree
        ("3", "a", "b", "xy", 0.5, 0.2, 0.3), ("3", "a", "b", "yx", np.nan, np.nan, np.nan),  # unparsable order
    ])
    cons = combined_table(df, "conservative").set_index("item_id")
    avg = combined_table(df, "average").set_index("item_id")
    assert cons.loc["1", "winner"] == "x" and avg.loc["1", "winner"] == "x"
    assert cons.loc["2", "winner"] == "tie" and avg.loc["2", "winner"] == "y"  # mean p_x 0.45 < p_y 0.55
    assert pd.isna(cons.loc["3", "winner"]) and pd.isna(avg.loc["3", "winner"])
    assert avg.loc["2", "p_x"] == pytest.approx(0.45)
    assert list(cons["consistent"]) == [True, False, False]
    battles = load_battles(identity_battles(cons.reset_index(), cons["winner"].map(IDENTITY_LABELS), judge="j"))
    assert len(battles) == 2 and list(battles.df["winner"]) == ["model_a", "tie"]


def test_bad_pairs_file_names_line_and_field(tmp_path):
    p = tmp_path / "pairs.jsonl"
    good = {"item_id": 1, "prompt": "q", "model_x": "a", "answer_x": "x", "model_y": "b", "answer_y": "y"}
    p.write_text(json.dumps(good) + "\n" + json.dumps({**good, "item_id": 2, "answer_y": None}) + "\n")
    with pytest.raises(PairsError, match=r"pairs.jsonl, line 2: field 'answer_y': missing"):
        load_pairs(p)
    p.write_text(json.dumps(good) + "\n{not json\n")
    with pytest.raises(PairsError, match="line 2.*not valid JSON"):
        load_pairs(p)
    p.write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n")
    with pytest.raises(PairsError, match="duplicate pair"):
        load_pairs(p)


def test_rubrics_end_with_a_verdict_request_and_load_from_toml(tmp_path):
    for r in BUILTIN.values():
        msgs = r.messages("Q?", "first answer", "second answer", reference="ref")
        assert msgs[1]["content"].index("first answer") < msgs[1]["content"].index("second answer")
        assert "ref" in msgs[1]["content"] and r.fingerprint.startswith(f"{r.name}@{r.version}:")
        assert set(r.outcomes) <= {"A", "B", "tie"}
    f = tmp_path / "r.toml"
    f.write_text('name = "mine"\nversion = "2"\ninstruction = "Say A or B."\n[labels]\nA = "A"\nB = "B"\n')
    assert load_rubric(f).labels == {"A": "A", "B": "B"}
    f.write_text('name = "mine"\nversion = "2"\ninstruction = "x"\n[labels]\nA = "first"\n')
    with pytest.raises(RubricError, match="must map to A, B or tie"):
        load_rubric(f)
    with pytest.raises(RubricError, match="unknown rubric"):
        load_rubric("nope")


def test_failed_calls_are_kept_and_counted():
    with FaultServer(Faults(rate_500=1.0)) as srv:
        res = run_judge(PAIRS[:2], f"local:{srv.url}#fault", RunConfig(BUILTIN["abt"], max_attempts=2,
                                                                       backoff_base=0.01))
    assert len(res.verdicts) == 4 and res.stats.failed == 4 and res.verdicts["error"].str.contains("500").all()
    assert res.verdicts["p_a"].isna().all()


def test_cli_run_writes_verdicts_and_reports(tmp_path):
    from typer.testing import CliRunner

    from preflab_cli import app

    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"item_id": p.item_id, "prompt": p.prompt, "model_x": p.model_x,
                                         "answer_x": p.answer_x, "model_y": p.model_y, "answer_y": p.answer_y}) + "\n"
                             for p in PAIRS))
    out, combined = tmp_path / "v.jsonl", tmp_path / "c.jsonl"
    with FaultServer(Faults()) as srv:
        args = ["judge", "run", str(pairs), "--judge", f"local:{srv.url}#fault", "--cache", str(tmp_path / "c.sqlite"),
                "--output", str(out), "--combined", str(combined), "--combine", "average", "--quiet"]
        res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "6 pairs, 12 verdicts" in res.output and "12 calls, 0 cached" in res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 12
    assert {"item_id", "model_x", "model_y", "order", "p_a", "p_b", "p_tie", "verdict", "label_mass", "raw",
            "tokens", "cost", "latency"} <= set(rows[0])
    assert len(combined.read_text().splitlines()) == 6
    # the run's settings travel with the verdicts, and the judge card's checklist reads them back
    assert {(r["judge"], r["rubric"], r["temperature"]) for r in rows} == {("local:fault", "abt@1", 0.0)}
    from judge.metrics.adapters import load_verdicts_jsonl

    settings = load_verdicts_jsonl(out).attrs["settings"]
    assert settings["judge model"] == "local:fault" and settings["rubric"] == "abt@1" and settings["date"]


def test_cli_errors_are_clear(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from preflab_cli import app

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"item_id": 1, "prompt": "q"}\n')
    res = CliRunner().invoke(app, ["judge", "run", str(bad), "--judge", "local:http://127.0.0.1:9/v1#m", "--no-cache"])
    assert res.exit_code == 2 and "line 1" in res.output and "model_x" in res.output
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"item_id": 1, "prompt": "q", "model_x": "a", "answer_x": "x", "model_y": "b",
                                "answer_y": "y"}) + "\n")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    res = CliRunner().invoke(app, ["judge", "run", str(good), "--judge", "openai:gpt-4.1-mini", "--no-cache"])
    assert res.exit_code == 2 and "OPENAI_API_KEY" in res.output
    res = CliRunner().invoke(app, ["judge", "run", str(good), "--judge", "nope:x", "--no-cache"])
    assert res.exit_code == 2 and "unknown provider" in res.output
    res = CliRunner().invoke(app, ["judge", "run", str(good), "--judge", "local:http://127.0.0.1:9/v1#m", "--batch",
                                   "--cache", str(tmp_path / "c.sqlite")])
    assert res.exit_code == 2 and "no batch API" in res.output


def test_identical_requests_are_made_once():
    twins = [Pair("a", "same prompt", "m1", "x", "m2", "y"), Pair("b", "same prompt", "m1", "x", "m2", "y")]
    with FaultServer(Faults()) as srv:
        res = run_judge(twins, f"local:{srv.url}#fault", RunConfig(BUILTIN["abt"]))
        assert sum(srv.requests.values()) == 2  # two orders, shared by both items
    assert len(res.verdicts) == 4 and res.stats.calls == 2
    a, b = (res.verdicts[res.verdicts.item_id == k].set_index("order")["p_a"] for k in ("a", "b"))
    assert a.equals(b)


def test_combined_table_keeps_only_observed_pairs() -> None:
    """Three pairs with different models give three rows (not the cross product of items and models)."""
    from judge.verdicts.pairs import combined_table

    rows = []
    for item, (x, y), (pxy, pyx) in [("1", ("a", "b"), (0.7, 0.4)), ("2", ("b", "c"), (0.2, 0.3)),
                                     ("3", ("a", "c"), (0.9, 0.8))]:
        rows += [{"item_id": item, "model_x": x, "model_y": y, "order": "xy", "p_x": pxy, "p_y": 1 - pxy, "p_tie": 0.0},
                 {"item_id": item, "model_x": x, "model_y": y, "order": "yx", "p_x": pyx, "p_y": 1 - pyx, "p_tie": 0.0}]
    out = combined_table(pd.DataFrame(rows)).set_index("item_id")
    assert len(out) == 3
    assert out["winner"].to_dict() == {"1": "tie", "2": "y", "3": "x"}
    assert out["consistent"].tolist() == [False, True, True]
