"""Generate preflab's bundled demo arena (deterministic, standard library only).

    python data/demo/make_demo.py [--out DIR]      # default: this folder

Writes ``items.jsonl`` (one row per answer), ``pairs.jsonl`` (judge input), ``battles.jsonl`` (simulated
human votes in the Chatbot Arena layout), ``truth.json`` (the simulation's true parameters) and
``PROVENANCE.md``. All prompts and answer material are hand-written for preflab (content_*.py); the five
fictional models compose their answers from it in fixed styles (styles.py). The votes come from a seeded
Bradley-Terry process with Davidson ties and a mild length bias, so the demo leaderboard has real content
whose truth is known.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import math
import random
import re
from pathlib import Path

from content_code import CODING
from content_craft import REASONING, WRITING
from content_knowledge import FACTS, HOW_TO
from content_schema import Entry
from styles import MODELS, is_correct

ENTRIES: list[Entry] = [*FACTS, *HOW_TO, *CODING, *WRITING, *REASONING]
SEED = 20260105
N_VOTES = 1500
N_VOTERS = 20
START_TSTAMP = 1767571200.0  # 2026-01-05 00:00:00 UTC
MEAN_GAP_S = 600.0
# True Bradley-Terry strengths on the natural-log scale (centred: they sum to 0).
TRUE_STRENGTH: dict[str, float] = {
    "atlas-terse": 0.3, "beacon-verbose": 0.2, "comet-sloppy": -0.8, "delta-padded": -0.3, "ember-balanced": 0.6,
}
LENGTH_COEF = 0.15  # added utility per unit of log(word count): voters mildly prefer longer answers
DAVIDSON_NU = 1.0  # tie propensity; about 30% ties across the pairs here
BOTHBAD_SHARE = 0.25  # share of ties recorded as "tie (bothbad)"
# Model pairs the judge input covers, each with a designed difference (six of the ten, to keep the bundle
# under 1 MB): terse vs verbose/padded (both correct: length and markdown bias), correct vs sometimes wrong
# (comet-sloppy is longer than atlas-terse, so a length-biased judge is caught), balanced vs the rest.
JUDGE_PAIRS: list[tuple[str, str]] = [
    ("atlas-terse", "beacon-verbose"), ("atlas-terse", "comet-sloppy"), ("atlas-terse", "delta-padded"),
    ("atlas-terse", "ember-balanced"), ("comet-sloppy", "ember-balanced"), ("delta-padded", "ember-balanced"),
]

FENCE = re.compile(r"```.*?```", re.S)


def item_id(index: int) -> str:
    return f"demo-{index + 1:03d}"


def word_count(text: str) -> int:
    """Whitespace-separated words: the demo's stand-in for assistant token counts."""
    return len(text.split())


def markdown_counts(text: str) -> dict[str, int]:
    """Header lines (any level), list items (ordered and unordered) and bold spans outside fenced code.

    Totals, as in the style-control features of Chatbot Arena's ``conv_metadata`` (which keeps them per
    header level / list kind / bold marker; ``arena.io.battles`` sums such dicts to the same totals).
    """
    body = FENCE.sub("", text)
    return {
        "header_count": len(re.findall(r"^#{1,6}\s", body, re.M)),
        "list_count": len(re.findall(r"^\s*(?:\d+\.|[-*+])\s", body, re.M)),
        "bold_count": len(re.findall(r"\*\*[^*\n]+\*\*|__[^_\n]+__", body)),
    }


def build_items() -> list[dict]:
    """One row per (prompt, model): the answer and whether it is correct (and what is wrong if not)."""
    rows = []
    for i, entry in enumerate(ENTRIES):
        for model, style in MODELS.items():
            correct = is_correct(model, entry)
            rows.append({"item_id": item_id(i), "prompt": entry.prompt, "category": entry.category,
                         "model": model, "answer": style(entry, i), "correct": correct,
                         "flaw": None if correct else entry.flaw})
    return rows


def build_pairs(items: list[dict]) -> list[dict]:
    """Judge input: one row per item and model pair in :data:`JUDGE_PAIRS`."""
    answers = {(r["item_id"], r["model"]): r for r in items}
    rows = []
    for i, entry in enumerate(ENTRIES):
        for x, y in JUDGE_PAIRS:
            rows.append({"item_id": item_id(i), "prompt": entry.prompt,
                         "model_x": x, "answer_x": answers[item_id(i), x]["answer"],
                         "model_y": y, "answer_y": answers[item_id(i), y]["answer"]})
    return rows


def davidson_probs(u_a: float, u_b: float, nu: float) -> tuple[float, float, float]:
    """P(A wins), P(B wins), P(tie) under Davidson (1970), "On extending the Bradley-Terry model to
    accommodate ties": P(A) ∝ exp(u_a), P(B) ∝ exp(u_b), P(tie) ∝ nu * exp((u_a + u_b) / 2)."""
    m = max(u_a, u_b)
    ea, eb = math.exp(u_a - m), math.exp(u_b - m)
    et = nu * math.sqrt(ea * eb)
    z = ea + eb + et
    return ea / z, eb / z, et / z


