"""A benchmark file as preflab's judged-pairs table with objective labels (``attrs["label_source"] =
"correctness"``): answer A is x and B is y, the reference (``human``) is the correct answer. Reward-model
scores go through :func:`judge.verdicts.scores.scores_table` (``method: score``, P(x wins) = σ((s_x − s_y)/T));
a prompted judge's decisions are codes by identity. Lengths (characters) feed the longer-answer baseline.

RewardBench v1: which answer is x is fixed per prompt by a hash of its id (CRC-32, even: chosen is x), so the
correct answer is not always x. RewardBench 2: each correct completion against each wrong one is a pair
(``id/i-j``), pairs of one prompt sharing its id prefix.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from judge.benchmarks import judgebench as jb
from judge.benchmarks import rewardbench as rb
from judge.benchmarks import rewardbench2 as rb2
from judge.verdicts.scores import ScoreReading, scores_table
from preflab.errors import InputError
from preflab.outcomes import IDENTITY_NAMES

X, Y = "A", "B"


def _judgebench_pairs(path: Path, reading: ScoreReading) -> pd.DataFrame:
    rows = jb.read_judgebench(path)
    label = rows["label"].map(lambda c: IDENTITY_NAMES[int(c)])
    if "score_x_xy" in rows:
        parts = []
        for order in ("xy", "yx") if rows.attrs["games"] == 2 else ("xy",):
            parts.append(pd.DataFrame({"item_id": rows["item_id"], "model_x": X, "model_y": Y,
                                       "score_x": rows[f"score_x_{order}"], "score_y": rows[f"score_y_{order}"],
                                       "order": order, "label": label, "judge": rows.attrs.get("judge"),
                                       "line": np.arange(1, len(rows) + 1)}))
        frame = pd.concat(parts, ignore_index=True).sort_values("line", kind="stable", ignore_index=True)
        pairs = scores_table(frame.drop(columns="line"), str(path), reading, lines=frame["line"].to_numpy(),
                             label_source="correctness")
    else:
        pairs = rows[["item_id"]].assign(model_x=X, model_y=Y, judge_xy=rows["judge_xy"],
                                         judge_yx=rows["judge_yx"], human=rows["label"])
        pairs.attrs.update(source=str(path), notes=[], label_source="correctness",
                           settings={"judge model": rows.attrs.get("judge")} if rows.attrs.get("judge") else {})
    lengths = rows.set_index("item_id")[["len_x", "len_y"]]
    for col in ("len_x", "len_y"):
        pairs[col] = pairs["item_id"].map(lengths[col]).to_numpy(dtype=float)
    return pairs


def _rewardbench_pairs(path: Path, reading: ScoreReading) -> pd.DataFrame:
    rows = rb.read_rewardbench(path)
    missing = rows["score_chosen"].isna() | rows["score_rejected"].isna()
    if missing.any():
        line = int(np.flatnonzero(missing.to_numpy())[0]) + 1
        raise InputError(str(path), line, "scores_chosen", "no score (a classifier's results only)",
                         "calibrating needs each answer's score; `preflab judge bench` reads results alone")
    chosen_x = np.array([zlib.crc32(i.encode()) % 2 == 0 for i in rows["item_id"]])
    sc, sr = rows["score_chosen"].to_numpy(), rows["score_rejected"].to_numpy()
    lc, lr = rows["len_chosen"].to_numpy(), rows["len_rejected"].to_numpy()
    frame = pd.DataFrame({"item_id": rows["subset"] + "/" + rows["item_id"], "model_x": X, "model_y": Y,
                          "score_x": np.where(chosen_x, sc, sr), "score_y": np.where(chosen_x, sr, sc),
                          "label": np.where(chosen_x, "x", "y"), "judge": rows.attrs.get("model")})
    pairs = scores_table(frame, str(path), reading, label_source="correctness")
    pairs["len_x"], pairs["len_y"] = np.where(chosen_x, lc, lr), np.where(chosen_x, lr, lc)
    return pairs


def _rewardbench2_pairs(path: Path, reading: ScoreReading) -> pd.DataFrame:
    rows = rb2.read_rewardbench2(path)
    out = []
    for item, subset, scores, k in zip(rows["item_id"], rows["subset"], rows["scores"], rows["num_correct"],
                                       strict=True):
        for i in range(k):
            for j in range(k, scores.size):
                out.append({"item_id": f"{subset}/{item}/{i}-{j}", "model_x": X, "model_y": Y,
                            "score_x": scores[i], "score_y": scores[j], "label": "x"})
    frame = pd.DataFrame(out).assign(judge=rows.attrs.get("model"))
    flip = np.array([zlib.crc32(i.encode()) % 2 == 1 for i in frame["item_id"]])
    frame.loc[flip, ["score_x", "score_y"]] = frame.loc[flip, ["score_y", "score_x"]].to_numpy()
    frame.loc[flip, "label"] = "y"
    pairs = scores_table(frame, str(path), reading, label_source="correctness")
    pairs.attrs["notes"].append(f"{len(rows)} prompts as {len(pairs)} pairs (each correct completion against each "
                                "wrong one): pairs of one prompt are not independent")
    return pairs


def benchmark_pairs(path: str | Path, fmt: str, reading: ScoreReading = ScoreReading()) -> pd.DataFrame:
    """The file as a judged-pairs table labelled by correctness (``fmt``: judgebench, rewardbench,
    rewardbench2)."""
    readers = {"judgebench": _judgebench_pairs, "rewardbench": _rewardbench_pairs,
               "rewardbench2": _rewardbench2_pairs}
    pairs = readers[fmt](Path(path), reading)
    pairs.attrs["benchmark"] = fmt
    return pairs

