"""Judges on today's APIs: the installed SDKs (anthropic 2.x, openai 3.x) against contract fakes of the APIs
(tests/judge/api_fakes.py). Every test asserts what the run produces: verdicts, methods, failures, costs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge.runner import batch as batch_mod
from judge.runner.batch import BatchFailed, batch_judge
from judge.runner.run import RunConfig, run_judge
from judge.verdicts.pairs import Pair
from judge.verdicts.rubrics import BUILTIN
from llm.calls.cache import CallCache
from llm.prices import parse_price
from llm.providers.base import CUT_BY_MAX_TOKENS, NOT_SENT_COST_CAP
from tests.judge.api_fakes import ApiFake

#: Pairs with known truth: the answer containing GOOD is the better one (the fakes' judges know it).
PAIRS = [Pair(f"q{i}", f"question {i}?", "mx", "GOOD answer" if i % 2 else "weak answer", "my",
              "weak answer" if i % 2 else "GOOD answer") for i in range(3)]
TRUTH = {p.item_id: ("mx" if "GOOD" in p.answer_x else "my") for p in PAIRS}
OPENAI_MODELS = ["gpt-4.1-mini", "ft:gpt-4.1-mini:acme::abc123", "o4-mini", "gpt-6-luna"]


@pytest.fixture
def api(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fake")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-fake")
    with ApiFake(seed=3) as fake:
        yield fake


def spec(api: ApiFake, model: str) -> str:
    return f"anthropic:{api.root}#{model}" if model.startswith("claude") else f"openai:{api.url}#{model}"


def winners(df):
    return {r.item_id: r.winner for r in df.itertuples() if r.order == "xy"}


def test_anthropic_live_sends_no_sampling_parameter_and_reads_k_default_samples(api, tmp_path):
    """Before: every request carried temperature (extra_body) and API version 2026-10-21 refused all of them."""
    res = run_judge(PAIRS, spec(api, "claude-sonnet-5-5"), RunConfig(BUILTIN["abt"], fallback_samples=4),
                    tmp_path / "c.sqlite")
    df = res.verdicts
    assert api.refusals == [] and df["error"].isna().all() and res.stats.failed == 0
    assert (df["method"] == "sampled").all() and (df["samples"] == 4).all()
    assert (df["temperature"] == "model default").all()  # labelled: the model's own sampling, not a setting
    assert res.stats.retries == 0  # so the K calls per order are exactly these:
    assert len([1 for path, _, _ in api.log if path == "/v1/messages"]) == len(PAIRS) * 2 * 4
    # the model thinks by default: room for it, and the verdict after the thinking block is read
    assert winners(df) == TRUTH and df["p_a"].notna().all()
    share = df.apply(lambda r: r["p_a"] if r["verdict"] == "A" else r["p_b"], axis=1)
    assert share.to_numpy() == pytest.approx(3 / 4)  # the fake's 4 samples: 3 right, 1 wrong


def test_anthropic_answer_that_is_all_thinking_is_an_error_not_a_verdict(api):
    res = run_judge(PAIRS[:1], spec(api, "claude-sonnet-5-5"),
                    RunConfig(BUILTIN["abt"], samples=2, max_tokens=5000, both_orders=False), None)
    assert res.verdicts["error"].isna().all()  # 5000 tokens: room to think and answer
    with ApiFake() as small:  # a budget under the thinking: no text, stop_reason max_tokens
        small.message = _thinking_only(small.message)
        res = run_judge(PAIRS[:1], spec(small, "claude-sonnet-5-5"),
                        RunConfig(BUILTIN["abt"], samples=2, both_orders=False, max_attempts=1), None)
    assert res.stats.failed == 1 and "before answering" in res.verdicts["error"].iloc[0]


def test_a_reply_cut_by_max_tokens_is_its_own_kind_not_the_cost_cap(api):
    """A reply cut by max_tokens and a call --max-cost kept from being sent are different failures: the row says
    which (``error_kind``), and the CLI's exit rule reads the kind, never the message."""
    with ApiFake() as small:
        small.message = _thinking_only(small.message)
        res = run_judge(PAIRS[:1], spec(small, "claude-sonnet-5-5"),
                        RunConfig(BUILTIN["abt"], samples=2, both_orders=False, max_attempts=1), None)
    assert res.verdicts["error_kind"].tolist() == [CUT_BY_MAX_TOKENS] != [NOT_SENT_COST_CAP]


