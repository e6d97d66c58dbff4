"""Aggregation hot path: 10M synthetic battles -> (model_a, model_b, outcome) counts.

Times validation+typing from a raw pandas DataFrame (string names), aggregation of typed battles, and
pandas ``groupby(...).size()`` on the same frame as the reference. Run: ``python -m benchmarks.bench_aggregate``.
"""

from __future__ import annotations

import platform
import time

import numpy as np
import pandas as pd

from arena.io.battles import aggregate, load_battles
from benchmarks.common import best_of, write_table


def synthetic_frame(n: int, k: int = 100, seed: int = 0) -> pd.DataFrame:
    """``n`` battles among ``k`` models with 15% ties, names as strings (as a user's file would give)."""
    rng = np.random.default_rng(seed)
    names = np.array([f"model-{i:03d}" for i in range(k)], dtype=object)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    winner = np.array(["model_a", "model_b", "tie"], dtype=object)[rng.choice(3, n, p=[0.45, 0.40, 0.15])]
    return pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": winner})


def main() -> None:
    rows = []
    for n in (100_000, 1_000_000, 10_000_000):
        df = synthetic_frame(n)
        t0 = time.perf_counter()
        battles = load_battles(df)
        t_load = time.perf_counter() - t0
        t_agg = best_of(lambda: aggregate(battles))  # noqa: B023
        t_pd = best_of(lambda: df.groupby(["model_a", "model_b", "winner"]).size(), repeat=1)  # noqa: B023
        rows.append([f"{n:,}", f"{t_load:.2f}", f"{t_agg * 1000:.0f}", f"{t_pd:.2f}", f"{t_pd / t_agg:.0f}x"])
    write_table(
        "bench_aggregate",
        "Aggregation to (model_a, model_b, outcome) counts, 100 models",
        ["battles", "validate + type (s)", "aggregate (ms)", "pandas groupby (s)", "aggregate vs groupby"],
        rows,
        f"Machine: {platform.processor() or platform.machine()}, 2 cores. 'validate + type' is "
        "`load_battles(DataFrame)` (all checks, categorical names); 'aggregate' is `aggregate(battles)`.",
    )


if __name__ == "__main__":
    main()
