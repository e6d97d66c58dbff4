"""Benchmark: ``preflab compare`` over 10,000 prompts x 3 rubrics from verdict files (60,000 verdict rows).

Times the library call the CLI makes (:func:`judge.gate.compare_run.run_compare`: read and validate the three
files, combine the orders, sign tests, Holm, checks) and, beside it, the same verdicts' plain read by
:func:`judge.metrics.adapters.load_verdicts_jsonl` (the floor: parsing alone), as a ratio. Target: <= 2 s.
Run: ``.venv/bin/python -m benchmarks.bench_compare``; writes ``benchmarks/results/bench_compare.md``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

from benchmarks.common import best_of, write_table
from judge.gate.compare_run import CompareRequest, run_compare
from judge.metrics.adapters import load_verdicts_jsonl

N_PROMPTS, RUBRICS, TARGET_S = 10_000, ("concise", "correctness", "abt"), 2.0


def write_verdicts(folder: Path, seed: int = 0) -> list[Path]:
    rng = np.random.default_rng(seed)
    paths = []
    for r, rubric in enumerate(RUBRICS):
        slots = rng.choice(["A", "B", "tie"], size=(N_PROMPTS, 2), p=[0.5 + 0.05 * r, 0.4 - 0.05 * r, 0.1])
        lines = []
        for i in range(N_PROMPTS):
            for o, order in enumerate(("xy", "yx")):
                v = slots[i, o]
                p = {"A": (0.8, 0.1, 0.1), "B": (0.1, 0.8, 0.1), "tie": (0.1, 0.1, 0.8)}[v]
                lines.append(json.dumps({"item_id": f"q{i}", "model_x": "new", "model_y": "old", "order": order,
                                         "verdict": v, "p_a": p[0], "p_b": p[1], "p_tie": p[2],
                                         "rubric": f"{rubric}@1", "cost": 0.0}))
        path = folder / f"{rubric}.jsonl"
        path.write_text("\n".join(lines) + "\n")
        paths.append(path)
    return paths


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_verdicts(Path(tmp))
        request = CompareRequest("old", "new", verdicts=tuple(paths))
        compare_s = best_of(lambda: run_compare(request))
        read_s = best_of(lambda: [load_verdicts_jsonl(p) for p in paths])
        report = run_compare(request)
        assert len(report["dimensions"]) == 3
    rows = [["preflab compare (run_compare)", f"{compare_s:.2f}", f"{compare_s / read_s:.2f}x",
             "yes" if compare_s <= TARGET_S else "NO"],
            ["load_verdicts_jsonl alone (3 files)", f"{read_s:.2f}", "1.00x", ""]]
    print(write_table("bench_compare", f"compare: {N_PROMPTS:,} prompts x {len(RUBRICS)} rubrics from verdict files",
                      ["what", "best of 3 (s)", "vs the read alone", f"<= {TARGET_S:g} s"], rows))


if __name__ == "__main__":
    main()
