"""Benchmark: peak memory of ``preflab info`` / ``rank`` loading a large battles file (issue 14: < 4x the file).

A simulated Chatbot Arena file (nested ``conv_metadata``, 20 models) of about ``--mb`` megabytes is written as
JSONL, CSV and Parquet; each is loaded by ``preflab info`` in a fresh process whose peak RSS is read from
``getrusage``. The import baseline (Python, pandas, JAX: what any command costs before reading a byte) is
measured alone and reported, so the "data" column is what the file itself costs.
Run: ``.venv/bin/python benchmarks/bench_load_memory.py [--mb 200]``; writes
``benchmarks/results/bench_load_memory.md``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import write_table

ROWS_PER_MB = 3060  # simulated JSONL rows with conv_metadata per MB
CLI = [sys.executable, "-c", "from preflab.cli import main; main()"]


def child_peak_mb(cmd: list[str]) -> tuple[float, float, str]:
    """(peak RSS MB, wall s, last output line) of one fresh process."""
    t0 = time.perf_counter()
    code = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
            "print((p.stdout + p.stderr).strip().splitlines()[-1] if (p.stdout + p.stderr).strip() else '')")
    out = subprocess.run([sys.executable, "-c", code, *cmd], capture_output=True, text=True,
                         env={**os.environ, "JAX_PLATFORMS": "cpu"}).stdout.splitlines()
    return int(out[0]) / 1024, time.perf_counter() - t0, out[1] if len(out) > 1 else ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=200.0, help="Approximate JSONL size in MB (default 200).")
    ap.add_argument("--commands", default="info", help="Comma list of commands to measure: info,rank.")
    args = ap.parse_args()
    rows = []
    base, _, _ = child_peak_mb([sys.executable, "-c", "import arena.data, arena.leaderboard, preflab.cli"])
    with tempfile.TemporaryDirectory() as tmp:
        jsonl = Path(tmp) / "battles.jsonl"
        n = int(args.mb * ROWS_PER_MB)
        subprocess.run([*CLI, "simulate", "--output", str(jsonl), "-n", str(n), "-k", "20"], check=True,
                       capture_output=True, env={**os.environ, "JAX_PLATFORMS": "cpu"})
        files = [jsonl]
        for ext in (".csv", ".parquet"):
            dst = jsonl.with_suffix(ext)
            subprocess.run([*CLI, "convert", str(jsonl), str(dst)], check=True, capture_output=True,
                           env={**os.environ, "JAX_PLATFORMS": "cpu"})
            files.append(dst)
        for command in args.commands.split(","):
            for path in files:
                extra = ["--bootstrap", "10"] if command == "rank" else []
                peak, wall, last = child_peak_mb([*CLI, command, str(path), *extra])
                size = path.stat().st_size / 2**20
                rows.append([command, path.suffix, f"{n:,}", f"{size:.0f}", f"{peak:.0f}", f"{peak / size:.2f}",
                             f"{(peak - base) / size:.2f}", f"{wall:.1f}", last[:60]])
    write_table("bench_load_memory", "Peak memory loading a large battles file",
                ["command", "format", "rows", "file MB", "peak RSS MB", "peak / file", "(peak - imports) / file",
                 "wall s", "last line"], rows,
                notes=f"Import baseline (python + pandas + JAX, no data): {base:.0f} MB. Target: peak under 4x the "
                      "file size. Machine: 2 shared cores; peak RSS from getrusage (max RSS of the child).")


if __name__ == "__main__":
    main()
