"""Agreement of a judge with humans, and of humans with each other (the ceiling the judge is held to).

All functions take outcome codes as float arrays (NaN = no label, :data:`judge.verdicts.pairs.UNPARSABLE` = a
judge output with no readable verdict, which always counts as a disagreement and is never dropped).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from judge.stats import Interval, wilson_interval
from judge.verdicts.judged_pairs import OUTCOMES
from preflab.outcomes import IDENTITY_NAMES, Outcome


def majority_vote(ratings: np.ndarray) -> np.ndarray:
    """Per-row majority of annotator codes (``ratings`` is n × k, NaN = no vote).

    A split among the most-voted outcomes goes to the earliest annotator who voted for one of them, so a
    three-way split goes to annotator 1 (the rule used for PandaLM's three annotators). All-NaN rows → NaN.
    """
    ratings = np.asarray(ratings, dtype=float)
    out = np.full(ratings.shape[0], np.nan)
    for i, row in enumerate(ratings):
        votes = row[~np.isnan(row)]
        if votes.size == 0:
            continue
        values, counts = np.unique(votes, return_counts=True)
        top = set(values[counts == counts.max()])
        out[i] = next(v for v in votes if v in top)
    return out


def _judge_with_unparsable(judge: np.ndarray) -> np.ndarray:
    judge = np.asarray(judge, dtype=float)
    return np.where(np.isnan(judge), Outcome.UNPARSABLE, judge)


def accuracy(judge: np.ndarray, human: np.ndarray, include_ties: bool = True, level: float = 0.95) -> dict:
    """Share of pairs where the judge's winner equals the human one, with a Wilson interval.

    Pairs without a human label are left out (and counted); a missing or unparsable judge verdict counts as a
    disagreement. ``include_ties=False`` keeps only pairs where neither side said tie — the "without tie"
    setup of Zheng et al. (2023, MT-Bench).
    """
    judge = _judge_with_unparsable(judge)
    human = np.asarray(human, dtype=float)
    keep = ~np.isnan(human)
    if not include_ties:
        keep &= (human != Outcome.TIE) & (judge != Outcome.TIE)
    agree = int(np.sum(judge[keep] == human[keep]))
    n = int(keep.sum())
    return {
        "n": n,
        "n_unparsable": int(np.sum(judge[keep] == Outcome.UNPARSABLE)),
        "n_without_human": int(np.sum(np.isnan(human))),
        **wilson_interval(agree, n, level).as_dict(),
    }


def _weight_matrix(n_labels: int, weights: str | None) -> np.ndarray:
    i, j = np.indices((n_labels, n_labels))
    if weights is None:
        return (i != j).astype(float)
    if weights == "linear":
        return np.abs(i - j).astype(float)
    if weights == "quadratic":
        return ((i - j) ** 2).astype(float)
    raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")


def _kappa_from_confusion(conf: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Kappa for one (L × L) or a stack (B × L × L) of confusion matrices."""
    conf = conf.astype(float)
    total = conf.sum(axis=(-2, -1), keepdims=True)
    expected = conf.sum(axis=-1, keepdims=True) * conf.sum(axis=-2, keepdims=True) / total
    with np.errstate(invalid="ignore", divide="ignore"):
        return 1.0 - (w * conf).sum(axis=(-2, -1)) / (w * expected).sum(axis=(-2, -1))


def kappa_from_confusion(conf: np.ndarray, weights: str | None = None) -> float:
    """Cohen's kappa of one confusion table of counts (or of weighted counts, e.g. bootstrap multiplicities);
    NaN when chance agreement is 1 (one class on both sides)."""
    conf = np.asarray(conf, dtype=float)
    return float(_kappa_from_confusion(conf, _weight_matrix(conf.shape[0], weights)))


def _encode(a: np.ndarray, b: np.ndarray, labels: Sequence[float] | None) -> tuple[np.ndarray, np.ndarray, int]:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    labels = np.unique(np.concatenate([a, b])) if labels is None else np.asarray(labels, dtype=float)
    index = {v: i for i, v in enumerate(labels)}
    try:
        return np.array([index[v] for v in a]), np.array([index[v] for v in b]), len(labels)
    except KeyError as exc:
        raise ValueError(f"value {exc.args[0]} is not among labels {list(labels)}") from None


def cohen_kappa(a: np.ndarray, b: np.ndarray, labels: Sequence[float] | None = None,
                weights: str | None = None) -> float:
    """Cohen's kappa (Cohen 1960), weighted kappa for ordinal labels (Cohen 1968) with ``weights``.

    Same definition as scikit-learn's ``cohen_kappa_score`` (the reference the tests compare with);
    ``labels`` fixes the (ordered) label set, which the weights use.
    """
    ia, ib, n_labels = _encode(a, b, labels)
    conf = np.bincount(ia * n_labels + ib, minlength=n_labels * n_labels).reshape(n_labels, n_labels)
    return float(_kappa_from_confusion(conf, _weight_matrix(n_labels, weights)))


@dataclass(frozen=True)
class KappaInterval(Interval):
    """A kappa interval that also says how many bootstrap resamples held a single class (see
    :func:`kappa_interval`)."""

    single_class_resamples: int = 0

    def as_dict(self) -> dict[str, float]:
        return {**super().as_dict(), "single_class_resamples": int(self.single_class_resamples)}


#: Above this many resampled items (pairs × resamples) a bootstrap over pairs is drawn as multinomial counts over
#: the distinct cells instead of item indices: the same distribution (resampling iid items with replacement is
#: a multinomial draw of the cells' counts), in memory bounded by the cells, on a different random stream.
MAX_DRAWS = 20_000_000


def kappa_interval(judge: np.ndarray, human: np.ndarray, weights: str | None = None,
                   labels: Sequence[float] | None = None, n_bootstrap: int = 1000,
                   level: float = 0.95, seed: int = 0) -> KappaInterval:
    """Judge–human Cohen's kappa with a percentile bootstrap interval over pairs (Efron & Tibshirani 1993).

    Pairs without a human label are left out; an unparsable verdict is its own category, so it can only
    disagree. All resamples are counted at once with one ``bincount``.

    A resample in which judge and humans use one and the same class has chance agreement 1 and Cohen's
    formula is 0/0 (scikit-learn returns NaN). Such a resample agrees perfectly, and kappa is 1 at every
    other perfect-agreement table, so kappa is defined as 1 there, for the point and every resample alike;
    no resample is dropped (dropping them, as ``nanpercentile`` did, conditions the bootstrap on the
    resamples that happen to show two classes and biases the interval down). Their number is reported as
    ``single_class_resamples``: when it is more than a few percent of ``n_bootstrap``, the data hold too
    few pairs of the rarer classes for kappa to mean much.
    """
    judge = _judge_with_unparsable(judge)
    human = np.asarray(human, dtype=float)
    keep = ~np.isnan(human)
    ia, ib, n_labels = _encode(judge[keep], human[keep], labels)
    if ia.size == 0:
        return KappaInterval(float("nan"), float("nan"), float("nan"), level)
    cell = ia * n_labels + ib
    w = _weight_matrix(n_labels, weights)
    point = _kappa_from_confusion(np.bincount(cell, minlength=n_labels**2).reshape(n_labels, n_labels), w)
    rng = np.random.default_rng(seed)
    if cell.size * n_bootstrap > MAX_DRAWS:  # the same bootstrap as multinomial counts over the cells (bounded memory)
        counts = np.bincount(cell, minlength=n_labels**2)
        confs = rng.multinomial(cell.size, counts / cell.size, size=n_bootstrap).reshape(n_bootstrap, n_labels,
                                                                                         n_labels)
    else:
        idx = rng.integers(0, cell.size, size=(n_bootstrap, cell.size))
        flat = cell[idx] + (np.arange(n_bootstrap) * n_labels**2)[:, None]
        confs = np.bincount(flat.ravel(), minlength=n_bootstrap * n_labels**2).reshape(n_bootstrap, n_labels,
                                                                                       n_labels)
    boots = _kappa_from_confusion(confs, w)
    single = np.isnan(boots)  # only 0/0: one class on both sides, hence perfect agreement
    boots = np.where(single, 1.0, boots)
    point = 1.0 if np.isnan(point) else point
    alpha = (1 - level) / 2
    lo, hi = np.percentile(boots, [100 * alpha, 100 * (1 - alpha)])
    return KappaInterval(float(point), float(lo), float(hi), level, int(single.sum()))


def confusion_matrix(judge: np.ndarray, human: np.ndarray) -> pd.DataFrame:
    """Counts of (human outcome, judge outcome) over pairs with a human label; unparsable is its own column."""
    judge = _judge_with_unparsable(judge)
    human = np.asarray(human, dtype=float)
    keep = ~np.isnan(human)
    rows = [IDENTITY_NAMES[o] for o in OUTCOMES]
    cols = rows + [IDENTITY_NAMES[Outcome.UNPARSABLE]]
    # one bincount over (human, judge) cells: codes 0..2 for humans, judge codes 0..2 and UNPARSABLE (-1) -> 3
    h = human[keep].astype(int)
    j = np.where(judge[keep] == Outcome.UNPARSABLE, len(OUTCOMES), judge[keep]).astype(int)
    counts = np.bincount(h * len(cols) + j, minlength=len(rows) * len(cols)).reshape(len(rows), len(cols))
    return pd.DataFrame(counts, index=pd.Index(rows, name="human"), columns=pd.Index(cols, name="judge"))


def binary_rates(judge_pass: np.ndarray, human_pass: np.ndarray, level: float = 0.95) -> dict[str, dict]:
    """TPR and TNR of a pass/fail judge against human pass/fail, each with a Wilson interval.

    Husain's recommendation for binary judges: report both, not accuracy, since a judge that always says
    "pass" has high accuracy on a mostly-passing set.
    """
    j = np.asarray(judge_pass, dtype=bool)
    h = np.asarray(human_pass, dtype=bool)
    return {
        "tpr": {"n": int(h.sum()), **wilson_interval(int(np.sum(j & h)), int(h.sum()), level).as_dict()},
        "tnr": {"n": int((~h).sum()), **wilson_interval(int(np.sum(~j & ~h)), int((~h).sum()), level).as_dict()},
    }


def per_class_rates(judge: np.ndarray, human: np.ndarray, level: float = 0.95) -> dict[str, dict]:
    """One-vs-rest TPR/TNR for each outcome (x, y, tie) over pairs with a human label."""
    judge = _judge_with_unparsable(judge)
    human = np.asarray(human, dtype=float)
    keep = ~np.isnan(human)
    return {IDENTITY_NAMES[o]: binary_rates(judge[keep] == o, human[keep] == o, level) for o in OUTCOMES}


def pass_rates(judge: np.ndarray, human: np.ndarray, level: float = 0.95) -> dict[str, dict]:
    """TPR/TNR with "pass" = x wins (e.g. candidate beats baseline), over pairs with a human label."""
    return per_class_rates(judge, human, level)[IDENTITY_NAMES[Outcome.FIRST]]


def fleiss_kappa(ratings: np.ndarray) -> float:
    """Fleiss' kappa among annotators (Fleiss 1971), items with at least two ratings.

    Allows a varying number of ratings per item: P_i = (Σ_j n_ij² − n_i) / (n_i (n_i − 1)), P_e from the
    pooled category shares (equal to Fleiss' formula when every item has the same count).
    """
    ratings = np.asarray(ratings, dtype=float)
    cats = np.unique(ratings[~np.isnan(ratings)])
    counts = np.stack([(ratings == c).sum(axis=1) for c in cats], axis=1).astype(float)
    n_i = counts.sum(axis=1)
    counts, n_i = counts[n_i >= 2], n_i[n_i >= 2]
    p_i = ((counts**2).sum(axis=1) - n_i) / (n_i * (n_i - 1))
    p_j = counts.sum(axis=0) / n_i.sum()
    p_e = float((p_j**2).sum())
    return float((p_i.mean() - p_e) / (1 - p_e))


def krippendorff_alpha_nominal(ratings: np.ndarray) -> float:
    """Krippendorff's alpha for nominal data from the coincidence matrix (Krippendorff 2011).

    ``ratings`` is items × annotators with NaN for missing; the ``krippendorff`` package is the test reference.
    """
    ratings = np.asarray(ratings, dtype=float)
    cats = np.unique(ratings[~np.isnan(ratings)])
    counts = np.stack([(ratings == c).sum(axis=1) for c in cats], axis=1).astype(float)
    m_u = counts.sum(axis=1)
    counts, m_u = counts[m_u >= 2], m_u[m_u >= 2]
    # o_ck = Σ_u (n_uc n_uk − [c = k] n_uc) / (m_u − 1): pairable values within each unit.
    scale = 1.0 / (m_u - 1)
    coincidence = np.einsum("uc,uk,u->ck", counts, counts, scale) - np.diag(counts.T @ scale)
    n_c = coincidence.sum(axis=1)
    n = n_c.sum()
    observed = n - np.trace(coincidence)
    expected = (n * n - (n_c**2).sum()) / (n - 1)
    return float(1 - observed / expected)


def pairwise_kappas(ratings: np.ndarray) -> dict[str, float]:
    """Cohen's kappa for every annotator pair (``"1-2"``, ``"1-3"``, …) on items both rated."""
    ratings = np.asarray(ratings, dtype=float)
    out = {}
    k = ratings.shape[1]
    for i in range(k):
        for j in range(i + 1, k):
            both = ~np.isnan(ratings[:, i]) & ~np.isnan(ratings[:, j])
            out[f"{i + 1}-{j + 1}"] = cohen_kappa(ratings[both, i], ratings[both, j])
    return out


def leave_one_out_agreement(ratings: np.ndarray, judge: np.ndarray, level: float = 0.95) -> dict:
    """Held-out human vs the majority of the other humans, and the judge vs that same majority.

    AlpacaEval's human-agreement protocol (Dubois et al. 2023): each annotator in turn is held out; the
    majority of the remaining votes (at least two, and a unique mode) is the reference; both the held-out
    human and the judge are scored against it. Items without a unique majority are counted as skipped.
    """
    ratings = np.asarray(ratings, dtype=float)
    judge = _judge_with_unparsable(judge)
    human_hits = judge_hits = n = skipped = 0
    for held in range(ratings.shape[1]):
        others = np.delete(ratings, held, axis=1)
        for i, row in enumerate(others):
            votes = row[~np.isnan(row)]
            if np.isnan(ratings[i, held]) or votes.size < 2:
                continue
            values, counts = np.unique(votes, return_counts=True)
            if np.sum(counts == counts.max()) > 1:
                skipped += 1
                continue
            ref = values[np.argmax(counts)]
            n += 1
            human_hits += int(ratings[i, held] == ref)
            judge_hits += int(judge[i] == ref)
    return {
        "n": n,
        "skipped_no_majority": skipped,
        "human": wilson_interval(human_hits, n, level).as_dict(),
        "judge": wilson_interval(judge_hits, n, level).as_dict(),
    }
