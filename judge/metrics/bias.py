"""A judge's biases: position (two-order and one-order), length, and preference for its own family.

Inputs are outcome codes by identity (:mod:`judge.verdicts.pairs`): in order ``xy`` the first slot holds x, in
``yx`` it holds y, so "picked the first slot" is ``judge_xy == X`` or ``judge_yx == Y``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

from judge.stats import Interval, clustered_wilson_interval, paired_bootstrap, wilson_interval, z_value
from judge.verdicts.judged_pairs import usable
from preflab.outcomes import Outcome


def position_bias(judge_xy: np.ndarray, judge_yx: np.ndarray, level: float = 0.95) -> dict:
    """Consistency and first-position preference over pairs judged in both orders (seed ``position_bias``).

    - consistency: same winner by identity in both orders (Zheng et al. 2023), Wilson interval;
    - first_position_rate: share of all 2P verdicts that picked the first slot, with a Wilson interval over
      pairs (:func:`judge.stats.clustered_wilson_interval`: the effective sample size of P pairs of two
      correlated verdicts; a Wilson over 2P independent verdicts covered 0.885 with 75% inconsistent pairs);
      without tie verdicts it equals ½ + (first_first − second_second) / (2P), which is checked
      (``identity_rate``, ``identity_holds``);
    - the "Judging the Judges" view (Shi et al. 2024): primacy count (first slot both times), recency count
      (second slot both times), position consistency, and preference fairness as (recency − primacy) / P
      in [−1, 1]: 0 is fair, positive favours the answer shown second (the sign convention of the paper's
      score; the paper rescales by its own min–max bounds, so magnitudes are not comparable with it).
    Pairs missing an order or with an unparsable verdict are left out and counted.
    """
    xy, yx = np.asarray(judge_xy, dtype=float), np.asarray(judge_yx, dtype=float)
    both = usable(xy) & usable(yx)
    xy, yx = xy[both], yx[both]
    p = int(both.sum())
    first_xy, first_yx = xy == Outcome.FIRST, yx == Outcome.SECOND
    second_xy, second_yx = xy == Outcome.SECOND, yx == Outcome.FIRST
    first_first = int(np.sum(first_xy & first_yx))
    second_second = int(np.sum(second_xy & second_yx))
    tie_verdicts = int(np.sum(xy == Outcome.TIE) + np.sum(yx == Outcome.TIE))
    identity = 0.5 + (first_first - second_second) / (2 * p) if p else float("nan")
    # Over pairs: a pair's two verdicts are not independent (an inconsistent pair picks the same slot twice).
    first_rate = clustered_wilson_interval(first_xy.astype(float) + first_yx, np.full(p, 2.0), level)
    return {
        "n_pairs": p,
        "n_left_out": int((~both).sum()),
        "consistency": wilson_interval(int(np.sum(xy == yx)), p, level).as_dict(),
        "first_position_rate": first_rate.as_dict(),
        "identity_rate": identity,
        "identity_holds": bool(tie_verdicts > 0 or np.isclose(identity, first_rate.value)),
        "tie_verdicts": tie_verdicts,
        "primacy_count": first_first,
        "recency_count": second_second,
        "preference_fairness": (second_second - first_first) / p if p else float("nan"),
    }


def outcome_counts(code: np.ndarray) -> dict[str, int]:
    """``{"a", "b", "tie", "unparsable"}`` counts (a = x wins, b = y wins — the seed's identity names)."""
    code = np.asarray(code, dtype=float)
    return {"a": int(np.sum(code == Outcome.FIRST)), "b": int(np.sum(code == Outcome.SECOND)),
            "tie": int(np.sum(code == Outcome.TIE)), "unparsable": int(np.sum(code == Outcome.UNPARSABLE))}


def _difference_interval(a: np.ndarray, b: np.ndarray, level: float) -> Interval:
    """mean(a) − mean(b) with a Welch normal interval (values in [0, 1]: wins, half ties, or probabilities)."""
    diff = a.mean() - b.mean()
    se = np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    z = z_value(level)
    return Interval(float(diff), float(diff - z * se), float(diff + z * se), level)


def one_order_position_bias(win_x: np.ndarray, x_shown_first: np.ndarray, level: float = 0.95) -> dict:
    """Position bias from one-order data when the shown order is known per pair (e.g. AlpacaEval's coin).

    ``win_x`` is the judge's score for x per pair (1 win, 0 loss, ½ tie, or its probability). Since the
    order was randomised, P(x wins | x shown first) − P(x wins | x shown second) estimates the advantage
    of the first slot (negative: the judge favours the answer shown second), with a Welch interval.
    When every pair was shown in the same order, returns the first slot's win rate among decisive
    verdicts (a Wilson interval) — confounded with which answer was put first.
    """
    win_x = np.asarray(win_x, dtype=float)
    first = np.asarray(x_shown_first, dtype=bool)
    ok = ~np.isnan(win_x)
    win_x, first = win_x[ok], first[ok]
    if first.all() or (~first).all():
        first_wins = win_x if first.all() else 1 - win_x
        decisive = (first_wins == 0) | (first_wins == 1)
        rate = wilson_interval(int(first_wins[decisive].sum()), int(decisive.sum()), level)
        return {"n": int(ok.sum()), "design": "fixed order", "first_win_rate": rate.as_dict(),
                "favours": "first" if rate.lower > 0.5 else "second" if rate.upper < 0.5 else "neither"}
    diff = _difference_interval(win_x[first], win_x[~first], level)
    return {
        "n": int(ok.sum()),
        "design": "randomised order",
        "win_when_first": float(win_x[first].mean()),
        "win_when_second": float(win_x[~first].mean()),
        "first_minus_second": diff.as_dict(),
        "favours": "first" if diff.lower > 0 else "second" if diff.upper < 0 else "neither",
    }


def logistic_slope(y: np.ndarray, x: np.ndarray, level: float = 0.95, n_iter: int = 50) -> Interval:
    """Slope of a logistic regression ``P(y=1) = σ(b0 + b1 x)`` by Newton–Raphson, with a Wald interval.

    Maximum likelihood (McCullagh & Nelder 1989); the standard error comes from the inverse Fisher information.
    """
    y, x = np.asarray(y, dtype=float), np.asarray(x, dtype=float)
    design = np.column_stack([np.ones_like(x), x])
    beta = np.zeros(2)
    for _ in range(n_iter):
        p = 1 / (1 + np.exp(-design @ beta))
        info = design.T @ (design * (p * (1 - p))[:, None])
        step = np.linalg.solve(info, design.T @ (y - p))
        beta += step
        if np.max(np.abs(step)) < 1e-10:
            break
    p = 1 / (1 + np.exp(-design @ beta))
    se = float(np.sqrt(np.linalg.inv(design.T @ (design * (p * (1 - p))[:, None]))[1, 1]))
    z = z_value(level)
    return Interval(float(beta[1]), float(beta[1] - z * se), float(beta[1] + z * se), level)


def length_bias(judge: np.ndarray, len_x: np.ndarray, len_y: np.ndarray, human: np.ndarray | None = None,
                threshold: float = 0.0, level: float = 0.95) -> dict:
    """Does the judge prefer the longer answer, beyond what humans do? (verbosity bias, Zheng et al. 2023).

    - ``judge_prefers_longer``: P(judge picks the longer answer) over decisive verdicts on pairs whose
      lengths differ by more than ``threshold`` (Wilson); ``human_prefers_longer`` the same rate for humans;
    - ``slope``: logistic slope of "x wins" on the standardised length difference (len_x − len_y) / sd over
      decisive verdicts — log-odds per standard deviation of length difference (Wald interval).
    """
    judge = np.asarray(judge, dtype=float)
    diff = np.asarray(len_x, dtype=float) - np.asarray(len_y, dtype=float)

    def prefers_longer(code: np.ndarray) -> dict:
        use = (np.abs(diff) > threshold) & ((code == Outcome.FIRST) | (code == Outcome.SECOND))
        longer_won = ((code == Outcome.FIRST) & (diff > 0)) | ((code == Outcome.SECOND) & (diff < 0))
        return {"n": int(use.sum()), **wilson_interval(int(longer_won[use].sum()), int(use.sum()), level).as_dict()}

    decisive = ((judge == Outcome.FIRST) | (judge == Outcome.SECOND)) & ~np.isnan(diff)
    sd = diff[decisive].std() if decisive.sum() > 2 else 0.0  # too few decisive verdicts: no slope
    slope = (logistic_slope(judge[decisive] == Outcome.FIRST, diff[decisive] / sd, level).as_dict()
             if sd > 0 else {"value": float("nan"), "lower": float("nan"), "upper": float("nan")})
    out = {"threshold": threshold, "judge_prefers_longer": prefers_longer(judge), "slope": slope}
    if human is not None:
        out["human_prefers_longer"] = prefers_longer(np.asarray(human, dtype=float))
    return out


def pad_answer(answer: str, n_items: int = 5) -> str:
    """The seed's "repetitive list" padding attack: append a list restating the answer's first sentence.

    Adds length and structure without new content; a length-robust judge should not prefer the result.
    """
    first = re.split(r"(?<=[.!?])\s+", answer.strip(), maxsplit=1)[0][:200] or answer.strip()[:200]
    lines = [f"{i}. {phrase}" for i, phrase in enumerate(
        [first, "To restate: " + first, "In other words: " + first, "Key point: " + first,
         "To summarise: " + first] * (n_items // 5 + 1), start=1)][:n_items]
    return answer.rstrip() + "\n\nKey takeaways:\n" + "\n".join(lines)


def padding_attack_pairs(items: pd.DataFrame, n_items: int = 5) -> pd.DataFrame:
    """Pairs (original, padded twin) for a judge run, in the shared ``pairs.jsonl`` layout.

    ``items`` has ``item_id, prompt, model, answer`` (``data/demo/items.jsonl``); x is the original, y
    the padded twin (model name suffixed ``+padded``). Judge it in both orders; the share of padded wins
    is the attack's success rate (0.5 or less for a robust judge, ties counted half).
    """
    missing = {"item_id", "prompt", "model", "answer"} - set(items.columns)
    if missing:
        raise ValueError(f"items need columns {sorted(missing)} (the data/demo/items.jsonl layout)")
    return pd.DataFrame({
        "item_id": items["item_id"].astype(str) + "/" + items["model"].astype(str) + "/padded",
        "prompt": items["prompt"],
        "model_x": items["model"],
        "answer_x": items["answer"],
        "model_y": items["model"].astype(str) + "+padded",
        "answer_y": [pad_answer(a, n_items) for a in items["answer"]],
    })


def score_x(code: np.ndarray) -> np.ndarray:
    """x's score per pair: 1 win, 0 loss, ½ tie, NaN when unparsable or absent."""
    code = np.asarray(code, dtype=float)
    return np.select([code == Outcome.FIRST, code == Outcome.SECOND, code == Outcome.TIE], [1.0, 0.0, 0.5],
                     default=np.nan)


def self_preference(judge: np.ndarray, human: np.ndarray, model_x: np.ndarray, model_y: np.ndarray,
                    family: Mapping[str, str], judge_family: str, n_bootstrap: int = 1000,
                    level: float = 0.95, seed: int = 0) -> dict:
    """Judge's win rate for its own family's answers minus the humans' rate on the same pairs (ties ½).

    Uses pairs where exactly one answer comes from ``judge_family`` (``family`` maps model → family) and
    both a judge verdict and a human label exist; paired percentile bootstrap over those pairs
    (Panickssery et al. 2024 measure self-recognition; this is the human-anchored version).
    """
    fx = np.array([family.get(str(m)) == judge_family for m in model_x])
    fy = np.array([family.get(str(m)) == judge_family for m in model_y])
    own_x = fx & ~fy
    use = (fx ^ fy) & ~np.isnan(score_x(judge)) & ~np.isnan(np.asarray(human, dtype=float))
    j = np.where(own_x, score_x(judge), 1 - score_x(judge))[use]
    h = np.where(own_x, score_x(human), 1 - score_x(human))[use]
    if j.size == 0:
        nan = float("nan")
        return {"n": 0, "judge_family": judge_family, "judge_rate": nan, "human_rate": nan,
                "difference": {"value": nan, "lower": nan, "upper": nan}}
    diff = paired_bootstrap(h, j, n_bootstrap=n_bootstrap, level=level, seed=seed)
    return {"n": int(j.size), "judge_family": judge_family, "judge_rate": float(j.mean()),
            "human_rate": float(h.mean()),
            "difference": diff.as_dict()}
