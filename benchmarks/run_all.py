"""Run every benchmark in turn (each in its own process) and print where its table was written.

``make bench`` calls this; ``python -m benchmarks.run_all bench_rank bench_lc`` runs a subset.
"""

from __future__ import annotations

import subprocess
import sys

from benchmarks.common import RESULTS

ALL = ["bench_aggregate", "bench_rank", "bench_lc", "bench_simulate", "bench_judge", "bench_judge_calibration",
       "bench_votes", "bench_compare"]


def main(names: list[str]) -> int:
    failed = []
    for name in names or ALL:
        print(f"=== {name}", flush=True)
        if subprocess.run([sys.executable, "-m", f"benchmarks.{name}"]).returncode != 0:
            failed.append(name)
    print(f"tables in {RESULTS}; failed: {', '.join(failed) or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
