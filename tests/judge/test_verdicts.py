"""Verdict parsing: real AlpacaEval GPT-4-turbo logprobs (ground truth: the stored ``preference``) and text."""

from __future__ import annotations

import math

import numpy as np
import pytest

from judge.verdicts.parsing import (
    label_probs_from_logprobs,
    sampled_verdict,
    verdict_from_logprobs,
    verdict_from_text,
)
from preflab.alpaca import load_annotations

ALPACA_OUTCOMES = {"m": "A", "M": "B"}  # AlpacaEval's judge: `m` = the answer shown first
AB_TIE = {"A": "A", "B": "B", "C": "tie", "tie": "tie"}


def alpaca_preference(raw_completion: dict, switched: bool) -> float:
    """AlpacaEval's ``preference`` (1 = output_1 wins, 2 = output_2 wins) from our logprob verdict."""
    v = verdict_from_logprobs(raw_completion["logprobs"]["content"], ALPACA_OUTCOMES, case_sensitive=True)
    p_first = v.probs["A"]
    # switched: the judge saw output_2 first, so P(output_2) = P(first shown)
    return 1.0 + p_first if switched else 2.0 - p_first


def test_alpaca_eval_preferences_reproduced_on_every_row_with_logprobs(shared_data):
    files = sorted((shared_data / "alpaca_eval" / "annotations").glob("*.json.gz"))
    assert len(files) == 15
    without_logprobs: dict[str, int] = {}
    n_checked = 0
    worst = 0.0
    for path in files:
        df = load_annotations(path)
        has = df["raw_completion"].map(lambda rc: isinstance(rc, dict) and bool(rc.get("logprobs")))
        without_logprobs[path.name.removesuffix(".json.gz")] = int((~has).sum())
        for rc, switched, pref in zip(df.loc[has, "raw_completion"], df.loc[has, "switched"],
                                      df.loc[has, "preference"], strict=True):
            err = abs(alpaca_preference(rc, bool(switched)) - pref)
            worst = max(worst, err)
            assert err < 1e-6, (path.name, rc["logprobs"]["content"][0]["top_logprobs"], pref)
            n_checked += 1
        # rows without logprobs are reported, never silently dropped
        assert has.sum() + without_logprobs[path.name.removesuffix(".json.gz")] == len(df)
    print(f"\nchecked {n_checked} rows, max |error| {worst:.2e}; rows without logprobs: {without_logprobs}")
    assert without_logprobs["alpaca-7b"] == 3
    assert n_checked == 12038  # 12,069 rows in 15 files, 31 without logprobs
    assert worst < 1e-6


def test_alpaca_7b_all_802_rows_agree(shared_data):
    """All 802 alpaca-7b rows with logprobs agree; the only gap (< 1e-7) is the mass on variants such as
    `` m`` that AlpacaEval's exact-token parser ignores and ours sums."""
    df = load_annotations(shared_data / "alpaca_eval" / "annotations" / "alpaca-7b.json.gz")
    ok = df["raw_completion"].map(lambda rc: isinstance(rc, dict))
    errs = [abs(alpaca_preference(rc, s) - p)
            for rc, s, p in zip(df.raw_completion[ok], df.switched[ok], df.preference[ok], strict=True)]
    assert len(errs) == 802 and max(errs) < 1e-7


def test_token_variants_are_summed_and_mass_reported():
    top = {"A": math.log(0.5), " A": math.log(0.1), "a": math.log(0.1), "B": math.log(0.1), "The": math.log(0.2)}
    probs, mass, bound, missing = label_probs_from_logprobs(top, ["A", "B"])
    assert probs["A"] == pytest.approx(0.7 / 0.8)
    assert probs["B"] == pytest.approx(0.1 / 0.8)
    assert mass == pytest.approx(0.8)
    assert bound == 0.0 and missing == ()


