"""Judge calibration hot paths: bootstrap CIs for Cohen's kappa and the full report on real data.

The kappa bootstrap counts every resample's confusion matrix with one ``bincount``; the reference is a
Python loop over scikit-learn's ``cohen_kappa_score`` on the same resamples (same numbers, checked in
``tests/judge/test_calibrate_metrics.py``). Run: ``python -m benchmarks.bench_judge_calibration``.
"""

from __future__ import annotations

import platform
from pathlib import Path

import numpy as np
from sklearn.metrics import cohen_kappa_score

from benchmarks.common import best_of, write_table
from judge.metrics.adapters import load_llmfao, load_pandalm
from judge.metrics.agreement import kappa_interval
from judge.metrics.calibrate import calibrate

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def sklearn_loop(judge: np.ndarray, human: np.ndarray, n_bootstrap: int, seed: int = 0) -> tuple[float, float]:
    idx = np.random.default_rng(seed).integers(0, judge.size, size=(n_bootstrap, judge.size))
    boots = [cohen_kappa_score(judge[i], human[i]) for i in idx]
    return tuple(np.percentile(boots, [2.5, 97.5]))


def main() -> None:
    rows = []
    rng = np.random.default_rng(0)
    for n in (1_000, 10_000):
        human = rng.integers(0, 3, n).astype(float)
        judge = np.where(rng.random(n) < 0.6, human, rng.integers(0, 3, n)).astype(float)
        for b in (1_000,):
            t_ours = best_of(lambda: kappa_interval(judge, human, n_bootstrap=b))  # noqa: B023
            t_ref = best_of(lambda: sklearn_loop(judge, human, b), repeat=1)  # noqa: B023
            rows.append([f"kappa bootstrap, n={n:,}, B={b:,}", f"{t_ours:.3f}", f"{t_ref:.2f}",
                         f"{t_ref / t_ours:.0f}x"])
    if DATA.is_dir():
        pandalm, llmfao = load_pandalm(DATA / "pandalm"), load_llmfao(DATA / "llmfao")
        for name, pairs in (("PandaLM (999 pairs)", pandalm), ("LLMFAO (2,139 pairs)", llmfao)):
            t = best_of(lambda: calibrate(pairs, n_bootstrap=1000), repeat=2)  # noqa: B023
            rows.append([f"full calibrate(), {name}, B=1,000", f"{t:.3f}", "—", "—"])
    write_table(
        "bench_judge_calibration",
        "Judge calibration: bootstrap intervals and the full report",
        ["task", "preflab (s)", "sklearn loop (s)", "speed-up"],
        rows,
        f"Machine: {platform.processor() or platform.machine()}, 2 shared cores; best of 3 (reference: 1 run). "
        "'sklearn loop' calls `cohen_kappa_score` once per resample on identical resamples.",
    )


if __name__ == "__main__":
    main()
