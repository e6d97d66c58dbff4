"""Benchmark: reward-model scores as verdicts (issue 39): calibrating a RewardBench-sized scores file, a million
scored pairs, and the reward-model provider against the loopback server's 50 ms ceiling.

Peers, side by side: the same calibration on a verdict file of the same pairs in both orders (the reader every
judge run's file goes through), and the judge runner on the same loopback server. Targets: 3,000 pairs with
1,000 bootstrap resamples <= 1 s warm; 1,000,000 scored pairs <= 15 s; the provider >= 80% of the ceiling
(64 / 0.05 = 1,280 calls/s). Run: ``.venv/bin/python -m benchmarks.bench_scores``; writes
``benchmarks/results/bench_scores.md``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.common import best_of, write_table
from judge.metrics.adapters import load_verdicts_jsonl
from judge.metrics.calibrate import calibrate
from judge.runner.run import RunConfig, run_judge
from judge.runner.scoring import ScoreRunConfig, score_pairs
from judge.verdicts.pairs import Pair
from judge.verdicts.rubrics import BUILTIN
from judge.verdicts.scores import load_scores
from llm.providers.reward import RewardProvider

CONCURRENCY, DELAY, N_CALL_PAIRS = 64, 0.05, 2000
CEILING = CONCURRENCY / DELAY
REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))


def scores_frame(n: int, seed: int = 0) -> pd.DataFrame:
    """``n`` labelled pairs of a reward model over 50 models (scores = strength + noise, BT labels)."""
    rng = np.random.default_rng(seed)
    strength = rng.normal(0, 1, 50)
    a = rng.integers(0, 50, n)
    b = (a + rng.integers(1, 50, n)) % 50
    sx, sy = strength[a] + rng.normal(0, 1, n), strength[b] + rng.normal(0, 1, n)
    x_won = rng.random(n) < 1 / (1 + np.exp(-(sx - sy) / 1.5))
    names = np.array([f"m{k:02d}" for k in range(50)])
    return pd.DataFrame({"item_id": [f"q{i}" for i in range(n)], "model_x": names[a], "model_y": names[b],
                         "score_x": sx.round(5), "score_y": sy.round(5), "label": np.where(x_won, "x", "y")})


def write_jsonl(path: Path, frame: pd.DataFrame) -> Path:
    path.write_text(frame.to_json(orient="records", lines=True), encoding="utf-8")
    return path


def verdict_file(path: Path, frame: pd.DataFrame) -> Path:
    """The same pairs as a `preflab judge run` verdict file (both orders, probabilities), labels attached."""
    p = 1 / (1 + np.exp(-(frame["score_x"] - frame["score_y"]).to_numpy()))
    rows = []
    for r, px in zip(frame.itertuples(index=False), p, strict=True):
        for order, pa in (("xy", px), ("yx", 1 - px)):
            rows.append({"item_id": r.item_id, "model_x": r.model_x, "model_y": r.model_y, "order": order,
                         "verdict": "A" if pa >= 0.5 else "B", "p_a": pa, "p_b": 1 - pa, "p_tie": 0.0,
                         "method": "logprob-first-token"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def calibration_rows(tmp: Path) -> list[list[object]]:
    rows = []
    small = scores_frame(3000)
    scores = write_jsonl(tmp / "scores3k.jsonl", small)
    verdicts = verdict_file(tmp / "verdicts3k.jsonl", small)
    human = np.where(small["label"] == "x", 0.0, 1.0)

    def with_labels(pairs: pd.DataFrame) -> pd.DataFrame:
        return pairs.assign(human=human)

    calibrate(load_scores(scores), n_bootstrap=1000)  # warm: imports, first calls
    t_scores = best_of(lambda: calibrate(load_scores(scores), n_bootstrap=1000), REPEATS)
    t_verdicts = best_of(lambda: calibrate(with_labels(load_verdicts_jsonl(verdicts)), n_bootstrap=1000), REPEATS)
    rows.append(["3,000 pairs, scores JSONL: read + calibrate, B = 1,000 (warm)", f"{t_scores:.2f}", "≤ 1",
                 f"{t_scores / t_verdicts:.2f}x the verdict-file peer"])
    rows.append(["peer: the same pairs as a judge-run verdict file (both orders): read + calibrate",
                 f"{t_verdicts:.2f}",
                 "", "1.00x"])
    big = scores_frame(1_000_000, seed=1)
    for suffix in ("parquet", "jsonl"):
        path = tmp / f"scores1m.{suffix}"
        big.to_parquet(path, index=False) if suffix == "parquet" else write_jsonl(path, big)
        t0 = time.perf_counter()
        pairs = load_scores(path)
        t_read = time.perf_counter() - t0
        calibrate(pairs, n_bootstrap=1000)
        t_all = time.perf_counter() - t0
        rows.append([f"1,000,000 pairs, scores {suffix}: read + calibrate, B = 1,000", f"{t_all:.2f}", "≤ 15",
                     f"read {t_read:.2f} s"])
    return rows


def call_pairs(n: int) -> list[Pair]:
    return [Pair(f"q{i}", f"Question {i}?", "mx", f"answer x {i}", "my", f"answer y {i}") for i in range(n)]


def provider_rows() -> list[list[object]]:
    server = subprocess.Popen([sys.executable, "-m", "tests.judge.fault_server", "--delay", str(DELAY)],
                              stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().split()[1]
        base = url.removesuffix("/v1")
        config = ScoreRunConfig(concurrency=CONCURRENCY)
        score_pairs(call_pairs(50), RewardProvider("bench", base), config)  # warm up

        def reward_run() -> tuple[int, float]:
            t0 = time.perf_counter()
            _, stats = score_pairs(call_pairs(N_CALL_PAIRS), RewardProvider("bench", base), config)
            return stats.calls, time.perf_counter() - t0

        def judge_run() -> tuple[int, float]:
            t0 = time.perf_counter()
            res = run_judge(call_pairs(N_CALL_PAIRS), f"local:{url}#bench", RunConfig(BUILTIN["abt"],
                                                                                    concurrency=CONCURRENCY))
            return res.stats.calls, time.perf_counter() - t0

        setups = (("reward model: judge score, /pooling, no cache", reward_run),
                  ("peer: judge runner, /v1/chat/completions, no cache (both orders)", judge_run))
        runs: dict[str, list[tuple[int, float]]] = {label: [] for label, _ in setups}
        for _ in range(REPEATS):  # interleaved, so a change in the machine's load hits both alike
            for label, fn in setups:
                runs[label].append(fn())
        rows = []
        for label, _ in setups:
            calls, wall = min(runs[label], key=lambda r: r[1])
            rows.append([f"{label}, concurrency {CONCURRENCY}", f"{wall:.2f}",
                         f"{calls:,} calls, {calls / wall:,.0f} calls/s", f"{calls / wall / CEILING:.2f} of ceiling"])
        return rows
    finally:
        server.terminate()
        server.wait()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        rows = calibration_rows(Path(tmp))
    rows += provider_rows()
    load = os.getloadavg()[0]
    write_table("bench_scores", "Reward-model scores as verdicts", ["what", "wall s", "target / detail", "ratio"],
                rows, notes=f"Best of {REPEATS} runs where repeated. The loopback server (tests.judge.fault_server) "
                f"answers in {DELAY * 1000:.0f} ms in its own process; ceiling at concurrency {CONCURRENCY}: "
                f"{CEILING:,.0f} calls/s; target >= 80% of it. Machine: 2 CPU cores shared with other jobs "
                f"(1-minute load average {load:.1f} at the end of the run).")


if __name__ == "__main__":
    main()