def test_missing_label_bounded_by_smallest_listed_logprob_not_zero():
    top = {"A": math.log(0.6), "The": math.log(0.3), "I": math.log(0.05)}
    probs, mass, bound, missing = label_probs_from_logprobs(top, ["A", "B"])
    assert missing == ("B",)
    assert probs == {"A": 1.0, "B": 0.0}
    # B could hold up to 0.05 -> P(A) could be as low as 0.6 / 0.65
    assert bound == pytest.approx(0.05 / 0.65)
    assert 1.0 - bound == pytest.approx(0.6 / 0.65)


def test_no_label_in_top_k_is_unparsable_and_kept():
    tokens = [{"token": "The", "logprob": -0.1, "top_logprobs": [{"token": "The", "logprob": -0.1},
                                                                  {"token": "I", "logprob": -2.5}]}]
    v = verdict_from_logprobs(tokens, AB_TIE)
    assert not v.parsable and v.probs == {} and v.label_mass == 0.0


def test_lead_in_tokens_skipped_and_probabilities_sum_to_one():
    tokens = [
        {"token": "[[", "logprob": -0.01, "top_logprobs": [{"token": "[[", "logprob": -0.01}]},
        {"token": "B", "logprob": -0.4, "top_logprobs": [{"token": "B", "logprob": -0.4},
                                                          {"token": "A", "logprob": -1.5},
                                                          {"token": "C", "logprob": -3.0},
                                                          {"token": "Both", "logprob": -4.0}]},
    ]
    v = verdict_from_logprobs(tokens, AB_TIE)
    assert v.label == "B" and sum(v.probs.values()) == pytest.approx(1.0)
    z = np.exp([-0.4, -1.5, -3.0])
    assert v.probs["tie"] == pytest.approx(z[2] / z.sum())
    assert v.label_mass == pytest.approx(z.sum())
    assert not v.low_mass


def test_low_mass_flagged():
    tokens = [{"token": "Sure", "logprob": -0.05, "top_logprobs": [{"token": "Sure", "logprob": -0.05},
                                                                    {"token": "A", "logprob": -3.0}]}]
    v = verdict_from_logprobs(tokens, AB_TIE)
    assert v.label == "A" and v.low_mass and v.label_mass == pytest.approx(math.exp(-3.0))