def _thinking_only(message):
    def answer(body, version):
        status, msg = message(body, version)
        if status == 200:
            msg["content"] = [b for b in msg["content"] if b["type"] == "thinking"]
            msg["stop_reason"] = "max_tokens"
        return status, msg
    return answer


@pytest.mark.parametrize("model", OPENAI_MODELS)
def test_openai_models_by_capability_live(api, tmp_path, model):
    """Before: gpt-6-like models were sent temperature=0 + logprobs and every row failed with the 400."""
    cache = tmp_path / "c.sqlite"
    res = run_judge(PAIRS, spec(api, model), RunConfig(BUILTIN["abt"], fallback_samples=5), cache)
    df = res.verdicts
    assert df["error"].isna().all() and res.stats.failed == 0, df["error"].tolist()
    logprob_model = model.startswith(("gpt-4.1", "ft:"))
    assert set(df["method"]) == ({"logprob-first-token"} if logprob_model else {"sampled"})
    assert winners(df) == TRUTH
    if not logprob_model:  # 5 samples, the fake answers 4 right: shares, not one-hot text
        share = df.apply(lambda r: r["p_a"] if r["verdict"] == "A" else r["p_b"], axis=1)
        assert share.to_numpy() == pytest.approx(4 / 5) and (df["samples"] == 5).all()
    caps = CallCache(cache).capabilities("openai", model)
    if model == "o4-mini":  # n = 5 answers in one request per order: one input charge, not five
        ok = [b for p, m, b in api.log if m == model and "logprobs" not in b and "temperature" not in b]
        assert len(ok) == len(df) and all(b["n"] == 5 for b in ok) and caps["logprobs"] is False
    if model == "gpt-6-luna":  # learnt from the refusals and remembered: a rerun asks nothing refused
        assert caps == {"temperature": False, "reasoning": True, "logprobs": False, "n": False}
        before = len(api.log)
        again = run_judge(PAIRS[:1], spec(api, model), RunConfig(BUILTIN["ab"], fallback_samples=2), cache)
        assert again.verdicts["error"].isna().all()
        assert all(not {"temperature", "logprobs", "n"} & set(b) for _, _, b in api.log[before:])


@pytest.mark.parametrize("model", [*OPENAI_MODELS, "claude-sonnet-5-5"])
def test_batch_runs_finish_with_no_failed_rows(api, tmp_path, model):
    """Before: reasoning models' batch bodies had max_completion_tokens=16 and the empty replies were cached;
    Anthropic batch requests carried temperature."""
    summary, res = batch_judge(PAIRS, spec(api, model), RunConfig(BUILTIN["abt"]), tmp_path / "c.sqlite",
                               poll_s=0.0)
    df = res.verdicts
    assert df["error"].isna().all(), df["error"].tolist()
    assert res.stats.calls == 0 and not [1 for _, m, _ in api.log if m == model]  # no live call at all
    assert winners(df) == TRUTH and summary["errored"] == 0
    logprob_model = model.startswith(("gpt-4.1", "ft:"))
    assert set(df["method"]) == ({"logprob-first-token"} if logprob_model else {"sampled"})


def test_batch_is_split_at_the_api_limits(api, tmp_path, monkeypatch):
    """Before: one batch for everything; over the limit the batch failed and every call was re-run live."""
    api.batch_max_requests = 4
    monkeypatch.setitem(batch_mod.LIMITS, "openai", (4, 200 * 1024 * 1024))
    live = len(api.log)
    summary, res = batch_judge(PAIRS, spec(api, "gpt-4.1-mini"), RunConfig(BUILTIN["abt"]), tmp_path / "c.sqlite",
                               poll_s=0.0)
    assert len(summary["batches"]) == 2 and summary["stored"] == 6  # 6 requests: 4 + 2
    assert res.verdicts["error"].isna().all() and res.stats.calls == 0 and len(api.log) == live
    assert batch_mod.chunks(list(range(7)), "openai", lambda x: b"x" * 10) == [[0, 1, 2, 3], [4, 5, 6]]
    monkeypatch.setitem(batch_mod.LIMITS, "openai", (100, 25))
    assert batch_mod.chunks(list(range(5)), "openai", lambda x: b"x" * 10) == [[0, 1], [2, 3], [4]]


