"""The one function behind ``preflab compare``: read the inputs, judge (or read verdicts), test, check, gate.

Judged rubrics come from verdict files (no judge is called) or from the two versions' answers and a judge
run through :func:`judge.runner.run.run_judge` (both orders, cache, retries, rate limits; a rerun with the same
cache calls nothing already answered). Sequential mode takes the prompts in a seeded random order and stops
each dimension when its anytime-valid test (:mod:`judge.gate.sequential`) decides at alpha / dimensions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from judge.gate.compare import GateSettings, compare_dimensions, pair_outcomes
from judge.gate.compare_inputs import (
    Answers,
    check_versions,
    first_bad_line,
    load_answers,
    load_dimension,
    runner_codes,
    version_pairs,
)
from judge.gate.sequential import SequentialSettings, anytime_p_values, confidence_sequence
from preflab.errors import InputError
from preflab.outcomes import Outcome

if TYPE_CHECKING:
    from judge.runner.run import RunResult


@dataclass(frozen=True)
class CompareRequest:
    """What to compare: the versions, where the verdicts come from, and how to decide."""

    base: str
    candidate: str
    items: Path | None = None
    verdicts: tuple[Path, ...] = ()
    rubrics: tuple[str, ...] = ()
    judge: str | None = None
    run_config: object | None = None  # judge.runner.run.RunConfig without its rubric (each rubric replaces it)
    cache: Path | None = None
    gate: GateSettings = field(default_factory=GateSettings)
    sequential: SequentialSettings | None = None
    lm_eval: tuple[Path, Path] | None = None
    lm_eval_options: dict = field(default_factory=dict)
    allow_mixed: bool = False  # pool verdict files mixing judges, model versions or rubric texts


def _sign_steps(codes: pd.DataFrame) -> np.ndarray:
    """+1 per candidate win, -1 per loss, 0 per tie or unjudged pair: the sign test's steps, in table order."""
    outcome, _ = pair_outcomes(codes)
    return np.where(outcome == Outcome.FIRST, 1, np.where(outcome == Outcome.SECOND, -1, 0))


def _decided_after(codes: pd.DataFrame, seq: SequentialSettings, alpha: float) -> int | None:
    """Pairs (in the table's order) after which the dimension's test decided, or None."""
    p = anytime_p_values(_sign_steps(codes), seq.prior)
    hit = np.flatnonzero(p <= alpha)
    return int(hit[0]) + 1 if hit.size else None


def _sequential_summary(codes: dict[str, pd.DataFrame], stops: dict[str, int | None], seq: SequentialSettings,
                        judged: int, total: int, cost: float | None, reason: str) -> dict:
    ps, cis = [], []
    for df in codes.values():
        steps = _sign_steps(df)
        ps.append(float(anytime_p_values(steps, seq.prior)[-1]) if len(steps) else 1.0)
        cis.append(confidence_sequence(int(np.sum(steps > 0)), int(np.sum(steps < 0)), 1 - 0.95, seq.prior))
    return {"p_values": ps, "intervals": cis,
            "test": f"anytime-valid beta-binomial mixture e-process (Beta({seq.prior:g}, {seq.prior:g})), "
                    "stopping each dimension at alpha / dimensions, Holm across dimensions",
            "summary": {"pairs_available": total, "pairs_judged": judged, "stopped_at": stops,
                        "stopped_because": reason, "cost": cost, "seed": seq.seed,
                        "max_items": seq.max_items, "max_cost": seq.max_cost}}