def simulate_battles(items: list[dict], seed: int = SEED, n_votes: int = N_VOTES) -> list[dict]:
    """Seeded votes: a voter (Zipf-like activity), an item, a model pair in random order, then an outcome
    from Davidson-BT with utility ``strength + LENGTH_COEF * log(words)``."""
    rng = random.Random(seed)
    answers = {(r["item_id"], r["model"]): r["answer"] for r in items}
    log_words = {key: math.log(word_count(ans)) for key, ans in answers.items()}
    style = {key: {"tokens": word_count(ans), **markdown_counts(ans)} for key, ans in answers.items()}
    pairs = list(itertools.combinations(MODELS, 2))
    voters = [f"voter-{k:02d}" for k in range(1, N_VOTERS + 1)]
    cum = list(itertools.accumulate(1.0 / (k + 1) ** 0.7 for k in range(N_VOTERS)))
    tstamp = START_TSTAMP
    rows = []
    for _ in range(n_votes):
        voter = voters[bisect.bisect_right(cum, rng.random() * cum[-1])]
        i = int(rng.random() * len(ENTRIES))
        a, b = pairs[int(rng.random() * len(pairs))]
        if rng.random() < 0.5:
            a, b = b, a
        key_a, key_b = (item_id(i), a), (item_id(i), b)
        u_a = TRUE_STRENGTH[a] + LENGTH_COEF * log_words[key_a]
        u_b = TRUE_STRENGTH[b] + LENGTH_COEF * log_words[key_b]
        p_a, p_b, _ = davidson_probs(u_a, u_b, DAVIDSON_NU)
        r = rng.random()
        if r < p_a:
            winner = "model_a"
        elif r < p_a + p_b:
            winner = "model_b"
        else:
            winner = "tie (bothbad)" if rng.random() < BOTHBAD_SHARE else "tie"
        tstamp += -MEAN_GAP_S * math.log(1.0 - rng.random())
        meta: dict[str, int] = {}
        for side, key in (("a", key_a), ("b", key_b)):
            meta[f"sum_assistant_{side}_tokens"] = style[key]["tokens"]
            for name in ("header_count", "list_count", "bold_count"):
                meta[f"{name}_{side}"] = style[key][name]
        rows.append({"model_a": a, "model_b": b, "winner": winner, "judge": voter, "tstamp": round(tstamp, 2),
                     "question_id": item_id(i), "category": ENTRIES[i].category, "language": "en",
                     "anony": True, "conv_metadata": meta})
    return rows


def build_truth(items: list[dict], battles: list[dict]) -> dict:
    """The simulation's parameters plus what it realised, for checking fitted leaderboards."""
    n = len(battles)
    ties = sum(b["winner"].startswith("tie") for b in battles)
    words = {m: sum(word_count(r["answer"]) for r in items if r["model"] == m) / len(ENTRIES) for m in MODELS}
    return {
        "seed": SEED, "n_votes": n, "n_voters": N_VOTERS, "n_items": len(ENTRIES),
        "strengths": TRUE_STRENGTH,
        "strengths_scale": "natural-log Bradley-Terry; P(A beats B, no tie, no length effect) = "
                           "1 / (1 + exp(s_B - s_A)); centred to sum 0",
        "elo": {m: round(1000 + 400 / math.log(10) * s, 1) for m, s in TRUE_STRENGTH.items()},
        "length_coef": LENGTH_COEF,
        "length_feature": "log(word count of the answer), added to the strength as LENGTH_COEF * log(words)",
        "tie_model": "davidson", "davidson_nu": DAVIDSON_NU, "bothbad_share_of_ties": BOTHBAD_SHARE,
        "realised_tie_rate": round(ties / n, 4),
        "mean_words": {m: round(w, 1) for m, w in words.items()},
        "comet_wrong_items": sorted({r["item_id"] for r in items if not r["correct"]}),
    }


