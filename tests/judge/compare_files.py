"""Hand-built inputs for the compare tests: verdict files in `preflab judge run`'s layout, items files,
and lm-eval output folders in lm-eval 0.4.x's layout (``results_<date>.json``, ``samples_<task>_<date>.jsonl``)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

SLOT_P = {"A": (0.8, 0.1, 0.1), "B": (0.1, 0.8, 0.1), "tie": (0.1, 0.1, 0.8), None: (None, None, None)}


def verdict_rows(specs: Sequence[tuple[str | None, str | None]], rubric: str, candidate: str = "new",
                 base: str = "old", candidate_is_x: bool = True, cost: float = 0.001) -> list[dict]:
    """One row per pair and order. A spec gives the winner by identity when the candidate is shown first and
    when the base is: ``"c"`` (candidate), ``"b"`` (base), ``"t"`` (tie) or None (unparsable)."""
    rows = []
    mx, my = (candidate, base) if candidate_is_x else (base, candidate)
    for i, (cand_first, base_first) in enumerate(specs):
        for order in ("xy", "yx"):
            first = mx if order == "xy" else my
            w = cand_first if first == candidate else base_first
            winner = {"c": candidate, "b": base}.get(w or "")
            verdict = "tie" if w == "t" else None if w is None else ("A" if winner == first else "B")
            p = SLOT_P[verdict]
            rows.append({"item_id": f"q{i:03d}", "model_x": mx, "model_y": my, "order": order, "verdict": verdict,
                         "p_a": p[0], "p_b": p[1], "p_tie": p[2], "rubric": f"{rubric}@1", "cost": cost})
    return rows


def preflab(capsys, *args: str) -> tuple[int, str, str]:
    """Run the CLI in-process: (exit status, stdout, stderr)."""
    from preflab_cli import main

    try:
        main(list(args))
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0
    out = capsys.readouterr()
    return code, out.out, out.err


def write_jsonl(path: Path, rows: Sequence[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def verdict_file(path: Path, specs, rubric: str, **kw) -> Path:
    return write_jsonl(path, verdict_rows(specs, rubric, **kw))


def counts_specs(wins: int, losses: int, ties: int = 0, flips: int = 0) -> list[tuple[str, str]]:
    """Specs for given counts: consistent wins, losses and ties, and position flips (each order picks the
    answer shown first)."""
    return [("c", "c")] * wins + [("b", "b")] * losses + [("t", "t")] * ties + [("c", "b")] * flips


def items_file(path: Path, answers: dict[str, tuple[str, str]], candidate: str = "new", base: str = "old") -> Path:
    """An items file: per item, (candidate answer, base answer)."""
    rows = []
    for item, (cand, old) in answers.items():
        rows.append({"item_id": item, "prompt": f"prompt {item}", "model": candidate, "answer": cand})
        rows.append({"item_id": item, "prompt": f"prompt {item}", "model": base, "answer": old})
    return write_jsonl(path, rows)


def _h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def lm_eval_folder(root: Path, task: str, scores: Sequence[float], metric: str = "acc", filters=("none",),
                   prompt: str = "Q{}", doc: str = "doc {}", settings: dict | None = None,
                   date: str = "2026-01-01T00-00-00.000000") -> Path:
    """An lm-eval ``--output_path`` folder for one model with one task's per-item scores."""
    out = root / "model"
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for f in filters:
        for i, s in enumerate(scores):
            lines.append({"doc_id": i, "doc": {"q": doc.format(i)}, "target": "t", "arguments": {},
                          "resps": [["r"]], "filtered_resps": ["r"], "filter": f, "metrics": [metric],
                          "doc_hash": _h(doc.format(i)), "prompt_hash": _h(prompt.format(i)), "target_hash": _h("t"),
                          metric: s})
    write_jsonl(out / f"samples_{task}_{date}.jsonl", lines)
    results = {"results": {task: {"alias": task, f"{metric},{filters[0]}": sum(scores) / len(scores)}},
               "n-shot": {task: 0}, "versions": {task: 1.0},
               "config": {"model": "local-completions", "model_args": {"model": "m"}, "gen_kwargs": {}, "limit": None,
                          "batch_size": 1, "random_seed": 0},
               "lm_eval_version": "0.4.13", "model_name": "m", **(settings or {})}
    (out / f"results_{date}.json").write_text(json.dumps(results), encoding="utf-8")
    return root
