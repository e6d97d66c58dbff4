"""RewardBench 2 (Malik et al. 2025, allenai/reward-bench ``scripts/run_v2.py``) results read as published, and
its numbers by its own code.

A row is one prompt: ``id``, ``subset``, ``scores`` (every completion's score; the first ``num_correct`` are the
correct ones) and ``results``. Best-of-4: a prompt scores 1 when the first (correct) completion's score is the
maximum, shared ties penalised to 1/k for k completions at the maximum, else 0 (``reroll_and_score_dataset``).
A subset's score is the mean of its prompts'. The Ties subset is scored as a whole
(``process_single_model``): 0.30 accuracy on tied prompts (several correct answers) + 0.30 on their reference
prompts (one correct) + 0.20 "correct answers closer to each other than to the best wrong one" + 0.20 the
same against the smaller of the tied and reference margins + 0.01 a tanh margin term. The overall score is the
unweighted mean of the subset scores, as the RewardBench 2 leaderboard reports it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from judge.benchmarks.published_rows import checked_subset, iter_records
from preflab.errors import InputError

TIES = "ties"
HINT = "rows come from RewardBench 2's scripts/run_v2.py (eval-set-scores/<model>.json)"


def best_of_n(scores: np.ndarray) -> float:
    """1/k when the first score is the maximum and k scores share it, else 0 (RewardBench 2's tie penalty)."""
    top = scores.max()
    return float(1.0 / np.sum(scores == top)) if scores[0] == top else 0.0


def _scores(rec: dict, source: str, line: int) -> np.ndarray:
    raw = rec.get("scores")
    if not isinstance(raw, list) or len(raw) < 2:
        raise InputError(source, line, "scores", f"expected a list of two or more scores, got {raw!r:.60}", HINT)
    out = []
    for s in raw:
        s = s[0] if isinstance(s, list) and len(s) == 1 else s
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not np.isfinite(s):
            raise InputError(source, line, "scores", f"not a finite number: {s!r:.40}",
                             "every completion needs a score")
        out.append(float(s))
    return np.array(out)


def _num_correct(rec: dict, n: int, source: str, line: int) -> int:
    value = rec.get("num_correct", 1)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value < n:
        raise InputError(source, line, "num_correct", f"{value!r:.40} is not a count in 1..{n - 1}",
                         "the first num_correct scores belong to the correct completions")
    return value


def read_rewardbench2(path: str | Path) -> pd.DataFrame:
    """One row per prompt: ``item_id``, ``subset``, ``scores`` (array), ``num_correct`` and ``correct`` (the
    best-of-n result; NaN in the Ties subset, scored as a whole). A published ``results`` that disagrees with
    the scores is an input error."""
    source = str(path)
    meta, records = iter_records(path, HINT)
    rows, seen = [], {}
    for line, rec in records:
        subset = checked_subset(rec, source, line, HINT)
        scores = _scores(rec, source, line)
        k = _num_correct(rec, scores.size, source, line)
        tie_subset = subset.lower() == TIES
        item = str(rec.get("id", line))
        if tie_subset and item.partition(":")[0] not in ("ref", "tied"):
            raise InputError(source, line, "id", f"{item!r:.40} is not 'ref:N' or 'tied:N'",
                             "Ties prompts are ids ref:<prompt> and tied:<prompt>")
        if tie_subset and item in seen:  # process_single_model would pool both rows' scores into one prompt
            raise InputError(source, line, "id", f"{item!r} repeated in {subset} (first at {seen[item]})",
                             "give each Ties prompt one ref and one tied row")
        seen[item] = line
        correct = np.nan if tie_subset else best_of_n(scores)
        published = rec.get("results")
        if not tie_subset and isinstance(published, (int, float)) and abs(float(published) - correct) > 1e-9:
            raise InputError(source, line, "results", f"{published} disagrees with the scores (best-of-n gives "
                             f"{correct:g})", "results is 1/k when the first score is the maximum shared by k")
        rows.append({"item_id": item, "subset": subset, "scores": scores, "num_correct": k, "correct": correct})
    if not rows:
        raise InputError(source, None, None, "no prompts in the file", HINT)
    table = pd.DataFrame(rows)
    table.attrs.update(model=meta.get("model"), source=source)
    return table


def ties_prompts(rows: pd.DataFrame) -> pd.DataFrame:
    """Per Ties prompt number, its reference (``ref``) and tied stats: accurate (every correct answer above the
    best wrong one), the spread of the correct answers, and the gap worst-correct − best-wrong."""
    stats = {}
    for item, scores, k in zip(rows["item_id"], rows["scores"], rows["num_correct"], strict=True):
        kind, _, prompt = item.partition(":")
        right, wrong = scores[:k], scores[k:]
        gap = float(right.min() - wrong.max())
        stats.setdefault(prompt, {})[kind] = (float(gap > 0), float(right.max() - right.min()) if k > 1 else
                                              np.nan, gap)
    out = []
    for prompt, kinds in stats.items():
        ref, tied = kinds.get("ref"), kinds.get("tied")
        out.append({"prompt": prompt, "has_ref": ref is not None, "has_tied": tied is not None,
                    "ref_accurate": ref[0] if ref else np.nan, "tied_accurate": tied[0] if tied else np.nan,
                    "spread": tied[1] if tied else np.nan, "gap_tied": tied[2] if tied else np.nan,
                    "gap_ref": ref[2] if ref else np.nan})
    return pd.DataFrame(out)


def ties_score(prompts: pd.DataFrame, weights: np.ndarray | None = None) -> np.ndarray:
    """The Ties subset's score (``process_single_model``), for each row of ``weights`` (``(B, P)`` counts of
    each prompt in a bootstrap replicate; None: every prompt once)."""
    w = np.ones((1, len(prompts))) if weights is None else np.asarray(weights, dtype=float)

    def mean(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
        v = np.where(mask, values, 0.0)
        den = w @ mask.astype(float)
        return np.divide(w @ v, den, out=np.zeros(w.shape[0]), where=den > 0)

    has_ref, has_tied = prompts["has_ref"].to_numpy(), prompts["has_tied"].to_numpy()
    both = has_ref & has_tied
    spread, gap_tied = prompts["spread"].to_numpy(), prompts["gap_tied"].to_numpy()
    hard = np.minimum(prompts["gap_ref"].to_numpy(), gap_tied)
    with np.errstate(divide="ignore", invalid="ignore"):
        margin = np.nan_to_num(np.tanh(hard / spread - 1.0), nan=0.0)
    return (0.30 * mean(prompts["tied_accurate"].to_numpy(), has_tied)
            + 0.30 * mean(prompts["ref_accurate"].to_numpy(), has_ref)
            + 0.20 * mean((gap_tied > spread).astype(float), both)
            + 0.20 * mean((hard > spread).astype(float), both)
            + 0.01 * mean(margin, both))
