"""A published benchmark's own headline, by its own rule, with 95% intervals per category: the one library
function behind ``preflab judge bench`` (:func:`benchmark_report`), and the same file as a judged-pairs table with
correctness labels (:func:`benchmark_pairs`) so calibrate, the card, compare and jury take it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from judge.benchmarks import judgebench as jb
from judge.benchmarks import rewardbench as rb
from judge.benchmarks import rewardbench2 as rb2
from judge.benchmarks.intervals import SubsetMeans, interval_of, subset_means, weighted_mean
from judge.benchmarks.published_rows import iter_records
from preflab.errors import InputError

FORMATS = ("auto", "judgebench", "rewardbench", "rewardbench2")
NAMES = {"judgebench": "JudgeBench", "rewardbench": "RewardBench", "rewardbench2": "RewardBench 2"}
RULES = {
    "judgebench": "a pair is correct when its two orders' decisions sum positive (+1 equals the label, -1 the "
                  "reverse); one order: the decision equals the label (JudgeBench utils/metrics.py)",
    "rewardbench": "a prompt is correct when scores_chosen > scores_rejected (ties wrong); sections weight subsets "
                   "by EXAMPLE_COUNTS; overall weights sections 2 and Prior Sets 1 (reward-bench)",
    "rewardbench2": "a prompt scores 1/k when the correct answer's score is the maximum shared by k of its "
                    "completions; Ties scored as a whole; overall = mean of subset scores (RewardBench 2)",
}


@dataclass(frozen=True)
class BenchSettings:
    """The bootstrap behind every interval: resamples (0: none), level, seed."""

    n_bootstrap: int = 1000
    level: float = 0.95
    seed: int = 0


def _kind(first: dict) -> str | None:
    if "pair_id" in first and "label" in first:
        return "judgebench"
    if "subset" in first and isinstance(first.get("scores"), list):
        return "rewardbench2"
    if "subset" in first and ({"results", "scores_chosen"} & set(first)):
        return "rewardbench"
    return None


def detect_format(path: str | Path) -> str:
    """``judgebench`` (rows with ``pair_id`` and ``label``), ``rewardbench2`` (``scores`` lists) or ``rewardbench``
    (``subset`` with ``results`` or chosen/rejected scores), from the file's first record."""
    _, records = iter_records(path, "give a JudgeBench, RewardBench or RewardBench 2 results file")
    first = next(iter(records), (None, None))[1]
    if first is None:
        raise InputError(str(path), None, None, "no rows in the file", "give a benchmark results file")
    kind = _kind(first)
    if kind is None:
        raise InputError(str(path), 1, None, f"cannot tell the benchmark from its fields {sorted(first)[:8]}",
                         "pass --format judgebench, rewardbench or rewardbench2")
    return kind


def sniff_benchmark(path: str | Path) -> str | None:
    """The benchmark a JSONL file's first line shows (see :func:`detect_format`), else None; reads one line
    (so a RewardBench column object, whose first line is ``{``, is not recognised: name its layout)."""
    import json

    from preflab.io import iter_text_lines

    try:
        text = next((raw.strip() for _, raw in iter_text_lines(path) if raw.strip()), "")
        first = json.loads(text) if text.startswith("{") else None
    except (InputError, OSError, ValueError):
        return None
    return _kind(first) if isinstance(first, dict) else None


def _rows(means: SubsetMeans, group: str, level: float, names: tuple[str, ...] | None = None) -> list[dict]:
    out = []
    for name in names or means.names:
        c = means.column(name)
        ci = interval_of(means, lambda m, c=c: m[..., c], level)
        out.append({"group": group, "name": name, "n": int(means.sizes[c]), **ci.as_dict()})
    return out


