"""``judge run`` with several judges: each member judges every pair (its own verdict file), then the panel.

Members run one after another through :func:`judge.runner.run.run_judge`, sharing the cache and, with a spending
cap, the budget: each member may spend what the members before it left. A member whose calls fail is
still written (rows with their error) and abstains on those pairs in the panel.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from judge.metrics.jury import RULES, JuryTable, align_members
from judge.metrics.jury_members import distinct_name, panel_frame
from judge.runner.run import RunConfig, RunResult, run_judge
from judge.verdicts.verdict_file import load_verdicts_jsonl
from preflab.io import is_stdout, write_output


def member_output(output: str | Path, index: int, spec: str) -> Path:
    """``verdicts.jsonl`` → ``verdicts.1-openai-gpt-4.1-mini.jsonl`` (the spec's provider and model)."""
    output = Path(output)
    kind, _, rest = spec.partition(":")
    model = rest.rpartition("#")[2] if "#" in rest else rest
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{kind.split('+')[0]}-{model}").strip("-")[:60]
    return output.with_name(f"{output.stem}.{index}-{slug}{output.suffix or '.jsonl'}")


def run_jury(pairs: Sequence, specs: Sequence[str], config: RunConfig,
             cache: str | Path | None = None) -> list[RunResult]:
    """One :class:`RunResult` per member spec, in order; ``config.max_cost`` caps the members' total."""
    results: list[RunResult] = []
    spent = 0.0
    for spec in specs:
        cap = None if config.max_cost is None else max(config.max_cost - spent, 0.0)
        res = run_judge(pairs, spec, replace(config, max_cost=cap), cache)
        spent += res.stats.cost or 0.0  # an unknown price only without a cap (SpendMeter refuses it under one)
        results.append(res)
    return results


@dataclass
class JuryRun:
    """A finished jury run: each member's spec, verdict file and run result, the aligned table, the panel per
    pair (written to the run's output) and how many member verdicts failed."""

    members: list[tuple[str, Path, RunResult]]
    table: JuryTable
    panel: pd.DataFrame
    failed: int


def run_jury_panel(pairs: Sequence, specs: Sequence[str], config: RunConfig, cache: str | Path | None,
                   output: str | Path, rule: str = "majority") -> JuryRun:
    """``judge run`` with several judges: each member's verdicts to its own file beside ``output``
    (:func:`member_output`), read back as every verdict file is, aligned by pair under distinct member names
    (:func:`judge.metrics.jury_members.distinct_name`), and the panel (``rule``) per pair written to ``output``."""
    if rule not in RULES:
        raise ValueError(f"--jury-rule must be one of {', '.join(RULES)}, got {rule!r}")
    if is_stdout(output):
        raise ValueError("a jury writes one file per member beside --output; give a file name, not -")
    members, tables, failed = [], {}, 0
    for k, (spec, res) in enumerate(zip(specs, run_jury(pairs, specs, config, cache), strict=True), start=1):
        path = member_output(output, k, spec)
        res.write_jsonl(path)
        failed += int(res.verdicts["error"].notna().sum())
        members.append((spec, path, res))
        tables[distinct_name(spec, spec, k, tables)] = load_verdicts_jsonl(path)
    table = align_members(tables)
    panel = panel_frame(table, rule)
    write_output(output, panel.to_json(orient="records", lines=True, force_ascii=False))
    return JuryRun(members, table, panel, failed)
