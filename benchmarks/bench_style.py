"""Style-control row of ``bench_rank`` alone, with process CPU time beside wall time and the load average.

W1 (1,000,000 battles, 100 models, 4 style features), ``rank_battles(..., ci="both", n_bootstrap=200,
style_control=True)`` end to end from the DataFrame, after one warm-up run (compilation cache).
Run: ``python -m benchmarks.bench_style [--repeat 3] [--refits 200]``. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import time

from benchmarks.bench_rank import make_w1


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--refits", type=int, default=200)
    args = p.parse_args()
    from arena.leaderboard import rank_battles
    from arena.leaderboard_options import IntervalOptions

    df = make_w1()
    rank_battles(df, IntervalOptions(ci="both", n_bootstrap=args.refits), style_control=True)  # warm-up
    for _ in range(args.repeat):
        load = os.getloadavg()[0]
        wall, cpu = time.perf_counter(), time.process_time()
        rank_battles(df, IntervalOptions(ci="both", n_bootstrap=args.refits), style_control=True)
        print(f"style control, 4 features, {args.refits} refits: wall {time.perf_counter() - wall:.2f} s, "
              f"CPU {time.process_time() - cpu:.2f} s, load average {load:.1f} -> {os.getloadavg()[0]:.1f}",
              flush=True)


if __name__ == "__main__":
    main()