def _longer_baseline(correct: np.ndarray, subsets: np.ndarray, means: SubsetMeans, stat, s: BenchSettings) -> dict:
    """The "longer answer" judge scored by the benchmark's own rule and statistic, with its interval and the
    judge's paired difference (the same seed draws the same prompts for both)."""
    base = subset_means(correct, subsets, s.n_bootstrap, s.seed)
    value = interval_of(base, stat, s.level)
    paired = SubsetMeans(means.names, means.sizes, means.point - base.point, means.replicates - base.replicates)
    return {"name": "longer answer", **value.as_dict(), "judge_minus": interval_of(paired, stat, s.level).as_dict()}


def _judgebench(path: Path, s: BenchSettings) -> dict:
    rows = jb.read_judgebench(path)
    correct, category = jb.judgebench_table(rows)
    means = subset_means(correct, category, s.n_bootstrap, s.seed)
    stat = weighted_mean(list(range(len(means.names))), means.sizes)
    overall = interval_of(means, stat, s.level)
    baselines = []
    if rows[["len_x", "len_y"]].notna().all(axis=None):
        longer = np.sign(rows["len_y"] - rows["len_x"]).map({-1.0: 0.0, 1.0: 1.0, 0.0: 2.0}).to_numpy(dtype=float)
        base = jb.judgebench_correct(longer, longer if rows.attrs["games"] == 2 else None, rows["label"].to_numpy())
        baselines.append(_longer_baseline(base, category, means, stat, s))
    order = tuple(n for n, _ in jb.CATEGORIES if n in means.names) + (("other",) if "other" in means.names else ())
    games = rows.attrs["games"]
    judges = "reward model scores" if "score_x_xy" in rows else "decisions"
    return {"headline": {"name": "accuracy", **overall.as_dict()}, "unit": "pairs",
            "rows": _rows(means, "category", s.level, order), "baselines": baselines,
            "notes": [f"{games} order{'s' if games > 1 else ''} per pair ({judges}); {int(correct.sum())} of "
                      f"{correct.size} pairs correct"]}


def _rewardbench(path: Path, s: BenchSettings) -> dict:
    rows = rb.read_rewardbench(path)
    means = subset_means(rows["correct"].to_numpy(), rows["subset"].to_numpy(), s.n_bootstrap, s.seed)
    present, out, notes = means.names, [], []
    for section in rb.SECTIONS:
        cols, w = rb.section_weights(present, section)
        if cols:
            ci = interval_of(means, weighted_mean(cols, w), s.level)
            out.append({"group": "section", "name": section, "n": int(means.sizes[cols].sum()), **ci.as_dict()})
    prior = [present.index(p) for p in rb.PRIOR_SETS if p in present]
    if prior:
        ci = interval_of(means, weighted_mean(prior, np.ones(len(prior))), s.level)
        out.append({"group": "section", "name": "Prior Sets", "n": int(means.sizes[prior].sum()), **ci.as_dict()})
    stat, missing = rb.overall_statistic(present)
    known = set(rb.EXAMPLE_COUNTS) | set(rb.PRIOR_SETS)
    if missing:
        notes.append(f"not in the file, left out of the overall: {', '.join(missing)}")
    unknown = [n for n in present if n not in known]
    if unknown:
        notes.append(f"subsets in no section (shown, not in the overall): {', '.join(unknown)}")
    short = [f"{n} {int(means.sizes[i])}/{rb.EXAMPLE_COUNTS[n]}" for i, n in enumerate(present)
             if n in rb.EXAMPLE_COUNTS and n != "math-prm" and means.sizes[i] != rb.EXAMPLE_COUNTS[n]]
    if short:
        notes.append("subsets whose prompt count differs from RewardBench's: " + ", ".join(short))
    baselines = []
    if rows[["len_chosen", "len_rejected"]].notna().all(axis=None):
        longer = (rows["len_chosen"] > rows["len_rejected"]).to_numpy(dtype=float)
        baselines.append(_longer_baseline(longer, rows["subset"].to_numpy(), means, stat, s))
    ties = int(((rows["score_chosen"] == rows["score_rejected"]) & rows["score_chosen"].notna()).sum())
    notes.append(f"{ties} prompt{'s' if ties != 1 else ''} with chosen and rejected scored equal (counted wrong)")
    listed = [x for section in rb.SECTIONS.values() for x in section] + list(rb.PRIOR_SETS)
    order = tuple(x for x in listed if x in present) + tuple(unknown)
    return {"headline": {"name": "overall", **interval_of(means, stat, s.level).as_dict()}, "unit": "prompts",
            "rows": out + _rows(means, "subset", s.level, order), "notes": notes, "model": rows.attrs.get("model"),
            "baselines": baselines}


