"""JudgeBench's ``data/*.jsonl`` pairs (ScalerLab/JudgeBench: ``pair_id``, ``question``, ``response_A``,
``response_B``, ``label``, ``source``) as rows of preflab's pairs layout, so ``preflab judge run`` reads them as
published: x = ``response_A`` (named ``A``), y = ``response_B`` (named ``B``), the question as the prompt. The
labels (which answer is correct) are read by :mod:`judge.benchmarks.judgebench`.
"""

from __future__ import annotations

import json
from pathlib import Path

from preflab.errors import InputError
from preflab.io import iter_jsonl, iter_text_lines, json_type

FIELDS = ("pair_id", "question", "response_A", "response_B")
HINT = "rows come from JudgeBench's data/ folder (pair_id, question, response_A, response_B, label)"


def is_judgebench_pairs(path: str | Path) -> bool:
    """True when a JSONL file's first line is a JudgeBench pair (``pair_id``, ``response_A``, ``label``)."""
    try:
        text = next((raw.strip() for _, raw in iter_text_lines(path) if raw.strip()), "")
        first = json.loads(text) if text.startswith("{") else None
    except (InputError, OSError, ValueError):
        return False
    return isinstance(first, dict) and {"pair_id", "response_A", "label"} <= set(first)


def judgebench_pair_rows(path: str | Path) -> list[dict]:
    """The file's pairs as ``item_id, prompt, model_x, answer_x, model_y, answer_y`` rows; a missing or
    non-string field is an :class:`InputError` naming the file, line and field."""
    source, out = str(path), []
    for line, rec in iter_jsonl(path, HINT):
        for field in FIELDS:
            value = rec.get(field)
            if not isinstance(value, str) or value == "":
                problem = "missing" if value in (None, "") else f"{json_type(value)}, not a string"
                raise InputError(source, line, field, problem, HINT)
        out.append({"item_id": rec["pair_id"], "prompt": rec["question"], "model_x": "A",
                    "answer_x": rec["response_A"], "model_y": "B", "answer_y": rec["response_B"]})
    return out