# Real phrasings (MT-bench, Arena-Hard, AlpacaEval's "Output (a)", free-form judges) and the outcome they
# state; None = no trustworthy verdict (negated, conflicting, or none), which must be unparsable, never a guess.
TEXT_TABLE = [
    ('[[A]]', 'A'),
    ('[[B]]', 'B'),
    ('[[C]]', 'tie'),
    ('After comparing, Assistant B is more accurate. [[B]]', 'B'),
    ('My final verdict is: [[A>>B]]', 'A'),
    ('My final verdict is: [[A>B]]', 'A'),
    ('My final verdict is tie: [[A=B]]', 'tie'),
    ('My final verdict is: [[B>A]]', 'B'),
    ('My final verdict is: [[B>>A]]', 'B'),
    ('Verdict: B', 'B'),
    ('Verdict: A', 'A'),
    ('**Verdict:** b', 'B'),
    ('Final verdict: a tie', 'tie'),
    ('Final verdict: A tie.', 'tie'),
    ('The winner is a draw.', 'tie'),
    ('The winner is Output (b).', 'B'),
    ('Output (a)', 'A'),
    ('Output (b)', 'B'),
    ('Assistant A', 'A'),
    ('Assistant B', 'B'),
    ('A', 'A'),
    (' B', 'B'),
    ('C', 'tie'),
    ('tie', 'tie'),
    ('A tie.', 'tie'),
    ("It's a tie.", 'tie'),
    ('A close call, but B is better.', 'B'),
    ('A is better.', 'A'),
    ('Assistant A is better.', 'A'),
    ("Assistant B's answer is slightly better.", 'B'),
    ('Output (b) is better than Output (a).', 'B'),
    ('Both answers are equally good.', 'tie'),
    ('both equally good', 'tie'),
    ('A is not better than B.', None),
    ("Assistant A isn't better than Assistant B.", None),
    ('Neither A nor B is better.', None),
    ("I don't think B is better.", None),
    ('The answer is a bit longer in B, but both are fine.', None),
    ('A is worse than B.', 'B'),
    ('The better response is Assistant A.', 'A'),
    ('I prefer Assistant B.', 'B'),
    ('B. Assistant B follows the instruction', 'B'),
    ('A\n\nAssistant A answers the question.', 'A'),
    ('My final answer is tie.', 'tie'),
    ('A is better in style, but B is better overall.', None),
    ('I cannot decide between these.', None),
    ('Maybe?', None),
    ('A good answer needs more detail.', None),
    ('This is a better answer than I expected.', None),
    ('The answer is a.', 'A'),
    ('It is not a tie: Assistant A is better.', 'A'),
    ('Neither is better.', 'tie'),
    ('The two responses are of equal quality.', 'tie'),
    ('Assistant A is significantly better: [[A>>B]]', 'A'),
    ('[[A]] because ... then again [[C]]', 'tie'),
    ('Assistant A is clearer.\n\nFinal verdict: [[B]]', 'B'),
    ('Decision: Assistant A', 'A'),
    ('Answer A is better than answer B.', 'A'),
    ('**Assistant A**', 'A'),
    ('Assistant B.', 'B'),
    ('I would not say it is a tie, B wins.', 'B'),
    ('Assistant A provides a more detailed answer, so A is the better response.', 'A'),
    ("Both assistants provide good answers, but Assistant B's response is more comprehensive. [[B]]", 'B'),
    ('Based on the above, I would choose Assistant A.', None),
    ('Response A is better than response B.', 'A'),
    ('A>B', 'A'),
    ('Overall, the answers are tied.', 'tie'),
    ('I think both responses are equally helpful, so it is a tie.', 'tie'),
    ('A: 7/10, B: 8/10. B wins.', 'B'),
    ('(A) is better.', 'A'),
    ('Verdict: Tie', 'tie'),
    ('Winner: Assistant B', 'B'),
    ('The final verdict is that Assistant A is better.', 'A'),
]


@pytest.mark.parametrize(("text", "label"), TEXT_TABLE)
def test_text_verdicts(text, label):
    v = verdict_from_text(text, AB_TIE)
    assert v.label == label, v.extra
    assert v.parsable == (label is not None) and v.method == "text"


def test_text_table_is_large_and_covers_the_article_traps():
    assert len(TEXT_TABLE) >= 40
    assert {t for t, lab in TEXT_TABLE if lab == "tie"} >= {"A tie.", "Final verdict: a tie", "The winner is a draw."}


def test_arena_hard_comparisons_with_a_two_label_rubric():
    ab = {"A": "A", "B": "B"}
    assert verdict_from_text("My final verdict is: [[B>>A]]", ab).label == "B"
    assert not verdict_from_text("My final verdict is tie: [[A=B]]", ab).parsable  # no tie in this rubric
    assert not verdict_from_text("It's a tie.", ab).parsable


def test_text_verdict_five_level():
    outcomes = {"A>>B": "A", "A>B": "A", "A=B": "tie", "B>A": "B", "B>>A": "B"}
    v = verdict_from_text("Both fine, B is a bit better. My final verdict is: [[B>A]]", outcomes)
    assert v.label == "B" and v.probs["B"] == 1.0


@pytest.mark.parametrize("text", ["", "I cannot decide between these.", "Maybe?"])
def test_unparsable_text_counted(text):
    v = verdict_from_text(text, AB_TIE)
    assert not v.parsable and v.method == "text"