def replay_sequential(codes: dict[str, pd.DataFrame], seq: SequentialSettings, alpha: float,
                      costs: dict[str, pd.Series] | None = None) -> tuple[dict[str, pd.DataFrame], dict]:
    """Sequential mode over verdicts already made: a seeded random order; each dimension is cut where its test
    stopped, and all of them where the caps (prompts, total cost over the dimensions still running) are met."""
    items = sorted(set.intersection(*(set(df["item_id"]) for df in codes.values())))
    order = list(np.random.default_rng(seq.seed).permutation(items))
    cap = min(len(order), seq.max_items or len(order))
    per_dim = alpha / len(codes)
    ordered = {d: df.set_index("item_id").loc[order[:cap]].reset_index() for d, df in codes.items()}
    stops = {d: _decided_after(df, seq, per_dim) for d, df in ordered.items()}
    reach = cap  # prompts taken before a cap stops everything
    spent = np.zeros(cap)
    if costs is not None:
        for d, df in ordered.items():
            c = costs[d].reindex(df["item_id"]).fillna(0.0).to_numpy(dtype=float, copy=True)
            c[stops[d] or cap:] = 0.0  # a stopped dimension spends nothing more
            spent += np.cumsum(c)
        if seq.max_cost is not None:
            reach = int(np.searchsorted(spent, seq.max_cost * (1 + 1e-12), side="right"))
    cut = {d: df.iloc[:min(reach, stops[d] or cap)] for d, df in ordered.items()}
    stops = {d: (s if s is not None and s <= reach else None) for d, s in stops.items()}
    if all(s is not None for s in stops.values()):
        reason = "every dimension decided"
    elif reach < cap:
        reason = "max cost reached"
    else:
        reason = "max items reached" if cap < len(order) else "all prompts judged"
    judged = max(len(df) for df in cut.values())
    cost = float(spent[judged - 1]) if costs is not None and judged else (0.0 if costs is not None else None)
    return cut, _sequential_summary(cut, stops, seq, judged, len(items), cost, reason)


def _verdict_costs(path: Path) -> pd.Series:
    """Cost per item of a verdict file (both orders summed): what a replay under --max-cost spends."""
    from preflab.io import iter_jsonl

    spent: dict[str, float] = {}
    for line, row in iter_jsonl(path, "one JSON object per line"):
        c = row.get("cost")
        if isinstance(c, bool) or not isinstance(c, int | float) or c != c:  # an unknown cost is not $0
            raise InputError(str(path), line, "cost", f"no known cost ({c!r}), so --max-cost cannot be kept",
                             "drop --max-cost, or replay verdicts from a run with a known price")
        spent[str(row.get("item_id"))] = spent.get(str(row.get("item_id")), 0.0) + float(c)
    return pd.Series(spent)


def _rubric_config(rubric_name: str, request: CompareRequest):
    from judge.runner.run import RunConfig
    from judge.verdicts.rubrics import load_rubric

    return replace(request.run_config or RunConfig(load_rubric(rubric_name)), rubric=load_rubric(rubric_name))


def _judge_codes(pairs, rubric_name: str, request: CompareRequest):
    from judge.runner.run import run_judge

    result = run_judge(pairs, request.judge, _rubric_config(rubric_name, request), cache=request.cache)
    return result, runner_codes(result.verdicts)


def _sequential_order(n: int, seq: SequentialSettings) -> list[int]:
    """The seeded order sequential mode judges the prompts in, cut at ``max_items``."""
    order = list(np.random.default_rng(seq.seed).permutation(n))
    return order[:min(n, seq.max_items or n)]


def dry_run_compare(request: CompareRequest) -> list:
    """Each rubric's judge-run estimate (:func:`judge.runner.estimate.dry_run`: the calls, tokens and cost the run
    would send; nothing is sent). Sequential mode may stop early, so its estimate is the most it sends. Verdict
    files and lm-eval logs call no judge: an empty list."""
    if request.verdicts or not request.judge:
        return []
    from judge.runner.estimate import dry_run

    if request.items is None:
        raise InputError("<items>", None, None, "--judge needs the items file", "pass the two versions' answers")
    answers = load_answers(request.items)
    check_versions(answers.models, request.base, request.candidate, answers.source)
    pairs = version_pairs(answers, request.base, request.candidate)
    if request.sequential is not None:
        pairs = [pairs[i] for i in _sequential_order(len(pairs), request.sequential)]
    return [dry_run(pairs, request.judge, _rubric_config(name, request), request.cache) for name in request.rubrics]


def _add_cost(total: float | None, cost: float | None) -> float | None:
    """A running cost that stays unknown (None) once any part of it is."""
    return None if total is None or cost is None else total + cost


