"""Benchmark: ``lc_leaderboard`` on AlpacaEval's published results folder (real annotations) at 5, 10 and all files.

The folder is ``results/<model>/weighted_alpaca_eval_gpt4_turbo/annotations.json`` of a checkout of
tatsu-lab/alpaca_eval named by ``PREFLAB_ALPACA_EVAL_REPO`` (too large to ship; the run is skipped without it).
Files are taken in name order, so 10 files include NullModel (adversarial outputs), the case that made most
bootstrap refits fall back to damped Newton. Each size: load, then the LC table with 1000 bootstrap refits, the
second call in the process (warm: programs compiled). Cost per model should stay flat as models grow.
Run: ``PREFLAB_ALPACA_EVAL_REPO=... .venv/bin/python -m benchmarks.bench_lc_alpaca``; writes
``benchmarks/results/bench_lc_alpaca.md``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from arena.lc.board import lc_leaderboard
from arena.lc.data import load_alpaca_table
from benchmarks.common import write_table

JUDGE = "weighted_alpaca_eval_gpt4_turbo"
N_BOOT = 1000


def main() -> None:
    repo = os.environ.get("PREFLAB_ALPACA_EVAL_REPO")
    files = sorted(Path(repo).glob(f"results/*/{JUDGE}/annotations.json")) if repo else []
    if not files:
        sys.exit("set PREFLAB_ALPACA_EVAL_REPO to a checkout of tatsu-lab/alpaca_eval (its results/ folder)")
    rows = []
    for n in (5, 10, len(files)):
        t0, c0 = time.perf_counter(), time.process_time()
        table = load_alpaca_table(files[:n])
        t_load, c_load = time.perf_counter() - t0, time.process_time() - c0
        lc_leaderboard(table, n_bootstrap=N_BOOT, warn=False)  # compiles this size's programs
        t0, c0 = time.perf_counter(), time.process_time()
        res = lc_leaderboard(table, n_bootstrap=N_BOOT, warn=False)
        t_fit, c_fit = time.perf_counter() - t0, time.process_time() - c0
        models = len(res)
        rows.append([n, models, f"{t_load:.2f}", f"{t_fit:.2f}", f"{(t_load + t_fit):.2f}",
                     f"{c_load:.2f}", f"{c_fit:.2f}", f"{1000 * (c_load + c_fit) / models:.0f}",
                     res.attrs["bootstrap_fallbacks"], f"{os.getloadavg()[0]:.1f}"])
    write_table("bench_lc_alpaca", f"LC on AlpacaEval's results folder ({JUDGE}), {N_BOOT} bootstrap refits, warm",
                ["files", "models fitted", "load (s)", "LC + bootstrap (s)", "total (s)", "load (CPU s)",
                 "LC + bootstrap (CPU s)", "CPU ms per model", "refits sent to the fallback", "load average (1 min)"],
                rows,
                notes=f"Machine: {os.cpu_count()} CPU cores shared with other jobs (load average beside each row); "
                      "CPU seconds (all threads of the process) depend less on the other jobs than wall seconds. "
                      "Target: all files <= 10 s warm, cost linear in models (flat ms per model).")


if __name__ == "__main__":
    main()
