"""Null baselines: what an uninformative rule reaches against the same labels, and whether the judge beats it.

Three rules, each scored exactly as the judge is (:func:`judge.metrics.agreement.accuracy`: ties count, a missing
verdict is a disagreement), each with its Wilson interval:

- ``longer answer``: x when ``len_x > len_y``, y when shorter, a tie when equal (AlpacaEval's length
  baseline: Dubois et al. 2024 report it agrees with humans ~62% of the time);
- ``first slot``: the answer shown first, in every order that was judged (so with both orders it is right
  on half of each decided pair's verdicts); the agreement is over (pair, order) verdicts with a Wilson
  interval clustered by pair (:func:`judge.stats.clustered_wilson_interval`). Absent when the data has no
  slots (a reward model scores answers alone);
- ``majority class``: always the most frequent label (taken from these labels: an in-sample upper bound).

The judge against the best of them and against the longer answer: a **paired bootstrap over pairs**
(:func:`judge.stats.paired_bootstrap`) of the difference in agreement. Paired because the rules are scored
on the same pairs (their errors correlate); a bootstrap rather than McNemar's test because the first-slot
rule scores a fraction per pair (½ with both orders) and agreement counts three classes, which McNemar's
discordant-pair count does not cover, and because the card reports the difference with its interval. The
best baseline is picked on the same labels, so the comparison with it is slightly favourable to the baseline.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from judge.metrics import agreement as agr
from judge.stats import clustered_wilson_interval, paired_bootstrap
from judge.verdicts.judged_pairs import column, has
from preflab.outcomes import Outcome


def longer_answer_codes(len_x: np.ndarray, len_y: np.ndarray) -> np.ndarray:
    """The longer answer as an identity code (equal lengths: tie; unknown length: NaN)."""
    lx, ly = np.asarray(len_x, dtype=float), np.asarray(len_y, dtype=float)
    code = np.where(lx > ly, Outcome.FIRST, np.where(lx < ly, Outcome.SECOND, Outcome.TIE)).astype(float)
    return np.where(np.isnan(lx) | np.isnan(ly), np.nan, code)


def majority_class_codes(human: np.ndarray) -> np.ndarray:
    """The most frequent label (ties between classes broken by code order) for every pair."""
    h = np.asarray(human, dtype=float)
    seen = h[~np.isnan(h)].astype(int)
    return np.full(h.shape, float(np.bincount(seen).argmax()) if seen.size else np.nan)


def first_slot_correct(judged_xy: np.ndarray, judged_yx: np.ndarray, human: np.ndarray) -> tuple[np.ndarray,
                                                                                                  np.ndarray]:
    """Per pair: (verdicts where "the first slot" equals the label, orders judged). x is first in ``xy``."""
    h = np.asarray(human, dtype=float)
    xy, yx = np.asarray(judged_xy, dtype=bool), np.asarray(judged_yx, dtype=bool)
    hits = (xy & (h == Outcome.FIRST)).astype(float) + (yx & (h == Outcome.SECOND)).astype(float)
    return hits, xy.astype(float) + yx.astype(float)


def _correct(code: np.ndarray, human: np.ndarray) -> np.ndarray:
    return (np.where(np.isnan(code), Outcome.UNPARSABLE, code) == human).astype(float)


def _row(name: str, agreement: Mapping, correct: np.ndarray) -> dict:
    return {"name": name, "agreement": dict(agreement), "correct": correct}


def null_baselines(pairs: pd.DataFrame, judge: np.ndarray, level: float = 0.95, n_bootstrap: int = 1000,
                   seed: int = 0) -> dict | None:
    """The baselines' agreement with the labels and the paired test of ``judge`` (codes) against the best one
    and against the longer answer. None without labels."""
    human = column(pairs, "human")
    labelled = ~np.isnan(human)
    if not labelled.any():
        return None
    h = human[labelled]
    rows = []
    if has(pairs, "len_x") and has(pairs, "len_y"):
        code = longer_answer_codes(column(pairs, "len_x"), column(pairs, "len_y"))[labelled]
        rows.append(_row("longer answer", agr.accuracy(code, h, True, level), _correct(code, h)))
    if pairs.attrs.get("orders") != "none" and (has(pairs, "judge_xy") or has(pairs, "judge_yx")):
        hits, trials = first_slot_correct(~np.isnan(column(pairs, "judge_xy")), ~np.isnan(column(pairs, "judge_yx")),
                                          human)
        hits, trials = hits[labelled], trials[labelled]
        ok = trials > 0
        if ok.any():
            ci = clustered_wilson_interval(hits[ok], trials[ok], level)
            per_pair = np.where(ok, hits / np.maximum(trials, 1), 0.0)
            rows.append(_row("first slot", {"n": int(ok.sum()), "verdicts": int(trials.sum()), **ci.as_dict()},
                             per_pair))
    code = majority_class_codes(h)
    rows.append(_row("majority class", agr.accuracy(code, h, True, level), _correct(code, h)))
    judged = _correct(np.asarray(judge, dtype=float)[labelled], h)
    best = max(rows, key=lambda r: r["agreement"]["value"])
    out = {"rows": [{k: v for k, v in r.items() if k != "correct"} for r in rows], "best": best["name"],
           "test": "paired bootstrap over pairs of judge agreement minus baseline agreement",
           "judge_minus_best": paired_bootstrap(best["correct"], judged, n_bootstrap, level, seed).as_dict(),
           "judge_minus_longer": None, "beats_best": None, "beats_longer": None}
    out["beats_best"] = out["judge_minus_best"]["lower"] > 0
    longer = next((r for r in rows if r["name"] == "longer answer"), None)
    if longer is not None:
        out["judge_minus_longer"] = paired_bootstrap(longer["correct"], judged, n_bootstrap, level, seed).as_dict()
        out["beats_longer"] = out["judge_minus_longer"]["lower"] > 0
    return out


def baseline_rows(baselines: Mapping | None, labels: str = "humans") -> list[tuple[str, str]]:
    """The card's rows (the judge card and the jury card): each baseline, then the judge against the best."""
    from judge.report_text import format_interval

    if not baselines:
        return []
    rows = [(f"null baseline: {r['name']} (agreement with {labels})", format_interval(r["agreement"])
             + f" (n {r['agreement']['n']})") for r in baselines["rows"]]
    rows.append((f"judge − best baseline ({baselines['best']}; paired bootstrap over pairs)",
                 format_interval(baselines["judge_minus_best"])))
    if baselines.get("judge_minus_longer") and baselines["best"] != "longer answer":
        rows.append(("judge − longer answer (paired bootstrap over pairs)",
                     format_interval(baselines["judge_minus_longer"])))
    return rows


def baseline_uses(report: Mapping) -> tuple[list[str], list[str]]:
    """The card's advice: say plainly when the judge does not beat the longer answer (or the best baseline)."""
    b = report.get("baselines")
    if not b:
        return [], []
    avoid = []
    if b.get("beats_longer") is False:
        d = b["judge_minus_longer"]
        avoid.append(f"anything the longer answer would do as well: the judge does not beat \"pick the longer "
                     f"answer\" (difference {d['value']:+.3f} [{d['lower']:+.3f}, {d['upper']:+.3f}])")
    if not b.get("beats_best") and b["best"] != "longer answer":
        d = b["judge_minus_best"]
        avoid.append(f"claims of skill: the judge does not beat the {b['best']} baseline (difference "
                     f"{d['value']:+.3f} [{d['lower']:+.3f}, {d['upper']:+.3f}])")
    return [], avoid