def test_failed_batch_is_an_error_naming_it_unless_live_fallback(api, tmp_path, capsys):
    api.batch_max_requests = 4  # the fake refuses our one 6-request batch (our limit is the real 50,000)
    with pytest.raises(BatchFailed, match=r"OpenAI batch batch_\w+ failed .*batch_too_large"):
        batch_judge(PAIRS, spec(api, "gpt-4.1-mini"), RunConfig(BUILTIN["abt"]), tmp_path / "c.sqlite", poll_s=0.0)
    assert not [1 for p, _, _ in api.log if p == "/v1/chat/completions"]  # nothing called live behind our back
    summary, res = batch_judge(PAIRS, spec(api, "gpt-4.1-mini"), RunConfig(BUILTIN["abt"]), tmp_path / "c.sqlite",
                               poll_s=0.0, fallback="live")
    assert summary["status"] == "failed" and res.stats.calls == 6 and res.verdicts["error"].isna().all()
    assert "--batch-fallback live" in capsys.readouterr().err


def test_cli_batch_failure_is_one_line(api, tmp_path):
    from preflab_cli.judge_cmds import app

    api.batch_max_requests = 1
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"item_id": p.item_id, "prompt": p.prompt, "model_x": p.model_x,
                                         "answer_x": p.answer_x, "model_y": p.model_y, "answer_y": p.answer_y}) + "\n"
                             for p in PAIRS))
    res = CliRunner().invoke(app, ["run", str(pairs), "--judge", spec(api, "gpt-4.1-mini"), "--batch", "--poll", "0",
                                   "--cache", str(tmp_path / "c.sqlite"), "--output", str(tmp_path / "v.jsonl"),
                                   "--quiet"])
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "error:" in res.output and "batch_" in res.output and "failed" in res.output
    # an SDK error during the batch calls (here a 404: the base URL lacks /v1) is one line too, no traceback
    res = CliRunner().invoke(app, ["run", str(pairs), "--judge", f"openai:{api.root}#gpt-4.1-mini", "--batch",
                                   "--poll", "0", "--cache", str(tmp_path / "c2.sqlite"), "--output",
                                   str(tmp_path / "v2.jsonl"), "--quiet"])
    assert res.exit_code != 0 and (res.exception is None or isinstance(res.exception, SystemExit)), res.exception
    assert "error: HTTP 404" in res.output and "Traceback" not in res.output


@pytest.mark.parametrize(("model", "method"), [
    ("reason-first", "logprob-at-verdict"),  # before: read at "The": A, p_a 0.667, low mass
    ("spm-pieces", "logprob-first-token"),  # before: "▁B" unparsable
    ("dup-tokens", "logprob-first-token"),  # before: the second "A" overwrote the first: read as the loser
    ("think-first", "logprob-first-token"),  # before: "<think>" read as the verdict token: unparsable
    ("vllm-max5", "logprob-first-token"),  # before: switched to K samples instead of asking for 5
])
def test_local_servers_verdict_read_where_written(api, model, method):
    # think-first at the default 3 tokens: cut off inside <think>, then given the reasoning budget
    res = run_judge(PAIRS, f"local:{api.url}#{model}",
                    RunConfig(BUILTIN["abt"], max_tokens=None if model == "think-first" else 64), None)
    df = res.verdicts
    assert df["error"].isna().all() and (df["method"] == method).all(), df[["method", "error"]]
    assert winners(df) == TRUTH and not df["low_mass"].any()
    best = df.apply(lambda r: r["p_a"] if r["verdict"] == "A" else r["p_b"], axis=1)
    expected = 0.55 / 0.96 if model == "dup-tokens" else 0.8 / 0.98  # label mass renormalised over A, B, C
    assert best.to_numpy() == pytest.approx(expected, abs=1e-9)
    assert res.stats.methods == {method: len(df)}


def test_server_without_logprobs_reads_text_with_no_probability_and_says_so(api, tmp_path, capsys):
    """Before: p = 1.0 / 0.0 from the text, unflagged, and the summary said (logprob)."""
    from judge.cards.card import render_card
    from judge.metrics.adapters import load_verdicts_jsonl
    from judge.metrics.calibrate import calibrate

    res = run_judge(PAIRS, f"local:{api.url}#ignores-logprobs", RunConfig(BUILTIN["abt"]), None)
    df = res.verdicts
    assert (df["method"] == "text").all() and df["p_a"].isna().all() and winners(df) == TRUTH
    assert res.stats.no_logprobs == len(df) and "text 6" in res.stats.summary()
    assert "probabilities unavailable: server returned no logprobs" in capsys.readouterr().err
    res.write_jsonl(tmp_path / "v.jsonl")
    pairs = load_verdicts_jsonl(tmp_path / "v.jsonl")
    html = render_card(calibrate(pairs, n_bootstrap=50), settings=pairs.attrs["settings"])
    assert "probabilities unavailable: server returned no logprobs" in html
    assert "verdict methods: text 6" in html


