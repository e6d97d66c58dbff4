"""Did the change help? A paired A/B gate over judged rubrics: both versions answer the same prompts, a judge
compares each pair in both orders, and every rubric ("dimension") gets an exact sign test.

Per dimension: candidate wins, base wins and ties under the conservative rule (the two orders must agree,
Zheng et al. 2023), how many ties are position flips (the orders disagree), the win rate over decisive pairs
with its Wilson interval, the exact two-sided sign-test p-value (:func:`judge.stats.sign_test`) and Holm's
correction across the run's dimensions (:func:`judge.stats.holm_adjust`). Three checks ride along: length
(do wins go to the longer answer?), the judge's flip rate, and pairs of identical answers that did not tie.
A guard dimension that is significantly worse fails the gate.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from judge.gate.compare_inputs import Answers
from judge.stats import Interval, holm_adjust, sign_test, wilson_interval
from judge.verdicts.judged_pairs import combine_order_codes
from preflab.errors import InputError
from preflab.outcomes import Outcome
from preflab.text import word_count

VERDICTS = ("better", "worse", "no evidence")


@dataclass(frozen=True)
class GateSettings:
    """How a comparison decides: ``alpha`` after Holm's correction, the dimensions that must not regress,
    and the flip rate above which a judge is not usable for a rubric."""

    alpha: float = 0.05
    guards: tuple[str, ...] = ()
    flip_warning: float = 0.20
    level: float = 0.95

    def __post_init__(self) -> None:
        for flag, value in (("--alpha", self.alpha), ("level", self.level)):
            if not 0 < value < 1:
                raise InputError("<options>", None, flag, f"{value:g} is not between 0 and 1",
                                 "give a probability such as 0.05")


@dataclass(frozen=True)
class DimensionCounts:
    """One dimension's pairs, each once, from the candidate's side."""

    dimension: str
    wins: int
    losses: int
    ties: int
    inconsistent: int  # ties because the two orders disagreed (position flips)
    unjudged: int  # pairs missing an order or with an unparsable verdict: left out, counted
    both_orders: bool

    @property
    def decisive(self) -> int:
        return self.wins + self.losses

    @property
    def judged(self) -> int:
        return self.wins + self.losses + self.ties


def pair_outcomes(codes: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(outcome per pair with the candidate as x, orders-disagree flag) under the conservative rule;
    with one order only, that order's verdict. Unjudged pairs are :data:`UNPARSABLE`."""
    xy, yx = codes["judge_xy"].to_numpy(float), codes["judge_yx"].to_numpy(float)
    one_order = np.isnan(yx).all() or np.isnan(xy).all()
    if one_order:
        single = np.where(np.isnan(xy), yx, xy)
        return np.where(np.isnan(single), Outcome.UNPARSABLE, single), np.zeros(len(xy), bool)
    combined = combine_order_codes(xy, yx, require_both=True)["conservative"]
    valid = (combined != Outcome.UNPARSABLE)
    return combined, valid & (xy != yx)


def count_dimension(dimension: str, codes: pd.DataFrame) -> DimensionCounts:
    """Wins, losses, ties and flips of one dimension's candidate-as-x codes."""
    outcome, flipped = pair_outcomes(codes)
    both = not (codes["judge_yx"].isna().all() or codes["judge_xy"].isna().all())
    return DimensionCounts(dimension, int(np.sum(outcome == Outcome.FIRST)), int(np.sum(outcome == Outcome.SECOND)),
                           int(np.sum(outcome == Outcome.TIE)), int(flipped.sum()),
                           int(np.sum(outcome == Outcome.UNPARSABLE)), both)


def dimension_rows(counts: Sequence[DimensionCounts], settings: GateSettings,
                   p_values: Sequence[float] | None = None,
                   intervals: Sequence[Interval] | None = None) -> list[dict]:
    """The stable JSON rows: counts, Wilson win rate, exact sign-test p, Holm p, verdict, flip rate.

    ``p_values`` / ``intervals`` replace the fixed-n sign test and Wilson interval (the sequential mode's
    anytime-valid ones)."""
    tests = [sign_test(c.wins, c.losses, settings.level) for c in counts]
    ps = [t.p_value for t in tests] if p_values is None else list(p_values)
    holm = holm_adjust(np.asarray(ps, float)) if ps else np.array([])
    rows = []
    for i, (c, t) in enumerate(zip(counts, tests, strict=True)):
        rate = t.win_rate if intervals is None else intervals[i]
        significant = bool(holm[i] <= settings.alpha) and c.wins != c.losses
        verdict = ("better" if c.wins > c.losses else "worse") if significant else "no evidence"
        flip = c.inconsistent / c.judged if c.both_orders and c.judged else None
        rows.append({"dimension": c.dimension, "wins": c.wins, "losses": c.losses, "ties": c.ties,
                     "inconsistent": c.inconsistent, "decisive": c.decisive, "unjudged": c.unjudged,
                     "win_rate": rate.as_dict(), "p_value": float(ps[i]), "p_holm": float(holm[i]),
                     "verdict": verdict, "flip_rate": flip})
    return rows


