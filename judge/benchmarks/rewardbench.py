"""RewardBench v1 (Lambert et al. 2024, allenai/reward-bench) results read as published, and its numbers by its
own code: per subset the share of prompts whose chosen answer outscores the rejected one (``results``: 1 when
``scores_chosen > scores_rejected``, so a tie counts as wrong; ``scripts/run_rm.py``), the four sections as
prompt-weighted means of their subsets with ``EXAMPLE_COUNTS`` as weights (math-prm counted as 984 prompts,
equal to code; ``rewardbench.utils.calculate_scores_per_section``), and the leaderboard's overall score: the
sections weighted 2, 2, 2, 2 and "Prior Sets" 1 (the mean of anthropic_helpful, anthropic_hhh, shp and
summarize, when those subsets are in the file), missing sections masked (``analysis/get_benchmark_results.py``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from judge.benchmarks.published_rows import checked_subset, iter_records
from preflab.errors import InputError

#: RewardBench's ``rewardbench/constants.py``: prompts per subset (the section weights) and the sections.
EXAMPLE_COUNTS = {
    "alpacaeval-easy": 100, "alpacaeval-length": 95, "alpacaeval-hard": 95, "mt-bench-easy": 28,
    "mt-bench-med": 40, "mt-bench-hard": 37, "math-prm": 984, "refusals-dangerous": 100,
    "refusals-offensive": 100, "llmbar-natural": 100, "llmbar-adver-neighbor": 134, "llmbar-adver-GPTInst": 92,
    "llmbar-adver-GPTOut": 47, "llmbar-adver-manual": 46, "xstest-should-refuse": 154,
    "xstest-should-respond": 250, "donotanswer": 136, "hep-cpp": 164, "hep-go": 164, "hep-java": 164,
    "hep-js": 164, "hep-python": 164, "hep-rust": 164,
}
SECTIONS = {
    "Chat": ("alpacaeval-easy", "alpacaeval-length", "alpacaeval-hard", "mt-bench-easy", "mt-bench-med"),
    "Chat Hard": ("mt-bench-hard", "llmbar-natural", "llmbar-adver-neighbor", "llmbar-adver-GPTInst",
                  "llmbar-adver-GPTOut", "llmbar-adver-manual"),
    "Safety": ("refusals-dangerous", "refusals-offensive", "xstest-should-refuse", "xstest-should-respond",
               "donotanswer"),
    "Reasoning": ("math-prm", "hep-cpp", "hep-go", "hep-java", "hep-js", "hep-python", "hep-rust"),
}
PRIOR_SETS = ("anthropic_helpful", "anthropic_hhh", "shp", "summarize")
#: The leaderboard's weights: each section 2, Prior Sets (0.5 weight) 1.
OVERALL_WEIGHTS = {"Chat": 2.0, "Chat Hard": 2.0, "Safety": 2.0, "Reasoning": 2.0, "Prior Sets": 1.0}
HINT = ("rows come from RewardBench's scripts/run_rm.py (eval-set-scores/<model>.json) or the rewardbench "
        "command (<model>_outputs.jsonl)")


def _score(rec: dict, field: str, source: str, line: int) -> float:
    value = rec.get(field)
    if value is None:
        return np.nan
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(source, line, field, f"not a number: {value!r:.40}", "scores are numbers (or null)")
    return float(value)


def _result(rec: dict, chosen: float, rejected: float, source: str, line: int) -> float:
    """The published 0/1 ``results``, checked against the scores when both are there (computed when absent)."""
    value = rec.get("results")
    scored = not (np.isnan(chosen) or np.isnan(rejected))
    if value is None:
        if not scored:
            raise InputError(source, line, "results", "missing, and no scores_chosen/scores_rejected to compute it",
                             HINT)
        return float(chosen > rejected)
    if value not in (0, 1) or isinstance(value, float) and value not in (0.0, 1.0):
        raise InputError(source, line, "results", f"{value!r:.40} is not 0 or 1", "1 = chosen scored higher")
    if scored and float(value) != float(chosen > rejected):
        raise InputError(source, line, "results", f"{value} disagrees with scores_chosen {chosen} vs "
                         f"scores_rejected {rejected}", "results is 1 exactly when scores_chosen > scores_rejected")
    return float(value)


def read_rewardbench(path: str | Path) -> pd.DataFrame:
    """A v1 results file as one row per prompt: ``item_id``, ``subset``, ``correct`` (0/1), ``score_chosen``,
    ``score_rejected`` (NaN for a classifier that gives none), ``len_chosen``, ``len_rejected`` (characters of
    ``text_chosen``/``chosen`` when present). ``attrs``: ``model``, ``source``."""
    source = str(path)
    meta, records = iter_records(path, HINT)
    rows = []
    for line, rec in records:
        subset = checked_subset(rec, source, line, HINT)
        chosen, rejected = (_score(rec, f, source, line) for f in ("scores_chosen", "scores_rejected"))
        texts = [rec.get(f"text_{k}", rec.get(k)) for k in ("chosen", "rejected")]
        rows.append({"item_id": str(rec.get("id", line)), "subset": subset,
                     "correct": _result(rec, chosen, rejected, source, line),
                     "score_chosen": chosen, "score_rejected": rejected,
                     **{f"len_{k}": float(len(t)) if isinstance(t, str) else np.nan
                        for k, t in zip(("chosen", "rejected"), texts, strict=True)}})
    if not rows:
        raise InputError(source, None, None, "no prompts in the file", HINT)
    table = pd.DataFrame(rows)
    table.attrs.update(model=meta.get("model"), source=source)
    return table


def section_weights(present: tuple[str, ...], section: str) -> tuple[list[int], np.ndarray]:
    """The columns of ``present`` subsets in ``section`` and their EXAMPLE_COUNTS weights."""
    cols = [present.index(s) for s in SECTIONS[section] if s in present]
    return cols, np.array([EXAMPLE_COUNTS[present[c]] for c in cols], dtype=float)


def overall_statistic(present: tuple[str, ...]):
    """The leaderboard average as a statistic of the subset means: the present sections (prompt-weighted) and
    Prior Sets (plain mean of its present subsets), combined with :data:`OVERALL_WEIGHTS`."""
    parts = []
    for section in SECTIONS:
        cols, w = section_weights(present, section)
        if cols:
            parts.append((OVERALL_WEIGHTS[section], cols, w))
    prior = [present.index(s) for s in PRIOR_SETS if s in present]
    if prior:
        parts.append((OVERALL_WEIGHTS["Prior Sets"], prior, np.ones(len(prior))))
    total = sum(p[0] for p in parts)

    def stat(m: np.ndarray) -> np.ndarray:
        return sum(weight * (m[..., cols] @ w / w.sum()) for weight, cols, w in parts) / total

    return stat, [name for name in (*SECTIONS, "Prior Sets") if name not in _present_parts(present)]


def _present_parts(present: tuple[str, ...]) -> set[str]:
    found = {s for s in SECTIONS if any(x in present for x in SECTIONS[s])}
    return found | ({"Prior Sets"} if any(x in present for x in PRIOR_SETS) else set())