PROVENANCE = """# Demo data — provenance

**Who wrote it.** Every prompt and every answer in this folder was written by the preflab project for
preflab, by hand, in `content_knowledge.py`, `content_code.py` and `content_craft.py`; no third-party text
was used. `make_demo.py` (standard library only, deterministic) composes the answers and writes the files:

    python data/demo/make_demo.py            # rewrites this folder; tests check it is byte-identical

**Licence.** Same as the project: Apache-2.0.

**What is here.**

| file | rows | what |
|---|---|---|
| `items.jsonl` | {n_items} | one row per answer: `item_id, prompt, category, model, answer, correct, flaw` |
| `pairs.jsonl` | {n_pairs} | judge input, every item x six model pairs (below): `item_id, prompt, model_x, answer_x, model_y, answer_y` |
| `battles.jsonl` | {n_votes} | simulated human votes, Chatbot Arena layout (loads with `arena.io.load_battles`) |
| `truth.json` | - | the simulation's true parameters and what it realised |

{n_prompts} prompts, 8 each of: facts, how-to, coding, writing, reasoning.

**The five fictional models** (composed in `styles.py` from the same per-prompt material):

| model | designed behaviour | mean words |
|---|---|---|
{model_rows}

Judge pairs (each with a designed difference): {pair_list}.

comet-sloppy is wrong on {n_wrong} of {n_prompts} prompts ({wrong_ids}); `correct` is false there and `flaw`
says what is wrong (a wrong fact, buggy code, a broken writing constraint, a wrong puzzle answer). Every
other answer is correct. The HTML how-to (demo-009) and the HTML-escaping coding prompt (demo-019) put
`<b>`, `<strong>` and `<script>` inside code blocks: the app must display them as text.

**How the votes were simulated.** {n_votes} votes from {n_voters} voters (`voter-01` ... `voter-{n_voters}`,
Zipf-like activity, so a few voters cast most votes), seed {seed}. Each vote picks an item and a model pair
uniformly, shows them in random order, and draws the outcome from a Bradley-Terry model with Davidson ties:
utility u = s(model) + {length_coef} * log(words in the answer), P(A) ∝ exp(u_A), P(B) ∝ exp(u_B),
P(tie) ∝ {nu} * exp((u_A + u_B) / 2); {bothbad_pct}% of ties are recorded as `tie (bothbad)`. True strengths
(natural-log scale; Elo = 1000 + 400/ln 10 * s):

| model | s | Elo |
|---|---|---|
{strength_rows}

Realised tie rate: {tie_pct}%. Votes depend on the model and the answer's length only, not on whether a
single answer is correct. The length term is mild and, because length mostly follows the model, weakly
identified in 1,500 votes (its maximum-likelihood standard error is about 0.23 here); the generator test in
`tests/arena/test_demo_data.py` recovers it, and every strength, from 60,000 simulated votes. In this
1,500-vote sample atlas-terse happens to land about 0.2 (some 3 sampling SDs) above its true strength, level
with ember-balanced. `conv_metadata` holds word counts (as `sum_assistant_*_tokens`) and markdown totals
(header lines, list items, bold spans, outside code blocks) computed from the answers.
"""

DESIGN = {
    "atlas-terse": "short and correct: the core answer (and code) only",
    "beacon-verbose": "correct but long; headers, bullet lists, bold, generic extra advice",
    "comet-sloppy": "medium length, unformatted; sometimes wrong or buggy",
    "delta-padded": "correct core padded with filler and repeated twice",
    "ember-balanced": "good: correct core, code where needed, one short list",
}


def provenance(items: list[dict], pairs: list[dict], truth: dict) -> str:
    """PROVENANCE.md, filled with the counts and parameters of this generation."""
    return PROVENANCE.format(
        n_items=len(items), n_pairs=len(pairs), n_votes=truth["n_votes"], n_prompts=len(ENTRIES),
        n_voters=N_VOTERS, seed=SEED, length_coef=LENGTH_COEF, nu=DAVIDSON_NU,
        bothbad_pct=round(100 * BOTHBAD_SHARE), tie_pct=round(100 * truth["realised_tie_rate"], 1),
        pair_list=", ".join(f"{x} vs {y}" for x, y in JUDGE_PAIRS),
        n_wrong=len(truth["comet_wrong_items"]), wrong_ids=", ".join(truth["comet_wrong_items"]),
        model_rows="\n".join(f"| `{m}` | {DESIGN[m]} | {truth['mean_words'][m]} |" for m in MODELS),
        strength_rows="\n".join(f"| `{m}` | {s:+.2f} | {truth['elo'][m]} |" for m, s in TRUE_STRENGTH.items()),
    )


def write_jsonl(rows: list[dict], path: Path) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent,
                        help="folder to write into (default: this folder)")
    out = parser.parse_args(argv).out
    out.mkdir(parents=True, exist_ok=True)
    items = build_items()
    pairs = build_pairs(items)
    battles = simulate_battles(items)
    truth = build_truth(items, battles)
    write_jsonl(items, out / "items.jsonl")
    write_jsonl(pairs, out / "pairs.jsonl")
    write_jsonl(battles, out / "battles.jsonl")
    (out / "truth.json").write_text(json.dumps(truth, indent=2) + "\n", encoding="utf-8", newline="\n")
    (out / "PROVENANCE.md").write_text(provenance(items, pairs, truth), encoding="utf-8", newline="\n")
    print(f"wrote {len(items)} items, {len(pairs)} pairs, {len(battles)} battles to {out}")


if __name__ == "__main__":
    main()
