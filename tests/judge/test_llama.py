"""The real local judge: SmolLM2-135M-Instruct on a llama.cpp server, through the OpenAI-compatible client.

Asserts plumbing and validity, not accuracy (a tiny, A-biased model): probabilities over labels sum to 1,
temperature 0 is deterministic, the cache answers a rerun, and swapping the order exposes position bias.
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import numpy as np
import pytest

from judge.runner.run import RunConfig, run_judge
from judge.verdicts.pairs import Pair, combined_table, load_pairs
from judge.verdicts.rubrics import BUILTIN
from llm.providers.base import JudgeRequest
from llm.providers.compatible import CompatibleProvider

pytestmark = pytest.mark.llama
DEMO = Path(__file__).resolve().parents[2] / "data" / "demo" / "pairs.jsonl"
N_PAIRS = 3


def demo_pairs() -> list[Pair]:
    """A few demo pairs (short answers, so the 135M model runs fast on 2 cores)."""
    if DEMO.is_file():
        pairs = sorted(load_pairs(DEMO), key=lambda p: len(p.prompt) + len(p.answer_x) + len(p.answer_y))
        return [Pair(p.item_id, p.prompt[:400], p.model_x, p.answer_x[:400], p.model_y, p.answer_y[:400])
                for p in pairs[:N_PAIRS]]
    return [Pair("q1", "What is the capital of France?", "good", "Paris.", "bad", "Berlin."),
            Pair("q2", "What is 7 times 6?", "good", "42", "bad", "36"),
            Pair("q3", "Name a primary colour.", "good", "Red.", "bad", "Purple is the only colour.")]


@pytest.fixture(scope="module")
def llama_run(llama_url, tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache") / "calls.sqlite"
    config = RunConfig(BUILTIN["abt"], concurrency=2, max_tokens=1, timeout=120, max_attempts=3)
    first = run_judge(demo_pairs(), f"local:{llama_url}#smollm2", config, cache)
    second = run_judge(demo_pairs(), f"local:{llama_url}#smollm2", config, cache)
    return first, second


def test_probabilities_sum_to_one_with_label_mass(llama_run):
    first, _ = llama_run
    df = first.verdicts
    assert len(df) == 2 * N_PAIRS and set(df["order"]) == {"xy", "yx"}
    assert df["error"].isna().all(), df["error"].tolist()
    assert (df["method"] == "logprob-first-token").all()
    parsed = df[df["verdict"].notna()]
    assert len(parsed) + first.stats.unparsable == len(df)
    assert len(parsed) >= N_PAIRS  # the rubric's labels are in SmolLM2's top 20 for most prompts
    total = parsed[["p_a", "p_b", "p_tie"]].sum(axis=1).to_numpy()
    np.testing.assert_allclose(total, 1.0, atol=1e-9)
    assert ((parsed["label_mass"] > 0) & (parsed["label_mass"] <= 1 + 1e-9)).all()
    # identity columns are the slot columns, swapped for order yx
    yx = parsed[parsed["order"] == "yx"]
    np.testing.assert_array_equal(yx["p_x"], yx["p_b"])


def test_rerun_answered_from_cache(llama_run):
    first, second = llama_run
    assert first.stats.calls == 2 * N_PAIRS and first.stats.cache_hits == 0
    assert second.stats.calls == 0 and second.stats.cache_hits == 2 * N_PAIRS
    cols = ["item_id", "order", "p_a", "p_b", "p_tie", "verdict"]
    assert first.verdicts[cols].equals(second.verdicts[cols])
    assert second.verdicts["cached"].all()


def test_temperature_zero_is_deterministic(llama_url):
    pair = demo_pairs()[0]
    req = JudgeRequest(tuple(BUILTIN["abt"].messages(pair.prompt, pair.answer_x, pair.answer_y)), max_tokens=1)

    async def twice():
        prov = CompatibleProvider("smollm2", llama_url, timeout=120)
        try:
            return [await prov.complete(req) for _ in range(3)]
        finally:
            await prov.aclose()

    a, b, c = asyncio.run(twice())
    assert a.text == b.text == c.text
    assert json.dumps(b.tokens) == json.dumps(c.tokens)  # the full top-20 list, bit for bit
    # not a against b: llama.cpp reuses the prompt prefix it has already evaluated, so the first call runs the
    # whole prompt in one batch and later ones only its last token; on AVX-512 CPUs the two kernels differ
    # (up to 0.43 nats on a top-20 token seen), so bit-for-bit holds only from the same server state
    assert [t["token"] for t in a.tokens] == [t["token"] for t in b.tokens]  # the same greedy token


def test_swapping_orders_exposes_position_bias(llama_run):
    first, _ = llama_run
    table = combined_table(first.verdicts, "conservative")
    both = table.dropna(subset=["p_x_xy", "p_x_yx"])
    assert len(both) >= 1
    # position bias: P(first slot) averaged over both orders; by identity the same pair moves with the slot
    df = first.verdicts.dropna(subset=["p_a"])
    p_first = float(df["p_a"].mean())
    shift = (both["p_x_xy"] - both["p_x_yx"]).to_numpy()  # > 0: X favoured more when shown first
    print(f"\nSmolLM2: mean P(first slot) {p_first:.3f}; P(X | X first) - P(X | X second): {np.round(shift, 3)}")
    # the size and sign of SmolLM2's position bias are the model's (they change with CPU features and builds):
    # printed above as a measurement, never asserted
    assert ((df["p_a"] >= 0) & (df["p_a"] <= 1)).all()
    assert set(table["winner"].dropna()) <= {"x", "y", "tie"}


def test_base_model_completions_endpoint(llama_url):
    res = run_judge(demo_pairs()[:1], f"local+completions:{llama_url}#smollm2",
                    RunConfig(BUILTIN["abt"], max_tokens=1, timeout=120, both_orders=False), None)
    row = res.verdicts.iloc[0]
    assert row["error"] is None and row["method"] == "logprob-first-token"
    if row["label_mass"] > 0:
        assert row["p_a"] + row["p_b"] + row["p_tie"] == pytest.approx(1.0)
    else:  # on some CPUs the base-model prompt's first token is a newline with no label in the top 20
        assert row["verdict"] is None and row["low_mass"] and np.isnan(row["p_a"])


def test_reason_first_rubric_rows_say_how_they_were_read(llama_url):
    """The reason-first rubric on the real server: SmolLM2-135M rarely writes "Final verdict: [[X]]", so each
    row must say how it was read; a row with a stated verdict is read at that token, never at the first."""
    from judge.verdicts.locate import read_verdict
    from judge.verdicts.parsing import METHODS

    rubric = BUILTIN["reason"]
    res = run_judge(demo_pairs()[:2], f"local:{llama_url}#smollm2",
                    RunConfig(rubric, max_tokens=48, timeout=120, max_attempts=3), None)
    df = res.verdicts
    assert df["error"].isna().all() and set(df["method"]) <= set(METHODS)
    assert sum(res.stats.methods.values()) == len(df)
    probs = df[df["method"].str.startswith("logprob") & df["verdict"].notna()]
    np.testing.assert_allclose(probs[["p_a", "p_b", "p_tie"]].sum(axis=1), 1.0, atol=1e-9)
    assert df.loc[df["method"] == "text", "p_a"].isna().all()  # a written verdict makes no probability claim
    for raw, method in zip(df["raw"], df["method"], strict=True):
        if "final verdict: [[" in raw.lower():
            assert method == "logprob-at-verdict", raw
    # the same reading on the real tokenizer's pieces: a stated verdict found in llama.cpp's own tokens
    req = JudgeRequest(tuple(rubric.messages("2+2?", "5", "4")), max_tokens=48)

    async def once():
        prov = CompatibleProvider("smollm2", llama_url, timeout=120)
        try:
            return await prov.complete(req)
        finally:
            await prov.aclose()

    comp = asyncio.run(once())
    v = read_verdict(comp.text, comp.tokens, rubric.labels, rubric.all_labels, False, rubric.verdict_marker)
    assert v.method in METHODS
    if v.method.startswith("logprob") and v.parsable:
        assert math.isclose(sum(v.probs.values()), 1.0, abs_tol=1e-9)