def _ties_means(rows: pd.DataFrame, s: BenchSettings) -> tuple[float, np.ndarray, int]:
    """The Ties score, its bootstrap replicates (prompts resampled) and its prompt count."""
    prompts = rb2.ties_prompts(rows)
    point = float(rb2.ties_score(prompts)[0])
    if not s.n_bootstrap:
        return point, np.empty(0), len(prompts)
    rng = np.random.default_rng([s.seed, 2])
    draws = rng.integers(0, len(prompts), size=(s.n_bootstrap, len(prompts)))
    weights = np.stack([np.bincount(d, minlength=len(prompts)) for d in draws])
    return point, rb2.ties_score(prompts, weights), len(prompts)


def _rewardbench2(path: Path, s: BenchSettings) -> dict:
    rows = rb2.read_rewardbench2(path)
    is_ties = rows["subset"].str.lower() == rb2.TIES
    plain = rows[~is_ties]
    if len(plain):
        means = subset_means(plain["correct"].to_numpy(), plain["subset"].to_numpy(), s.n_bootstrap, s.seed)
    else:
        means = SubsetMeans((), np.empty(0, int), np.empty(0), np.empty((s.n_bootstrap, 0)))
    notes = []
    if is_ties.any():
        point, reps, n = _ties_means(rows[is_ties], s)
        name = str(rows.loc[is_ties, "subset"].iloc[0])
        means = SubsetMeans(means.names + (name,), np.append(means.sizes, n), np.append(means.point, point),
                            np.column_stack([means.replicates, reps]) if s.n_bootstrap else means.replicates)
        notes.append(f"{name}: scored as a whole over {n} prompt numbers (ref and tied), resampled by prompt")
    shared = int(sum(1 for c in plain["correct"] if 0 < c < 1))
    notes.append(f"{shared} prompt{'s' if shared != 1 else ''} with the correct answer tied at the top (scored 1/k)")
    stat = weighted_mean(list(range(len(means.names))), np.ones(len(means.names)))
    return {"headline": {"name": "overall", **interval_of(means, stat, s.level).as_dict()}, "unit": "prompts",
            "rows": _rows(means, "subset", s.level), "notes": notes, "model": rows.attrs.get("model")}


def benchmark_report(path: str | Path, fmt: str = "auto", settings: BenchSettings = BenchSettings()) -> dict:
    """The benchmark's headline and its per-category (JudgeBench) or per-section and per-subset (RewardBench)
    numbers, each a proportion with its percentile-bootstrap interval (prompts resampled within their subset).
    Bad input raises :class:`InputError` naming file, line and field."""
    path = Path(path)
    if fmt not in FORMATS:
        raise ValueError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    fmt = detect_format(path) if fmt == "auto" else fmt
    body = {"judgebench": _judgebench, "rewardbench": _rewardbench, "rewardbench2": _rewardbench2}[fmt](path, settings)
    n = sum(r["n"] for r in body["rows"] if r["group"] in ("category", "subset"))
    body.setdefault("baselines", [])
    return {"benchmark": NAMES[fmt], "format": fmt, "source": str(path), "model": body.pop("model", None),
            "rule": RULES[fmt], "n": n, "level": settings.level, "n_bootstrap": settings.n_bootstrap, **body}


