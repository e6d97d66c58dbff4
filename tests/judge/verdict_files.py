"""Verdict files in `preflab judge run`'s format, written from chosen first-slot probabilities (test helper)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def write_verdicts(path: Path, p_first_xy, p_first_yx, **fields) -> Path:
    """One row per pair and order; ``fields`` (judge, rubric, rubric_hash, ...) go on every row."""
    rows = []
    for i, (pxy, pyx) in enumerate(zip(np.asarray(p_first_xy), np.asarray(p_first_yx), strict=True)):
        for order, p in (("xy", pxy), ("yx", pyx)):
            rows.append({"item_id": f"q{i}", "model_x": "m1", "model_y": "m2", "order": order,
                         "p_a": float(p), "p_b": float(1 - p), "p_tie": 0.0,
                         "verdict": "A" if p > 0.5 else "B", **fields})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path
