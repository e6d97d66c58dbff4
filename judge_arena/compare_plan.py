"""``preflab compare --plan``: what a gate on these prompts can detect, and what judging them costs. It needs
both the judge's call count and price (:mod:`judge`) and the exact sign test's power
(:mod:`arena.simulation.power`), so it lives here, above both."""

from __future__ import annotations

from pathlib import Path

from arena.simulation.power import sign_test_power
from llm.calls.spend import spec_price
from preflab.errors import InputError


def compare_plan(n_prompts: int, rubrics: int, judge: str | None, mean_chars: float, alpha: float, power: float = 0.80,
         tie_rate: float = 0.0) -> dict:
    """The smallest win rate the exact sign test detects at ``power`` with these prompts, the judge calls
    (both orders, every rubric) and their cost at the price table (unknown prices say so)."""
    for flag, value, ok in (("--alpha", alpha, 0 < alpha < 1), ("--tie-rate", tie_rate, 0 <= tie_rate < 1)):
        if not ok:
            raise InputError("<options>", None, flag, f"{value:g} is out of range",
                             "give --alpha in (0, 1) and --tie-rate in [0, 1)")
    decisive = int(round(n_prompts * (1 - tie_rate)))
    lo, hi = 0.5, 1.0 - 1e-9
    if decisive == 0 or sign_test_power(decisive, hi, alpha) < power:
        mdw = None
    else:
        for _ in range(60):  # power rises with the win rate at fixed n: bisect
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if sign_test_power(decisive, mid, alpha) < power else (lo, mid)
        mdw = hi
    calls = n_prompts * 2 * rubrics
    tokens_in = calls * (mean_chars / 4 + 150)  # the rubric's instructions are about 150 tokens
    cost, price_known = None, False
    if judge:
        price = spec_price(judge)
        price_known = price is not None
        cost = price.cost(tokens_in, calls * 3) if price_known else None  # 3 verdict tokens a call
    return {"prompts": n_prompts, "decisive_assumed": decisive, "tie_rate_assumed": tie_rate, "alpha": alpha,
            "power": power, "min_detectable_win_rate": mdw, "rubrics": rubrics, "judge_calls": calls,
            "estimated_tokens_in": int(tokens_in), "cost": cost, "price_known": price_known, "judge": judge}


def plan_for_items(items: Path | None, rubrics: int, judge: str | None, alpha: float, tie_rate: float = 0.0) -> dict:
    """:func:`compare_plan` for the prompts of an items file (their mean prompt + answers length sizes the calls);
    at least one rubric is planned for."""
    from judge.gate.compare_inputs import load_answers

    if items is None:
        raise InputError("<items>", None, None, "--plan needs the items file", "pass the prompts to plan for")
    answers = load_answers(items)
    n = len(answers.prompts)
    chars = sum(len(p) for p in answers.prompts.values()) / max(n, 1) + sum(
        len(a) for by in answers.answers.values() for a in by.values()) / max(n, 1)
    return compare_plan(n, max(rubrics, 1), judge, chars, alpha, tie_rate=tie_rate)