def _pct(p: float) -> str:
    """A proportion as a percent with two decimals, as the benchmarks print it (never ``-0.00``)."""
    return f"{round(100 * p, 2) + 0.0:.2f}"


def benchmark_rows(report: dict) -> list[tuple[str, str, str, str]]:
    """The report as table rows: (name, n, value %, interval %), headline first (two decimals, as the
    benchmarks print)."""
    def pct(d: dict) -> tuple[str, str]:
        lo, hi = d.get("lower"), d.get("upper")
        known = lo is not None and not np.isnan(lo)
        return f"{_pct(d['value'])}", f"[{_pct(lo)}, {_pct(hi)}]" if known else "—"

    head = report["headline"]
    out = [(f"{head['name']}", str(report["n"]), *pct(head))]
    for r in report["rows"]:
        out.append((f"  {r['group']} {r['name']}", str(r["n"]), *pct(r)))
    for b in report["baselines"]:
        out.append((f"null baseline: {b['name']}", str(report["n"]), *pct(b)))
        out.append((f"  judge − {b['name']} (paired)", str(report["n"]), *pct(b["judge_minus"])))
    return out


def _judge_name(report: dict) -> str:
    """A report's judge: the model a RewardBench file names, else JudgeBench's ``judge_model=`` in the file name,
    else the file's name."""
    name = Path(report["source"]).name
    if report.get("model"):
        return str(report["model"])
    if "judge_model=" in name:
        judge = name.split("judge_model=")[1].removesuffix(".jsonl")
        kind = name.split("judge_name=")[1].split(",")[0] if "judge_name=" in name else ""
        return f"{judge} ({kind})" if kind else judge
    return name


def benchmark_board(folder: str | Path, fmt: str = "auto", settings: BenchSettings = BenchSettings()) -> list[dict]:
    """:func:`benchmark_report` for every ``*.json``/``*.jsonl`` file of a folder (one benchmark), best headline
    first, each with ``judge`` (who it scores). A file that is not in the layout is an input error naming it."""
    folder = Path(folder)
    files = sorted(p for p in folder.iterdir() if p.suffix in (".json", ".jsonl") and p.is_file())
    if not files:
        raise InputError(str(folder), None, None, "no .json or .jsonl results files in the folder",
                         "give a results file or a folder of them (JudgeBench's outputs/)")
    reports = [benchmark_report(p, fmt, settings) for p in files]
    kinds = {r["format"] for r in reports}
    if len(kinds) > 1:
        raise InputError(str(folder), None, None, f"the folder mixes benchmarks ({', '.join(sorted(kinds))})",
                         "give one benchmark's results per folder")
    for r in reports:
        r["judge"] = _judge_name(r)
    return sorted(reports, key=lambda r: -r["headline"]["value"])


def board_rows(reports: list[dict]) -> tuple[list[str], list[list[str]]]:
    """A board as a header and rows: judge, n, headline [interval], each category or section, and the judge's
    paired difference from the longer-answer baseline (two decimals of a percent)."""
    groups = [r["name"] for r in reports[0]["rows"] if r["group"] in ("category", "section")] or [
        r["name"] for r in reports[0]["rows"]]
    header = ["judge", reports[0]["unit"], f"{reports[0]['headline']['name']} [95%]", *groups, "− longer answer"]

    def cell(d: dict | None, interval: bool = False) -> str:
        if not d:
            return "—"
        text = _pct(d["value"])
        return text + (f" [{_pct(d['lower'])}, {_pct(d['upper'])}]" if interval and d["lower"] == d["lower"] else "")

    rows = []
    for rep in reports:
        by_name = {r["name"]: r for r in rep["rows"]}
        base = rep["baselines"][0]["judge_minus"] if rep["baselines"] else None
        rows.append([rep["judge"], str(rep["n"]), cell(rep["headline"], True), *(cell(by_name.get(g)) for g in groups),
                     cell(base, True)])
    return header, rows