def _judge_all(pairs: Sequence, request: CompareRequest) -> tuple[dict[str, pd.DataFrame], dict]:
    """Every rubric on every pair: codes and a run summary per dimension."""
    codes, runs = {}, {}
    for name in request.rubrics:
        result, c = _judge_codes(pairs, name, request)
        codes[_rubric_dimension(name)] = c
        runs[_rubric_dimension(name)] = {"summary": result.stats.summary(), "cost": result.stats.cost,
                                         "failed": int(result.verdicts["error"].notna().sum())}
    return codes, runs


def _require_a_price(request: CompareRequest) -> None:
    """A spending cap needs the judge's price: without one the cap could never stop the run."""
    from llm.calls.spend import spec_price

    if getattr(request.run_config, "price", None) is None and spec_price(request.judge) is None:
        raise ValueError(f"--max-cost needs a known price, and {request.judge} has none in the price table; "
                         "drop --max-cost")


def _add_chunk(acc: dict, result: RunResult) -> None:
    """One chunk's calls, cache hits, cost (unknown stays unknown) and failures into a dimension's tally."""
    acc["calls"] += result.stats.calls
    acc["cached"] += result.stats.cache_hits
    acc["cost"] = _add_cost(acc["cost"], result.stats.cost)
    acc["failed"] += int(result.verdicts["error"].notna().sum())


def judge_live(pairs: Sequence, request: CompareRequest) -> tuple[dict[str, pd.DataFrame], dict, dict | None]:
    """Judge every rubric on the pairs (all of them, or sequentially in chunks until each dimension stops)."""
    if request.sequential is None:
        return (*_judge_all(pairs, request), None)
    runs: dict[str, dict] = {}
    names = list(request.rubrics)
    seq = request.sequential
    if seq.max_cost is not None:
        _require_a_price(request)
    order = _sequential_order(len(pairs), seq)
    cap = len(order)
    chunk = max(8, getattr(request.run_config, "concurrency", 8))
    per_dim = request.gate.alpha / len(names)
    codes = {_rubric_dimension(n): pd.DataFrame({"item_id": [], "judge_xy": [], "judge_yx": []}) for n in names}
    stops: dict[str, int | None] = {_rubric_dimension(n): None for n in names}
    cost, done, reason = 0.0, 0, "all prompts judged" if cap == len(order) else "max items reached"
    while done < cap:
        active = [n for n in names if stops[_rubric_dimension(n)] is None]
        if not active:
            reason = "every dimension decided"
            break
        per_pair = cost / max(done, 1) if done and cost is not None else 0.0
        if seq.max_cost is not None and done and cost + per_pair * min(chunk, cap - done) > seq.max_cost:
            reason = "max cost reached"
            break
        batch = [pairs[i] for i in order[done:done + chunk][:cap - done]]
        for name in active:
            result, c = _judge_codes(batch, name, request)
            cost = _add_cost(cost, result.stats.cost)
            dim = _rubric_dimension(name)
            _add_chunk(runs.setdefault(dim, {"calls": 0, "cached": 0, "cost": 0.0, "failed": 0}), result)
            codes[dim] = pd.concat([codes[dim], c], ignore_index=True)
            stops[dim] = _decided_after(codes[dim], seq, per_dim)
            if stops[dim]:
                codes[dim] = codes[dim].iloc[:stops[dim]]
        done += len(batch)
    for acc in runs.values():
        spent = "unknown (no price for this judge)" if acc["cost"] is None else f"${acc['cost']:.4f}"
        acc["summary"] = f"{acc['calls']} calls, {acc['cached']} cached, {acc['failed']} failed; cost {spent}"
    return codes, runs, _sequential_summary(codes, stops, seq, done, len(pairs), cost, reason)


def _rubric_dimension(rubric: str) -> str:
    """A rubric's dimension name (its ``name``, so a TOML file's path becomes its rubric's name)."""
    from judge.verdicts.rubrics import load_rubric

    return load_rubric(rubric).name


