"""The human ceiling: how well humans agree with each other, the bar a judge's agreement is read against.

With several voters per pair, each vote in turn is held out and compared with the majority of the other
votes on that pair (AlpacaEval's leave-one-out protocol, Dubois et al. 2023); the judge is scored against
the very same references. Agreement and Cohen's kappa (Cohen 1960) come with intervals over pairs: the
votes of one pair share a reference, so agreement uses the cluster-robust Wilson interval and kappa and the
judge − human difference a bootstrap that resamples pairs (Efron & Tibshirani 1993). The judge reaches the
ceiling when that difference's interval includes 0 or lies above it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from judge.metrics.agreement import kappa_from_confusion
from judge.report_text import format_interval as _fmt
from judge.stats import clustered_wilson_interval
from judge.verdicts.judged_pairs import OUTCOMES
from preflab.outcomes import Outcome


def held_out_references(ratings: np.ndarray, min_others: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(pair index, held-out vote, reference) per comparison, and the number skipped for lack of a unique
    majority among the others. A vote is compared when at least ``min_others`` other votes exist."""
    ratings = np.asarray(ratings, dtype=float)
    pair, vote, ref, skipped = [], [], [], 0
    for i, row in enumerate(ratings):
        have = np.flatnonzero(~np.isnan(row))
        for h in have:
            others = row[have[have != h]]
            if others.size < min_others:
                continue
            counts = np.array([(others == c).sum() for c in OUTCOMES])
            if np.sum(counts == counts.max()) > 1:
                skipped += 1
                continue
            pair.append(i)
            vote.append(row[h])
            ref.append(float(OUTCOMES[int(np.argmax(counts))]))
    return np.array(pair, dtype=int), np.array(vote), np.array(ref), skipped


def _kappa(a: np.ndarray, b: np.ndarray, w: np.ndarray) -> float:
    """Cohen's kappa of two code arrays with comparison weights (unparsable is its own category)."""
    cats = 4  # x, y, tie, unparsable
    ia, ib = np.where(a == Outcome.UNPARSABLE, 3, a).astype(int), np.where(b == Outcome.UNPARSABLE, 3, b).astype(int)
    conf = np.bincount(ia * cats + ib, weights=w, minlength=cats * cats).reshape(cats, cats)
    if conf.sum() == 0:
        return float("nan")
    kappa = kappa_from_confusion(conf)
    return 1.0 if np.isnan(kappa) else kappa  # one class on both sides: perfect agreement (as kappa_interval)


def human_ceiling(ratings: np.ndarray, judge: np.ndarray, n_bootstrap: int = 1000, level: float = 0.95,
                  seed: int = 0, min_others: int = 1) -> dict | None:
    """Human–human and judge–human agreement and kappa on the same held-out references (module docstring).

    ``ratings`` is pairs × voters (NaN = no vote), ``judge`` the judge's code per pair (NaN or unparsable =
    no verdict, a disagreement). None when no pair has two votes.
    """
    pair, vote, ref, skipped = held_out_references(ratings, min_others)
    if pair.size == 0:
        return None
    judge = np.where(np.isnan(np.asarray(judge, dtype=float)), Outcome.UNPARSABLE, judge)
    jv = judge[pair]
    clusters, cid = np.unique(pair, return_inverse=True)
    trials = np.bincount(cid).astype(float)
    h_hits = np.bincount(cid, weights=(vote == ref).astype(float), minlength=clusters.size)
    j_hits = np.bincount(cid, weights=(jv == ref).astype(float), minlength=clusters.size)
    ones = np.ones(pair.size)
    point = {"human_kappa": _kappa(vote, ref, ones), "judge_kappa": _kappa(jv, ref, ones),
             "difference": (j_hits.sum() - h_hits.sum()) / trials.sum()}
    rng = np.random.default_rng(seed)
    boots = {k: np.empty(n_bootstrap) for k in point}
    for b in range(n_bootstrap):
        w_c = np.bincount(rng.integers(0, clusters.size, clusters.size), minlength=clusters.size).astype(float)
        w = w_c[cid]
        boots["human_kappa"][b] = _kappa(vote, ref, w)
        boots["judge_kappa"][b] = _kappa(jv, ref, w)
        boots["difference"][b] = (w_c @ (j_hits - h_hits)) / (w_c @ trials)
    a = (1 - level) / 2
    ci = {k: dict(zip(("lower", "upper"), np.nanpercentile(v, [100 * a, 100 * (1 - a)]).tolist(), strict=True))
          for k, v in boots.items()}
    diff = {"value": float(point["difference"]), **ci["difference"]}
    status = ("above" if diff["lower"] > 0 else "below" if diff["upper"] < 0 else "at")
    return {
        "n_comparisons": int(pair.size), "n_pairs": int(clusters.size), "skipped_no_majority": skipped,
        "human_agreement": clustered_wilson_interval(h_hits, trials, level).as_dict(),
        "judge_agreement": clustered_wilson_interval(j_hits, trials, level).as_dict(),
        "human_kappa": {"value": point["human_kappa"], **ci["human_kappa"]},
        "judge_kappa": {"value": point["judge_kappa"], **ci["judge_kappa"]},
        "judge_minus_human": diff,
        "reaches_ceiling": status != "below",
        "status": status,
    }


def ceiling_rows(ceiling: Mapping) -> list[tuple[str, str]]:
    """(label, value) rows for the judge card and the CLI."""
    says = {"above": "above the human ceiling (agrees with the other voters more than a voter does)",
            "at": "reaches the human ceiling (the difference's interval includes 0)",
            "below": "below the human ceiling"}[ceiling["status"]]
    return [
        ("human ceiling: each voter vs the others' majority",
         f"agreement {_fmt(ceiling['human_agreement'])}, kappa {_fmt(ceiling['human_kappa'])} "
         f"({ceiling['n_comparisons']} votes on {ceiling['n_pairs']} pairs; {ceiling['skipped_no_majority']} "
         "without a unique majority left out)"),
        ("judge vs the same majorities",
         f"agreement {_fmt(ceiling['judge_agreement'])}, kappa {_fmt(ceiling['judge_kappa'])}"),
        ("judge − human agreement", f"{_fmt(ceiling['judge_minus_human'])}: {says}"),
    ]
