"""``judge run`` with several judges: each member judges every pair (its own verdict file), then the panel.

Members run one after another through :func:`judge.runner.run.run_judge`, sharing the cache and, with a spending
cap, the budget: each member may spend what the members before it left. A member whose calls fail is
still written (rows with their error) and abstains on those pairs in the panel.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from judge.runner.run import RunConfig, RunResult, run_judge


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
