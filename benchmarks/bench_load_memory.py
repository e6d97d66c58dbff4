"""Benchmark: peak memory of ``preflab info`` and ``rank`` on large battles files (target: < 4x the file).

A simulated Chatbot Arena file (nested ``conv_metadata``, 20 models) is measured two ways: the same rows in
every format (``--mb`` of JSONL, about 612,000 rows at 200: the CSV is smaller and the Parquet file eight
times smaller), and every format at about ``--mb`` megabytes of file (the issue's "a 200 MB file": the Parquet
file then holds several million rows, simulated in parts with different seeds and written as one file, a row
group per part). Each file is loaded by ``info`` and ``rank`` (default interval: 1000 bootstrap refits) in a
fresh process whose peak RSS and CPU time are read from ``getrusage``. Two baselines are measured alone: the
imports (Python, pandas, JAX) and, for each command, the same command on
a 2,000-row file (for rank: JAX's runtime and compiled refits, which do not grow with the file).
Run: ``.venv/bin/python -m benchmarks.bench_load_memory [--mb 200] [--commands info,rank]``; writes
``benchmarks/results/bench_load_memory.md``. To measure another checkout's code, run this file from that
checkout's directory with ``PYTHONPATH=<that checkout>`` (the children import from their working directory).
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import write_table

ROWS_PER_MB = 3060  # simulated JSONL rows with conv_metadata per MB
PART_ROWS = 700_000  # rows per simulated part of a large file (the simulator holds its rows as dicts)
CLI = [sys.executable, "-c", "from preflab_cli import main; main()"]
ENV = {**os.environ, "JAX_PLATFORMS": "cpu"}


def child_peak(cmd: list[str]) -> tuple[float, float, float, str]:
    """(peak RSS MB, CPU s, wall s, last output line) of one fresh process."""
    t0 = time.perf_counter()
    code = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
            "r = resource.getrusage(resource.RUSAGE_CHILDREN); print(r.ru_maxrss); print(r.ru_utime + r.ru_stime); "
            "print((p.stdout + p.stderr).strip().splitlines()[-1] if (p.stdout + p.stderr).strip() else '')")
    out = subprocess.run([sys.executable, "-c", code, *cmd], capture_output=True, text=True, env=ENV).stdout
    lines = out.splitlines()
    return int(lines[0]) / 1024, float(lines[1]), time.perf_counter() - t0, lines[2] if len(lines) > 2 else ""


def simulate(path: Path, n: int, seed: int = 0) -> None:
    subprocess.run([*CLI, "simulate", "--output", str(path), "-n", str(n), "-k", "20", "--seed", str(seed)],
                   check=True, capture_output=True, env=ENV)


def convert(src: Path, dst: Path) -> Path:
    subprocess.run([*CLI, "convert", str(src), str(dst)], check=True, capture_output=True, env=ENV)
    return dst


def rows_for(path: Path, n: int, mb: float) -> int:
    """Rows of the same simulation that make about ``mb`` megabytes in ``path``'s format."""
    return int(n * mb * 2**20 / path.stat().st_size)


def large_parquet(path: Path, n: int) -> Path:
    """A Parquet file of ``n`` simulated rows, simulated in parts (seeds 1, 2, ...) and written as one file."""
    import pyarrow.parquet as pq

    parts = math.ceil(n / PART_ROWS)
    writer = None
    for i in range(parts):
        part = path.with_name(f"part{i}.parquet")
        simulate(part, n // parts + (i < n % parts), seed=i + 1)
        table = pq.read_table(part)
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
        del table
        part.unlink()
    writer.close()  # type: ignore[union-attr]
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=200.0, help="Approximate file size in MB (default 200).")
    ap.add_argument("--commands", default="info,rank", help="Comma list of commands to measure: info,rank.")
    ap.add_argument("--same-rows", action=argparse.BooleanOptionalAction, default=True,
                    help="Also measure CSV and Parquet with the JSONL file's rows (default: yes).")
    args = ap.parse_args()
    load = os.getloadavg()
    base, _, _, _ = child_peak([sys.executable, "-c", "import arena.io.battles, arena.leaderboard, preflab_cli"])
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "small.jsonl"
        simulate(small, 2000)
        fixed = {c: child_peak([*CLI, c, str(small)])[0] for c in args.commands.split(",")}
        jsonl = Path(tmp) / "battles.jsonl"
        n = int(args.mb * ROWS_PER_MB)
        simulate(jsonl, n)
        csv, parquet = convert(jsonl, jsonl.with_suffix(".csv")), convert(jsonl, jsonl.with_suffix(".parquet"))
        n_csv, n_parquet = rows_for(csv, n, args.mb), rows_for(parquet, n, args.mb)
        same = [(jsonl, n), (csv, n), (parquet, n)] if args.same_rows else [(jsonl, n)]
        if not args.same_rows:
            csv.unlink()
        sized = Path(tmp) / "sized.jsonl"
        simulate(sized, n_csv)
        big_csv = convert(sized, Path(tmp) / "sized.csv")
        sized.unlink()
        files = [*same, (big_csv, n_csv), (large_parquet(Path(tmp) / "sized.parquet", n_parquet), n_parquet)]
        rows = []
        for command in args.commands.split(","):
            for path, count in files:
                peak, cpu, wall, last = child_peak([*CLI, command, str(path)])
                size = path.stat().st_size / 2**20
                rows.append([command, path.suffix, f"{count:,}", f"{size:.0f}", f"{peak:.0f}", f"{peak / size:.2f}",
                             f"{(peak - base) / size:.2f}", f"{(peak - fixed[command]) / size:.2f}", f"{cpu:.1f}",
                             f"{wall:.1f}", last[:50]])
    write_table("bench_load_memory", "Peak memory of info and rank on large battles files",
                ["command", "format", "rows", "file MB", "peak RSS MB", "peak / file", "(peak - imports) / file",
                 "(peak - fixed) / file", "CPU s", "wall s", "last line"], rows,
                notes=f"Import baseline (python + pandas + JAX, no data): {base:.0f} MB. 'fixed': the same command "
                      "on a 2,000-row file (" + ", ".join(f"{c} {v:.0f} MB" for c, v in fixed.items()) + "; info "
                      "imports no JAX, rank adds JAX's runtime and compiled bootstrap refits), what the command "
                      "costs whatever the file. "
                      f"Files: the same {n:,} rows in each format, then each format at about {args.mb:.0f} MB. "
                      "Target: peak under 4x the file size. Peak RSS and CPU (user + system) from "
                      f"getrusage of the child. Machine: {os.cpu_count()} cores, load average {load[0]:.1f} at the "
                      "start.")


if __name__ == "__main__":
    main()