def verdict_file_dimensions(request: CompareRequest) -> tuple[dict[str, pd.DataFrame], dict[str, Path], list[str]]:
    """Candidate-as-x codes per dimension from ``request.verdicts`` (one file per rubric), each one's file,
    and the files' notes (repeated rows, a mix pooled with ``allow_mixed``)."""
    codes: dict[str, pd.DataFrame] = {}
    sources: dict[str, Path] = {}
    notes: list[str] = []
    for path in request.verdicts:
        dim, c, file_notes = load_dimension(path, request.base, request.candidate, request.allow_mixed)
        notes += file_notes
        if dim in codes:
            raise InputError(str(path), None, "rubric", f"a second verdict file for {dim!r} "
                             f"(first: {sources[dim]})", "pass one verdict file per rubric")
        codes[dim], sources[dim] = c, path
    return codes, sources, notes


def check_verdicts_cover_items(codes: dict[str, pd.DataFrame], sources: dict[str, Path], answers: Answers,
                               request: CompareRequest) -> list[str]:
    """A verdict on an item the items file lacks is an input error; prompts without a verdict are notes."""
    known = {p.item_id for p in version_pairs(answers, request.base, request.candidate)}
    notes = []
    for dim, c in codes.items():
        unknown = sorted(set(c["item_id"]) - known)
        if unknown:
            line, _ = first_bad_line(sources[dim], lambda r: "item_id" if str(r.get("item_id")) not in known else None)
            raise InputError(str(sources[dim]), line, "item_id", f"item {unknown[0]!r} is not among the "
                             f"items of {answers.source} ({len(unknown)} such)",
                             "pass the items file the verdicts were made from")
        missing = len(known - set(c["item_id"]))
        if missing:
            notes.append(f"{dim}: {missing} of {len(known)} prompts have no verdict (left out)")
    return notes


def run_compare(request: CompareRequest) -> dict:
    """The whole comparison as one JSON-able dict: ``dimensions``, ``tasks``, ``checks``, ``settings``, ``gate``."""
    report: dict = {"base": request.base, "candidate": request.candidate, "dimensions": [], "tasks": [],
                    "checks": {}, "settings": [], "gate": {"checked": [], "failed": [], "passed": True},
                    "notes": []}
    answers: Answers | None = load_answers(request.items) if request.items else None
    if answers is not None:
        check_versions(answers.models, request.base, request.candidate, answers.source)
    if request.verdicts:
        codes, sources, notes = verdict_file_dimensions(request)
        report["notes"] += notes
        if answers is not None:
            report["notes"] += check_verdicts_cover_items(codes, sources, answers, request)
        seq = None
        if request.sequential is not None:
            costs = {d: _verdict_costs(sources[d]) for d in codes} if request.sequential.max_cost is not None else None
            codes, seq = replay_sequential(codes, request.sequential, request.gate.alpha, costs)
        report.update(compare_dimensions(codes, request.base, request.candidate, request.gate, answers, seq))
        report["sequential"] = seq["summary"] if seq else None
    elif request.judge:
        if answers is None:
            raise InputError("<items>", None, None, "--judge needs the items file", "pass the two versions' answers")
        pairs = version_pairs(answers, request.base, request.candidate)
        codes, runs, seq = judge_live(pairs, request)
        report.update(compare_dimensions(codes, request.base, request.candidate, request.gate, answers, seq))
        report["judge_runs"] = runs
        report["sequential"] = seq["summary"] if seq else None
    elif request.items and not request.lm_eval:
        raise InputError(str(request.items), None, None, "nothing to compare on",
                         "pass --judge SPEC with --rubric, or --verdicts FILE, or --lm-eval BASE_DIR CANDIDATE_DIR")
    if request.lm_eval:
        from judge.gate.lm_eval_logs import compare_lm_eval

        bench = compare_lm_eval(*request.lm_eval, **request.lm_eval_options)
        report["tasks"], report["settings"] = bench["tasks"], bench["settings"]
        report["notes"] += bench["notes"]
    report.pop("test", None) if not report["dimensions"] else None
    return report
