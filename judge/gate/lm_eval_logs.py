"""Benchmarks scored by code: two lm-evaluation-harness 0.4.x runs of the same tasks, compared item by item.

An lm-eval output folder (``--output_path DIR --log_samples``) holds, per model, ``results_<date>.json``
(the scores and the run's settings) and ``samples_<task>_<date>.jsonl`` (one line per document and filter:
``doc_id``, ``filter``, ``doc_hash``, ``prompt_hash``, and each metric's per-item value). The two runs join
on (task, filter, ``doc_id``); a document whose ``doc_hash`` differs is a different item and is refused, and
so is a different ``prompt_hash`` unless the prompt change is the point of the comparison. Per task: both
scores with Wilson intervals, the paired bootstrap interval of the difference and the exact McNemar test
(:mod:`judge.stats`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from judge.stats import mcnemar_exact, paired_bootstrap, wilson_interval
from preflab.errors import InputError
from preflab.io import iter_jsonl, load_json

#: The metric and filter lm-eval's own task YAMLs report first (the number a paper quotes).
DEFAULT_METRICS: dict[str, tuple[str, str]] = {
    "gsm8k": ("exact_match", "strict-match"), "gsm8k_cot": ("exact_match", "strict-match"),
    "ifeval": ("prompt_level_strict_acc", "none"), "mmlu": ("acc", "none"), "hellaswag": ("acc_norm", "none"),
    "arc_challenge": ("acc_norm", "none"), "arc_easy": ("acc", "none"), "winogrande": ("acc", "none"),
    "truthfulqa_mc2": ("acc", "none"), "piqa": ("acc_norm", "none"), "boolq": ("acc", "none"),
    "bbh": ("exact_match", "get-answer"), "minerva_math": ("exact_match", "none"),
}

#: The settings compared between the two runs: (label, path in the results file).
SETTINGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("model", ("model_name",)), ("model source", ("model_source",)), ("model args", ("config", "model_args")),
    ("model revision", ("config", "model_revision")), ("chat template", ("chat_template_sha",)),
    ("system instruction", ("system_instruction",)), ("fewshot as multiturn", ("fewshot_as_multiturn",)),
    ("generation kwargs", ("config", "gen_kwargs")), ("limit", ("config", "limit")),
    ("batch size", ("config", "batch_size")), ("random seed", ("config", "random_seed")),
    ("lm-eval version", ("lm_eval_version",)), ("lm-eval git hash", ("git_hash",)),
)


@dataclass(frozen=True)
class Run:
    """One lm-eval output folder: its results file and, per task, its samples file."""

    folder: Path
    results_path: Path
    results: dict
    samples: dict[str, Path]


def _latest(paths: list[Path]) -> Path:
    return sorted(paths, key=lambda p: p.name)[-1]  # the date suffix sorts; the newest run wins


def load_run(folder: str | Path) -> Run:
    """Find ``results_*.json`` and ``samples_<task>_*.jsonl`` under an lm-eval output folder (one model)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(str(folder), None, None, "not a folder", "pass lm-eval's --output_path folder")
    results = sorted(folder.rglob("results_*.json"))
    if not results:
        raise InputError(str(folder), None, "results_*.json", "no lm-eval results file in this folder",
                         "pass the --output_path folder of an lm-eval run")
    models = {p.parent for p in results}
    if len(models) > 1:
        raise InputError(str(folder), None, "results_*.json", f"results of {len(models)} models "
                         f"({', '.join(sorted(str(p.relative_to(folder)) for p in models))})",
                         "pass one model's folder")
    results_path = _latest(results)
    data = load_json(results_path, "lm-eval writes this file; do not edit it")
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise InputError(str(results_path), None, "results", "not an lm-eval results file", "pass lm-eval's output")
    samples: dict[str, list[Path]] = {}
    for p in results_path.parent.glob("samples_*.jsonl"):
        m = re.match(r"samples_(.+)_\d{4}-\d{2}-\d{2}T[\d\-.]+\.jsonl$", p.name)
        if m:
            samples.setdefault(m.group(1), []).append(p)
    if not samples:
        raise InputError(str(results_path.parent), None, "samples_*.jsonl", "no per-item samples in this folder",
                         "rerun lm-eval with --log_samples")
    return Run(folder, results_path, data, {t: _latest(ps) for t, ps in samples.items()})


def read_samples(path: Path, metric: str, filter_name: str) -> dict[int, tuple[float, str, str, int]]:
    """``doc_id -> (score, doc_hash, prompt_hash, line)`` for one metric under one filter."""
    out: dict[int, tuple[float, str, str, int]] = {}
    for line, row in iter_jsonl(path, "lm-eval writes one JSON object per line"):
        if row.get("filter", "none") != filter_name:
            continue
        if "doc_id" not in row:
            raise InputError(str(path), line, "doc_id", "missing", "lm-eval's samples carry doc_id")
        if metric not in row:
            raise InputError(str(path), line, metric, "metric missing from this sample",
                             f"metrics here: {row.get('metrics')}; pass --metric")
        value = row[metric]
        if isinstance(value, bool):
            value = float(value)
        if not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
            raise InputError(str(path), line, metric, f"{value!r} is not a per-item score in [0, 1]",
                             "compare a per-item accuracy metric (acc, exact_match, ...)")
        doc = int(row["doc_id"])
        if doc in out:
            raise InputError(str(path), line, "doc_id", f"document {doc} appears twice under filter {filter_name!r}",
                             "pass one run's samples file (with --repeats, compare the repeats' mean elsewhere)")
        out[doc] = (float(value), str(row.get("doc_hash")), str(row.get("prompt_hash")), line)
    return out