def test_sampled_verdict_shares_and_wilson_interval():
    samples = [verdict_from_text(t, AB_TIE) for t in ["A"] * 6 + ["B"] * 3 + ["C"] + ["???"]]
    v = sampled_verdict(samples, ["A", "B", "tie"])
    assert v.method == "sampled" and v.label == "A"
    assert v.probs == {"A": 0.6, "B": 0.3, "tie": 0.1}
    assert v.extra["unparsable"] == 1
    # Wilson 95% interval for 6/10, by the closed form
    z, n, p = 1.959963984540054, 10, 0.6
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert v.extra["ci"]["A"] == pytest.approx((centre - half, centre + half), abs=1e-9)


def test_five_level_rubric_sums_levels_into_outcomes():
    from judge.verdicts.rubrics import BUILTIN

    r = BUILTIN["arena5"]
    lps = {"1": 0.1, "2": 0.3, "3": 0.2, "4": 0.25, "5": 0.05}
    tokens = [{"token": "2", "logprob": math.log(0.3),
               "top_logprobs": [{"token": t, "logprob": math.log(p)} for t, p in lps.items()]}]
    v = verdict_from_logprobs(tokens, r.labels)
    z = sum(lps.values())  # 0.9 on the five digits
    assert v.probs["A"] == pytest.approx(0.4 / z) and v.probs["tie"] == pytest.approx(0.2 / z)
    assert v.probs["B"] == pytest.approx(0.3 / z) and v.label == "A"
    assert v.extra["levels"]["2"] == pytest.approx(0.3 / z) and v.label_mass == pytest.approx(z)


def test_tokenizer_pieces_and_case_are_normalised():
    """Before: "ĠA" and "▁A" (byte-level BPE / SentencePiece pieces) matched no label."""
    from judge.verdicts.parsing import token_label

    for token in ("\u0120A", "\u2581A", " A", "A\n", "a", "\u010aA"):
        assert token_label(token, ["A", "B"]) == "A", token
    assert token_label("\u2581m", ["m", "M"], case_sensitive=True) == "m"


def test_duplicate_token_strings_are_summed_not_overwritten():
    """Before: [A .4, B .3, A .2] kept the last A (.2) and read as B."""
    top = [("A", math.log(0.4)), ("B", math.log(0.3)), ("A", math.log(0.2))]
    probs, mass, _, _ = label_probs_from_logprobs(top, ["A", "B"])
    assert probs["A"] == pytest.approx(0.6 / 0.9) and mass == pytest.approx(0.9)
    tokens = [{"token": "A", "logprob": math.log(0.4), "top_logprobs": [
        {"token": t, "logprob": lp} for t, lp in top]}]
    assert verdict_from_logprobs(tokens, AB_TIE).label == "A"


def _tok(t, tops=None):
    return {"token": t, "logprob": -0.1,
            "top_logprobs": [{"token": k, "logprob": v} for k, v in (tops or {t: -0.1}).items()]}


def test_reason_first_reply_read_at_its_stated_verdict_not_its_first_token():
    from judge.verdicts.locate import read_verdict

    at_b = {"B": math.log(0.7), "A": math.log(0.2), "C": math.log(0.1)}
    pieces = ["A", " close", " call", ",", " but", " B", " is", " better", ".", " [[", "B", "]]"]
    tokens = [_tok("A", {"A": -0.1, "B": -3.0})] + [_tok(p) for p in pieces[1:10]] + [_tok("B", at_b), _tok("]]")]
    v = read_verdict("".join(pieces), tokens, AB_TIE)
    assert v.method == "logprob-at-verdict" and v.label == "B" and v.probs["B"] == pytest.approx(0.7)
    assert read_verdict("".join(pieces), None, AB_TIE).method == "text"  # no logprobs: the written verdict
    unfinished = read_verdict("<think>Let me compare", [_tok("<think>"), _tok("Let")], AB_TIE)
    assert not unfinished.parsable  # the answer never came
