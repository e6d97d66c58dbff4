"""Budgets: a dry run plans exactly the calls a real run sends; --max-cost stops within one round of
in-flight calls of the cap and a rerun continues from the cache (fault server, real openai SDK)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from judge.runner.estimate import dry_run, estimate_run
from judge.runner.run import RunConfig, run_judge
from judge.verdicts.pairs import Pair, load_pairs
from judge.verdicts.rubrics import BUILTIN
from llm.calls.cache import CallCache
from llm.calls.spend import known_price
from llm.prices import FREE, Price
from llm.providers.base import NOT_SENT_COST_CAP
from llm.providers.openai import OpenAIProvider
from preflab_cli import app
from tests.judge.fault_server import Faults, FaultServer

PAIRS = [Pair(f"q{i}", f"prompt {i}", "mx", f"x{i}", "my", f"y{i}") for i in range(8)]
PAIRS.append(PAIRS[0])  # a repeated pair: its requests are identical, so sent once


@pytest.mark.parametrize("samples", [0, 3])
def test_dry_run_counts_the_calls_a_real_run_makes(tmp_path, samples):
    db = tmp_path / "c.sqlite"
    config = RunConfig(BUILTIN["abt"], samples=samples)
    with FaultServer(Faults()) as srv:
        spec = f"local:{srv.url}#fault"
        run_judge(PAIRS[:3], spec, config, db)  # a third already answered
        before = sum(srv.requests.values())
        est = dry_run(PAIRS, spec, config, db)
        assert sum(srv.requests.values()) == before  # the dry run sent nothing
        res = run_judge(PAIRS, spec, config, db)
        sent = sum(srv.requests.values()) - before
    # K samples are one call for K answers, sent as K requests to a server that does not take `n`
    assert est.calls == sent and est.cached == res.stats.cache_hits
    k = max(samples, 1)
    assert est.calls == (8 - 3) * 2 * k and est.cached == 3 * 2
    assert est.tokens_out == est.calls * (16 if samples else 3) and est.cost == 0.0  # local: free, known


def test_cli_dry_run_sends_nothing_and_writes_nothing(tmp_path, monkeypatch):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"item_id": p.item_id, "prompt": p.prompt, "model_x": p.model_x,
                                         "answer_x": p.answer_x, "model_y": p.model_y, "answer_y": p.answer_y}) + "\n"
                             for p in PAIRS[:8]))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-budget")
    out = tmp_path / "v.jsonl"
    with FaultServer(Faults()) as srv:
        known = CliRunner().invoke(app, ["judge", "run", str(pairs), "--judge", f"openai:{srv.url}#gpt-4.1-mini",
                                         "--dry-run", "--no-cache", "--output", str(out)])
        unknown = CliRunner().invoke(app, ["judge", "run", str(pairs), "--judge", f"openai:{srv.url}#new-model-x",
                                           "--dry-run", "--no-cache", "--output", str(out)])
        refused = CliRunner().invoke(app, ["judge", "run", str(pairs), "--judge", f"openai:{srv.url}#new-model-x",
                                           "--max-cost", "1", "--no-cache", "--output", str(out)])
        assert sum(srv.requests.values()) == 0
    assert known.exit_code == 0, known.output
    assert "16 calls to send" in known.output and "nothing was sent" in known.output
    assert "estimated cost: $" in known.output
    assert unknown.exit_code == 0 and "estimated cost: unknown" in unknown.output and "$0" not in unknown.output
    assert refused.exit_code == 2 and "needs a known price" in refused.output
    assert not out.exists()


def test_max_cost_stops_near_the_cap_keeps_answers_and_resumes(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-budget")
    db = tmp_path / "c.sqlite"
    concurrency = 4

    def provider(url):
        prov = OpenAIProvider("gpt-4.1-mini", base_url=url)
        prov.price = Price(1.0, 10.0, "test")  # USD per 1M tokens, fixed here whatever the table says
        return prov

    per_call = 100 * 1e-6 + 1 * 1e-5  # the fault server's usage: 100 tokens in, 1 out
    cap = 10 * per_call - 1e-9  # reached by the 10th answer
    with FaultServer(Faults(delay=0.01)) as srv:
        res = run_judge(PAIRS[:8], provider(srv.url), RunConfig(BUILTIN["abt"], concurrency=concurrency,
                                                                 max_cost=cap), db)
        made = res.stats.calls
        assert 10 <= made <= 10 + concurrency - 1  # within one round of in-flight calls of the cap
        assert sum(srv.answered.values()) == made == len(CallCache(db))
        errors = res.verdicts["error"].dropna()
        assert len(errors) == 16 - made and errors.str.contains("--max-cost budget").all()
        assert (res.verdicts.loc[errors.index, "error_kind"] == NOT_SENT_COST_CAP).all()
        assert res.stats.cost == pytest.approx(made * per_call)
        rest = run_judge(PAIRS[:8], provider(srv.url), RunConfig(BUILTIN["abt"], concurrency=concurrency), db)
    assert rest.stats.cache_hits == made and rest.stats.calls == 16 - made and rest.verdicts["error"].isna().all()


def test_unknown_price_is_unknown_not_zero():
    class P:
        provider, model, supports_logprobs = "openai", "new-model", True
        price = None  # the price table does not list the model

    assert known_price(P()) is None
    P.provider, P.price = "local", FREE
    assert known_price(P()) == (0.0, 0.0)
    P.provider, P.price = "openai", Price(float("nan"), 1.0, "test")
    assert known_price(P()) is None
    est = estimate_run(PAIRS[:2], type("Q", (), {"provider": "openai", "model": "m", "supports_logprobs": True,
                                                 "price": None})(), RunConfig(BUILTIN["abt"]))
    assert est.cost is None and "unknown" in est.summary()


def test_run_with_three_judges_writes_members_and_the_panel_and_a_failing_member_abstains(tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"item_id": p.item_id, "prompt": p.prompt, "model_x": p.model_x,
                                         "answer_x": p.answer_x, "model_y": p.model_y, "answer_y": p.answer_y}) + "\n"
                             for p in PAIRS[:8]))
    out = tmp_path / "v.jsonl"
    with FaultServer(Faults()) as good, FaultServer(Faults(rate_401=1.0)) as bad:  # final, not retried
        specs = [f"local:{good.url}#a", f"local:{good.url}#b", f"local:{bad.url}#broken"]
        args = ["judge", "run", str(pairs), "--no-cache", "--output", str(out), "--quiet", "--timeout", "5"]
        for s in specs:
            args += ["--judge", s]
        dry = CliRunner().invoke(app, [*args, "--dry-run"])
        assert sum(good.requests.values()) + sum(bad.requests.values()) == 0
        res = CliRunner().invoke(app, [*args, "--allow-failures", "16"])
        sent_good = sum(good.requests.values())
    assert dry.exit_code == 0 and dry.output.count("16 calls to send") == 3
    assert res.exit_code == 0, res.output
    assert sent_good == 32  # two good members x 8 pairs x 2 orders
    members = sorted(tmp_path.glob("v.*-local-*.jsonl"))
    assert [m.name for m in members] == ["v.1-local-a.jsonl", "v.2-local-b.jsonl", "v.3-local-broken.jsonl"]
    panel = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(panel) == 8 and all(r["member_3"] is None for r in panel)  # the broken member abstained
    assert all(r["winner"] == r["member_1"] == r["member_2"] for r in panel)  # a and b see the same answers
    from judge.runner.jury_run import run_jury_panel
    from preflab.io import iter_jsonl

    lib = tmp_path / "lib.jsonl"
    with FaultServer(Faults()) as good, FaultServer(Faults(rate_401=1.0)) as bad:
        specs = [f"local:{good.url}#a", f"local:{good.url}#a", f"local:{bad.url}#broken"]  # a twice: named apart
        run = run_jury_panel(load_pairs(pairs), specs, RunConfig(BUILTIN["abt"], timeout=5), None, lib)
    assert run.table.members == (specs[0], f"2:{specs[0]}", specs[2]) and run.failed == 16
    assert [r["winner"] for _, r in iter_jsonl(lib)] == [r["winner"] for r in panel]  # the CLI's panel, same rule
    assert "abstentions (member verdicts missing or unparsable): 8" in res.output


def test_cli_max_cost_exits_1_keeps_rows_and_a_rerun_continues(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-budget")
    price = known_price(OpenAIProvider("gpt-4.1-mini"))
    if price is None:
        pytest.skip("the price table has no price for gpt-4.1-mini")
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"item_id": p.item_id, "prompt": p.prompt, "model_x": p.model_x,
                                         "answer_x": p.answer_x, "model_y": p.model_y, "answer_y": p.answer_y}) + "\n"
                             for p in PAIRS[:8]))
    cap = 4 * (100 * price[0] + price[1])  # four calls' worth (the fault server's usage)
    out, db = tmp_path / "v.jsonl", tmp_path / "c.sqlite"
    with FaultServer(Faults()) as srv:
        base = ["judge", "run", str(pairs), "--judge", f"openai:{srv.url}#gpt-4.1-mini", "--cache", str(db),
                "--output", str(out), "--quiet", "--concurrency", "2"]
        first = CliRunner().invoke(app, [*base, "--max-cost", f"{cap:.12f}"])
        made = sum(srv.requests.values())
        second = CliRunner().invoke(app, base)
    assert first.exit_code == 1 and "stopped at --max-cost" in first.output
    assert 4 <= made <= 5
    assert second.exit_code == 0, second.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 16 and all(r["error"] is None for r in rows)
    assert f"{16 - made} calls, {made} cached" in second.output
