"""Score files with known truth for the scores-as-verdicts tests: a reward model whose score per answer is the
model's strength plus noise, and labels drawn from the Bradley-Terry model at a known temperature."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

MODELS = np.array(["alpha", "beta", "gamma", "delta"])
STRENGTH = np.array([1.0, 0.4, 0.0, -0.5])


def rm_frame(n: int = 400, seed: int = 0, temperature: float = 1.0, models=MODELS, strength=STRENGTH,
             labels: bool = True) -> pd.DataFrame:
    """``n`` pairs of two different models; ``score_* = strength + N(0, 1)``; label x with probability
    σ((s_x − s_y) / temperature), so T = ``temperature`` is the true reading of these scores."""
    rng = np.random.default_rng(seed)
    k = len(models)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    sx, sy = strength[a] + rng.normal(0, 1, n), strength[b] + rng.normal(0, 1, n)
    frame = pd.DataFrame({"item_id": [f"q{i:04d}" for i in range(n)], "model_x": models[a], "model_y": models[b],
                          "score_x": sx.round(6), "score_y": sy.round(6)})
    if labels:
        x_won = rng.random(n) < 1 / (1 + np.exp(-(frame["score_x"] - frame["score_y"]) / temperature))
        frame["label"] = np.where(x_won, "x", "y")
    return frame


def write_scores(path: Path, frame: pd.DataFrame) -> Path:
    """The frame in the file format its suffix names (.jsonl, .csv, .parquet)."""
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    elif path.suffix == ".parquet":
        frame.to_parquet(path, index=False)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in frame.to_dict(orient="records")), encoding="utf-8")
    return path