# --------------------------------------------------------------------------------------------- checks
def normalised(text: str) -> str:
    """Text compared for "the same answer": NFKC, case-folded, punctuation dropped, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(re.sub(r"[^\w\s]", " ", text).split())


def length_check(answers: Answers | None, base: str, candidate: str, outcomes: Mapping[str, pd.DataFrame],
                 level: float = 0.95) -> dict:
    """Mean words of each version (:func:`preflab.text.word_count`, as the vote page counts them), and per
    dimension the share of decisive wins that went to the longer answer."""
    if answers is None:
        return {"available": False, "note": "no answers given (pass the items file): lengths unknown"}
    items = [i for i, by in answers.answers.items() if base in by and candidate in by]
    cand = np.array([word_count(answers.answers[i][candidate]) for i in items], float)
    base_w = np.array([word_count(answers.answers[i][base]) for i in items], float)
    longer_cand = dict(zip(items, cand > base_w, strict=True))
    differ = dict(zip(items, cand != base_w, strict=True))
    per_dim = {}
    for dim, df in outcomes.items():
        decisive = df[df["outcome"].isin([Outcome.FIRST, Outcome.SECOND])
                      & df["item_id"].map(differ).fillna(False).astype(bool)]
        x_won = decisive["outcome"] == Outcome.FIRST
        to_longer = int(np.sum(x_won == decisive["item_id"].map(longer_cand).astype(bool)))
        ci = wilson_interval(to_longer, len(decisive), level)
        per_dim[dim] = {"decisive_with_length_difference": len(decisive), "to_longer": to_longer,
                        "share": ci.as_dict()}
    return {"available": True, "mean_words": {"base": float(base_w.mean()) if len(items) else None,
                                              "candidate": float(cand.mean()) if len(items) else None},
            "candidate_shorter_share": float(np.mean(cand < base_w)) if len(items) else None,
            "dimensions": per_dim}


def identical_check(answers: Answers | None, base: str, candidate: str,
                    outcomes: Mapping[str, pd.DataFrame]) -> dict:
    """Pairs whose two answers are the same after :func:`normalised` must tie; how many did not, per dimension."""
    if answers is None:
        return {"available": False, "note": "no answers given (pass the items file): identical pairs unknown"}
    same = {i for i, by in answers.answers.items()
            if base in by and candidate in by and normalised(by[base]) == normalised(by[candidate])}
    per_dim = {}
    for dim, df in outcomes.items():
        rows = df[df["item_id"].isin(same) & (df["outcome"] != Outcome.UNPARSABLE)]
        per_dim[dim] = {"judged": len(rows), "not_tied": int(np.sum(rows["outcome"] != Outcome.TIE))}
    return {"available": True, "identical_pairs": len(same), "dimensions": per_dim}


def _judge_warnings(rows: Sequence[dict], settings: GateSettings) -> list[str]:
    out = []
    for r in rows:
        if r["flip_rate"] is not None and r["flip_rate"] > settings.flip_warning:
            out.append(f"{r['dimension']}: the judge flips with the order on {r['flip_rate']:.0%} of pairs "
                       f"(> {settings.flip_warning:.0%}): not a usable judge for this rubric")
        if r["flip_rate"] is None:
            out.append(f"{r['dimension']}: judged in one order only: position flips cannot be seen")
        if r["unjudged"]:
            out.append(f"{r['dimension']}: {r['unjudged']} pairs left out (an order missing or unparsable)")
    return out


def _length_warnings(length: dict) -> list[str]:
    if not length.get("available"):
        return []
    out = [f"{dim}: {d['share']['value']:.0%} of decisive wins went to the longer answer: the result may measure "
           "length, not quality" for dim, d in length["dimensions"].items()
           if d["share"]["lower"] is not None and d["share"]["lower"] > 0.5]
    mw = length["mean_words"]
    conciseness = any(d.startswith("concis") or d == "terse" for d in length["dimensions"])
    if mw["candidate"] is not None and conciseness and mw["candidate"] >= mw["base"]:
        out.append(f"the candidate's answers are not shorter ({mw['candidate']:.1f} vs {mw['base']:.1f} mean "
                   "words): a conciseness win is not a terser change")
    return out


def warnings_for(rows: Sequence[dict], length: dict, identical: dict, settings: GateSettings) -> list[str]:
    """The checks' warnings, in words: the judge's flips and left-out pairs, length, identical answers."""
    out = _judge_warnings(rows, settings) + _length_warnings(length)
    if identical.get("available"):
        out += [f"{dim}: {d['not_tied']} of {d['judged']} pairs of identical answers did not tie"
                for dim, d in identical["dimensions"].items() if d["not_tied"]]
    return out


def check_lines(checks: Mapping) -> list[str]:
    """The three checks in words, one line each: the console report and the gate report print these."""
    from judge.report_text import format_interval

    length, ident = checks.get("length", {}), checks.get("identical", {})
    if length.get("available"):
        mw = length["mean_words"]
        shares = ", ".join(f"{d} {format_interval(v['share'], pct=True)}" for d, v in length["dimensions"].items())
        lines = [f"length: mean words base {mw['base']:.1f}, candidate {mw['candidate']:.1f}; decisive wins to "
                 f"the longer answer: {shares}"]
    else:
        lines = [f"length: {length.get('note', 'not checked')}"]
    lines.append("flip rate (orders disagree): " + ", ".join(
        f"{d} {'—' if v is None else f'{v:.0%}'}" for d, v in checks.get("flip_rate", {}).items()))
    if ident.get("available"):
        lines.append(f"identical answers: {ident['identical_pairs']} pairs; not tied: " + ", ".join(
            f"{d} {v['not_tied']} of {v['judged']}" for d, v in ident["dimensions"].items()))
    else:
        lines.append(f"identical answers: {ident.get('note', 'not checked')}")
    return lines


def gate(rows: Sequence[dict], settings: GateSettings) -> dict:
    """Which guards were checked and which failed (significantly worse after Holm)."""
    names = [r["dimension"] for r in rows]
    for g in settings.guards:
        if g not in names:
            raise InputError("--guard", None, "guard", f"{g!r} is not a dimension of this run ({', '.join(names)})",
                             "name a rubric passed with --rubric or read from --verdicts")
    failed = [r["dimension"] for r in rows if r["dimension"] in settings.guards and r["verdict"] == "worse"]
    unreliable = [r["dimension"] for r in rows if r["dimension"] in settings.guards
                  and r["flip_rate"] is not None and r["flip_rate"] > settings.flip_warning]
    # A guard whose judge fails its own flip check says nothing: the gate can neither pass nor fail on it.
    return {"checked": list(settings.guards), "failed": failed, "passed": not failed and not unreliable,
            "unreliable": unreliable, "no_verdict": bool(unreliable) and not failed}


def outcome_table(codes: pd.DataFrame) -> pd.DataFrame:
    """``item_id, outcome`` (candidate as x) per pair."""
    outcome, flipped = pair_outcomes(codes)
    return pd.DataFrame({"item_id": codes["item_id"].to_numpy(), "outcome": outcome, "flipped": flipped})


def compare_dimensions(codes: Mapping[str, pd.DataFrame], base: str, candidate: str, settings: GateSettings,
                       answers: Answers | None = None, sequential: Mapping | None = None) -> dict:
    """The judged-rubrics report: ``dimensions`` rows, ``checks``, ``gate``; ``sequential`` carries the
    sequential mode's anytime-valid p-values and intervals (see :mod:`judge.gate.sequential`)."""
    counts = [count_dimension(dim, df) for dim, df in codes.items()]
    seq = sequential or {}
    rows = dimension_rows(counts, settings, seq.get("p_values"), seq.get("intervals"))
    outcomes = {dim: outcome_table(df) for dim, df in codes.items()}
    length = length_check(answers, base, candidate, outcomes, settings.level)
    identical = identical_check(answers, base, candidate, outcomes)
    checks = {"length": length, "flip_rate": {r["dimension"]: r["flip_rate"] for r in rows},
              "flip_warning": settings.flip_warning, "identical": identical,
              "warnings": warnings_for(rows, length, identical, settings)}
    return {"base": base, "candidate": candidate, "alpha": settings.alpha,
            "test": seq.get("test", "exact sign test, Holm across dimensions"),
            "dimensions": rows, "checks": checks, "gate": gate(rows, settings)}