def test_unknown_price_is_unknown_and_price_option_sets_it(api, tmp_path):
    """Before: every current model cost $0."""
    res = run_judge(PAIRS[:1], spec(api, "gpt-6-luna"), RunConfig(BUILTIN["ab"], fallback_samples=2), None)
    assert res.stats.cost is None and res.verdicts["cost"].isna().all()
    assert "cost unknown" in res.stats.summary() and "no price known" in res.verdicts["price"].iloc[0]
    price = parse_price("in=2,out=8", "gpt-6-luna")
    res = run_judge(PAIRS[:1], spec(api, "gpt-6-luna"), RunConfig(BUILTIN["ab"], fallback_samples=2, price=price),
                    None)
    s = res.stats
    assert s.cost == pytest.approx((2 * s.tokens_in + 8 * s.tokens_out) / 1e6) and s.cost > 0
    toml = tmp_path / "prices.toml"
    toml.write_text('[prices]\n"gpt-6" = {in = 1.25, out = 10}\n')
    assert parse_price(str(toml), "gpt-6-luna").input == 1.25
    with pytest.raises(ValueError, match="no \\[prices\\] entry"):
        parse_price(str(toml), "claude-opus-5")
    with pytest.raises(ValueError, match="non-negative"):
        parse_price("in=-1,out=2", "m")


def test_low_mass_rows_left_out_of_brier_and_counted(tmp_path):
    from judge.metrics.adapters import load_verdicts_jsonl
    from judge.metrics.calibrate import calibrate
    from judge.metrics.human_join import attach_human

    rows, labels = [], ["item_id,model_a,model_b,human"]
    for i in range(8):
        low = i < 3
        for order, p_a in (("xy", 0.9), ("yx", 0.1)):
            rows.append({"item_id": f"q{i}", "model_x": "mx", "model_y": "my", "order": order, "p_a": p_a,
                         "p_b": 1 - p_a, "p_tie": 0.0, "verdict": "A" if p_a > 0.5 else "B", "low_mass": low,
                         "method": "logprob-first-token"})
        labels.append(f"q{i},mx,my,A")
    (tmp_path / "v.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "h.csv").write_text("\n".join(labels) + "\n")
    pairs = attach_human(load_verdicts_jsonl(tmp_path / "v.jsonl"), tmp_path / "h.csv")
    cal = calibrate(pairs, n_bootstrap=50)["calibration"]
    assert cal["n"] == 5 and cal["n_low_mass_excluded"] == 3
    assert any("6 low-label-mass verdict rows" in n for n in pairs.attrs["notes"])
    assert math.isclose(cal["brier"], 2 * (0.1 ** 2), rel_tol=1e-9)


DEMO = Path(__file__).resolve().parents[2] / "data" / "demo" / "pairs.jsonl"


@pytest.mark.slow
@pytest.mark.parametrize("batch", [False, True], ids=["live", "batch"])
@pytest.mark.parametrize("model", ["claude-sonnet-5-5", "gpt-4.1-mini", "o4-mini", "gpt-6-luna"])
def test_cli_judges_the_demo_pairs_with_no_failed_row(api, tmp_path, model, batch):
    """`preflab judge run` on the demo pairs, then the card: 0 failed rows, every row's method on the card."""
    from preflab_cli.judge_cmds import app

    out, card = tmp_path / "v.jsonl", tmp_path / "card.html"
    args = ["run", str(DEMO), "--judge", spec(api, model), "--cache", str(tmp_path / "c.sqlite"), "--output",
            str(out), "--quiet", "--concurrency", "32"] + (["--batch", "--poll", "0"] if batch else [])
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 480 and all(r["error"] is None for r in rows) and " 0 failed" in res.output
    methods = {r["method"] for r in rows}
    assert methods == ({"logprob-first-token"} if model == "gpt-4.1-mini" else {"sampled"})
    res = CliRunner().invoke(app, ["calibrate", str(out), "--bootstrap", "50", "--report", str(card)])
    assert res.exit_code == 0, res.output
    assert f"verdict methods: {methods.pop()} 480" in card.read_text()
