"""Simulator and pair-picker speed: 10M battles, next_pair for 20 models, vmapped coverage fits.

Run: ``python -m benchmarks.bench_simulate``. Writes ``benchmarks/results/bench_simulate.md``.
"""

from __future__ import annotations

import platform
import random
import statistics
import time

import numpy as np

from arena.io.battles import aggregate
from arena.simulation.files import lengths_for, simulate
from arena.simulation.sampling import estimate_ratings, next_pair
from arena.simulation.simulate import ArenaSpec, codes_to_battles, simulate_codes, spread_strengths
from arena.simulation.studies import fit_arenas, outcome_tensor
from benchmarks.common import best_of, write_table


def python_loop(spec: ArenaSpec, n: int) -> None:
    """Reference: the same BT draw (pairs, log-normal lengths, length bias) one battle at a time."""
    s, k = spec.strengths, spec.n_models
    for _ in range(n):
        a, b = random.sample(range(k), 2)
        la, lb = random.lognormvariate(6.0, 0.5), random.lognormvariate(6.0, 0.5)
        d = s[a] - s[b] + spec.position_bias + spec.length_bias * (la - lb) / (la + lb)
        _ = 0 if random.random() < 1 / (1 + 2.718281828 ** -d) else 1


def main() -> None:
    spec = ArenaSpec(spread_strengths(20, 3.0), ties="rao-kupper", tie_rate=0.15, position_bias=0.1,
                     length_bias=0.8, mean_tokens=lengths_for(20, 0.7, 0), n_voters=1000, random_voters=0.05)
    rows = []
    t_py = best_of(lambda: python_loop(spec, 100_000), repeat=1) / 100_000
    for n in (1_000_000, 10_000_000):
        rng = np.random.default_rng(0)
        t0 = time.perf_counter()
        codes = simulate_codes(spec, n, rng)
        t_codes = time.perf_counter() - t0
        t0 = time.perf_counter()
        codes_to_battles(spec, codes)
        t_frame = time.perf_counter() - t0
        rows.append([f"{n:,}", f"{t_codes:.2f}", f"{t_frame:.2f}", f"{n / (t_codes + t_frame) / 1e6:.1f}",
                     f"{t_py * n:.0f}", f"{t_py * n / (t_codes + t_frame):.0f}x"])
    write_table(
        "bench_simulate", "Simulating battles (20 models, Rao-Kupper ties, position + length bias, 1000 voters)",
        ["battles", "simulate_codes (s)", "to Battles + style totals (s)", "M battles/s",
         "Python loop, extrapolated (s)", "speed-up"], rows,
        f"Machine: {platform.processor() or platform.machine()}, 2 cores shared with other jobs. The Python "
        "loop is timed on 100,000 battles and scaled.")

    battles, _ = simulate(ArenaSpec(spread_strengths(20, 3.0)), 5000, seed=1)
    counts = aggregate(battles)
    ratings = estimate_ratings(counts)
    next_pair(counts, seed=0)  # compile once
    with_fit = [_timed(lambda: next_pair(counts, seed=0)) for _ in range(50)]
    given = [_timed(lambda: next_pair(counts, ratings, seed=0)) for _ in range(50)]
    rows2 = [["ratings estimated from counts (BT fit + pick)", f"{statistics.median(with_fit):.2f}",
              f"{50 / statistics.median(with_fit):.0f}x"],
             ["ratings passed in (pick only)", f"{statistics.median(given):.2f}",
              f"{50 / statistics.median(given):.0f}x"]]
    spec5 = ArenaSpec((1.6, 1.2, 0.9, 0.4, 0.0))
    rng = np.random.default_rng(2)
    outcomes = np.stack([outcome_tensor(simulate_codes(spec5, 500, rng), 5) for _ in range(2000)])
    fit_arenas(outcomes[:10])
    t_many = best_of(lambda: fit_arenas(outcomes), repeat=1)
    write_table(
        "bench_sampling", "next_pair for 20 models (median of 50 warm calls) and vmapped arena fits",
        ["call", "time (ms)", "headroom vs 50 ms budget"], rows2 + [
            ["fit_arenas: 2000 arenas x 500 votes, BT fit + sandwich (vmapped)", f"{t_many * 1000:.0f}",
             f"{t_many * 1000 / 2000:.2f} ms per arena"]],
        "The first call compiles the BT fit (about a second, then cached on disk by JAX).")


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


if __name__ == "__main__":
    main()