def metric_for(task: str, results: dict, metric: str | None, filter_name: str | None) -> tuple[str, str]:
    """The metric and filter to compare: the given ones, lm-eval's task default, else the first reported."""
    if metric and filter_name:
        return metric, filter_name
    default = DEFAULT_METRICS.get(task) or DEFAULT_METRICS.get(task.split("_")[0] if task.startswith("mmlu") else "")
    reported = [k.split(",") for k in results.get("results", {}).get(task, {}) if "," in k and "_stderr" not in k]
    if default and (metric is None or metric == default[0]):
        return metric or default[0], filter_name or default[1]
    for m, f in reported:
        if (metric is None or m == metric) and (filter_name is None or f == filter_name):
            return m, f
    return metric or "acc", filter_name or "none"


def _get(d: dict, path: tuple[str, ...]):
    for key in path:
        d = d.get(key) if isinstance(d, dict) else None
    return d


def settings_table(base: Run, candidate: Run) -> list[dict]:
    """Each setting of both runs, ``differs`` where they disagree (a harness difference is not a model one)."""
    rows = []
    for label, path in SETTINGS:
        b, c = _get(base.results, path), _get(candidate.results, path)
        if label == "model args" and isinstance(b, dict) and isinstance(c, dict):  # endpoints move between runs
            b, c = ({k: v for k, v in d.items() if k != "base_url"} for d in (b, c))
        rows.append({"setting": label, "base": b, "candidate": c, "differs": b != c})
    for task in sorted(set(base.samples) & set(candidate.samples)):
        for label, key in (("n-shot", "n-shot"), ("task version", "versions")):
            b, c = _get(base.results, (key, task)), _get(candidate.results, (key, task))
            rows.append({"setting": f"{task} {label}", "base": b, "candidate": c, "differs": b != c})
    return rows


def compare_task(task: str, base: Run, candidate: Run, metric: str, filter_name: str, allow_prompt_change: bool,
                 n_bootstrap: int = 2000, seed: int = 0) -> dict:
    """One task: joined items, both scores with Wilson intervals, paired bootstrap delta, McNemar p."""
    b = read_samples(base.samples[task], metric, filter_name)
    c = read_samples(candidate.samples[task], metric, filter_name)
    for run, got in ((base, b), (candidate, c)):
        if not got:
            raise InputError(str(run.samples[task]), None, "filter", f"no {task} samples under filter "
                             f"{filter_name!r}", "pass --filter with one of the task's filters")
    docs = sorted(set(b) & set(c))
    for doc in docs:
        for i, field in ((1, "doc_hash"), (2, "prompt_hash")):
            if b[doc][i] != c[doc][i] and (field == "doc_hash" or not allow_prompt_change):
                raise InputError(str(candidate.samples[task]), c[doc][3], field,
                                 f"document {doc} differs from the base run's (line {b[doc][3]} of "
                                 f"{base.samples[task].name})",
                                 "compare runs of the same task data" if field == "doc_hash" else
                                 "the two runs prompted differently; pass --allow-prompt-change if that is the change")
    if not docs:
        raise InputError(str(candidate.samples[task]), None, "doc_id", "no document in common with the base run",
                         "compare runs of the same task")
    sb, sc = np.array([b[d][0] for d in docs]), np.array([c[d][0] for d in docs])
    binary = bool(np.isin(sb, (0.0, 1.0)).all() and np.isin(sc, (0.0, 1.0)).all())
    delta = paired_bootstrap(sb, sc, n_bootstrap=n_bootstrap, seed=seed)
    row = {"task": task, "metric": metric, "filter": filter_name, "n": len(docs),
           "unpaired": {"base": len(b) - len(docs), "candidate": len(c) - len(docs)},
           "base": _score(sb, binary), "candidate": _score(sc, binary), "delta": delta.as_dict(),
           "mcnemar_p": None, "discordant": None}
    if binary:
        base_only, cand_only = int(np.sum((sb == 1) & (sc == 0))), int(np.sum((sb == 0) & (sc == 1)))
        row["mcnemar_p"] = mcnemar_exact(base_only, cand_only)
        row["discordant"] = {"base_only": base_only, "candidate_only": cand_only}
    return row


def _score(x: np.ndarray, binary: bool) -> dict:
    if binary:
        return wilson_interval(int(x.sum()), x.size).as_dict()
    return {"value": float(x.mean()), "lower": None, "upper": None}  # a graded score: no Wilson interval


def compare_lm_eval(base_dir: str | Path, candidate_dir: str | Path, tasks: list[str] | None = None,
                    metric: str | None = None, filter_name: str | None = None, allow_prompt_change: bool = False,
                    n_bootstrap: int = 2000, seed: int = 0) -> dict:
    """``{"tasks": [...], "settings": [...]}`` for two lm-eval output folders."""
    base, cand = load_run(base_dir), load_run(candidate_dir)
    common = sorted(set(base.samples) & set(cand.samples))
    chosen = tasks or common
    for t in chosen:
        for run in (base, cand):
            if t not in run.samples:
                raise InputError(str(run.results_path.parent), None, "task", f"no samples for task {t!r} "
                                 f"(tasks here: {', '.join(sorted(run.samples))})", "pass --tasks with shared tasks")
    rows = []
    for t in chosen:
        m, f = metric_for(t, base.results, metric, filter_name)
        rows.append(compare_task(t, base, cand, m, f, allow_prompt_change, n_bootstrap, seed))
    only = sorted(set(base.samples) ^ set(cand.samples))
    notes = [f"tasks in one run only, not compared: {', '.join(only)}"] if only and not tasks else []
    notes += [f"{r['task']}: documents in one run only, left out: {r['unpaired']['base']} of the base run, "
              f"{r['unpaired']['candidate']} of the candidate's" for r in rows if any(r["unpaired"].values())]
    return {"tasks": rows, "settings": settings_table(base, cand), "notes": notes}
