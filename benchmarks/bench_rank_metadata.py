"""Benchmark: ``preflab rank --ci both`` on 1,000,000 battles in Chatbot Arena's layout with ``conv_metadata``.

The file comes from ``preflab simulate`` (100 models, nested ``conv_metadata`` per row), as Parquet; the same
battles without the column are the baseline the issue named (a rank that needs no style totals should cost
what it costs without them), and ``pandas.read_parquet`` of the file is the peer reading it whole. The same
battles as a JSON array (Chatbot Arena's ``clean_battle_*.json``) are ranked beside ``pandas.read_json`` of
that file (the peer the issue named; ``--json-only`` runs just this case, into
``bench_rank_metadata_json.md``; a full run writes its JSON rows there too). Each CLI time is the median of 3
warm runs, with its ``read`` part (``PREFLAB_TIMINGS``) and peak memory (``ru_maxrss`` of each child; pandas
runs in children of its own). Run: ``.venv/bin/python -m benchmarks.bench_rank_metadata``; writes
``benchmarks/results/bench_rank_metadata.md``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_rank import _cli, _env, cli_timings
from benchmarks.common import write_table

N = 1_000_000


def pandas_seconds(code: str, path: Path) -> float:
    """Seconds of ``code`` (pandas, on ``path``) in a fresh interpreter: a child process inherits the peak
    memory of the process it forks from (``ru_maxrss``), so this one never holds a whole frame itself."""
    timed = ("import sys, time\nimport pandas as pd\npath = sys.argv[1]\nt0 = time.perf_counter()\n"
             f"{code}\nprint(time.perf_counter() - t0)\n")
    out = subprocess.run([sys.executable, "-c", timed, str(path)], check=True, capture_output=True, text=True)
    return float(out.stdout.split()[-1])


def run_rank(path: Path, runs: int = 3) -> tuple[float, float, float]:
    """Median wall time, median read part and the largest peak RSS (MB) of ``preflab rank PATH --ci both``."""
    cmd = _cli(["rank", str(path), "--ci", "both"])
    subprocess.run(cmd, check=True, capture_output=True, env=_env())  # warm: compiled programs stored
    walls, reads, peak = [], [], 0.0
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                env=dict(_env(), PREFLAB_TIMINGS="1"))
        err = proc.stderr.read()  # type: ignore[union-attr]
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak, not the simulation's
        proc.returncode = os.waitstatus_to_exitcode(status)
        walls.append(time.perf_counter() - t0)
        reads.append(cli_timings(err)["read"][0])
        peak = max(peak, usage.ru_maxrss / 1024)
    return statistics.median(walls), statistics.median(reads), peak


def json_case(tmp: str, runs: int = 3) -> tuple[list[str], list[str]]:
    """The JSON array rows: ``rank --ci both`` of the array file and ``pandas.read_json`` of it (read only)."""
    path = Path(tmp) / "clean_battle_1m.json"
    subprocess.run(_cli(["simulate", "-n", str(N), "-k", "100", "--seed", "0", "-o", str(path)]), check=True,
                   capture_output=True, env=_env())
    wall, read, peak = run_rank(path, runs)
    t_pandas = pandas_seconds("pd.read_json(path)", path)
    return ([f"preflab rank --ci both, JSON array with conv_metadata ({path.stat().st_size / 1e6:.0f} MB)",
             f"{wall:.2f}", f"{read:.2f}", f"{peak:.0f}", f"wall {wall / t_pandas:.2f}x, read {read / t_pandas:.2f}x "
             "of pandas.read_json"],
            ["pandas.read_json of the JSON array (read only)", f"{t_pandas:.2f}", f"{t_pandas:.2f}", "", "1.00x"])


def main() -> None:
    if "--json-only" in sys.argv:
        with tempfile.TemporaryDirectory() as tmp:
            rows = list(json_case(tmp))
        _write(rows, "bench_rank_metadata_json")
        return
    with tempfile.TemporaryDirectory() as tmp:
        meta = Path(tmp) / "arena_1m.parquet"
        subprocess.run(_cli(["simulate", "-n", str(N), "-k", "100", "--seed", "0", "-o", str(meta)]), check=True,
                       capture_output=True, env=_env())
        bare = Path(tmp) / "arena_1m_bare.parquet"
        pandas_seconds(f"pd.read_parquet(path).drop(columns='conv_metadata').to_parquet({str(bare)!r})", meta)
        t_pandas = pandas_seconds("pd.read_parquet(path)", meta)
        with_meta, without = run_rank(meta), run_rank(bare)
    rows = [
        ["preflab rank --ci both, Parquet with conv_metadata", f"{with_meta[0]:.2f}", f"{with_meta[1]:.2f}",
         f"{with_meta[2]:.0f}", f"{with_meta[0] / without[0]:.2f}x"],
        ["preflab rank --ci both, the same battles without conv_metadata (baseline)", f"{without[0]:.2f}",
         f"{without[1]:.2f}", f"{without[2]:.0f}", "1.00x"],
        ["pandas.read_parquet of the file with conv_metadata (read only)", f"{t_pandas:.2f}", f"{t_pandas:.2f}", "",
         f"read {with_meta[1] / t_pandas:.2f}x of pandas"],
    ]
    with tempfile.TemporaryDirectory() as tmp:
        json_rows = list(json_case(tmp))
    _write(rows + json_rows, "bench_rank_metadata")
    _write(json_rows, "bench_rank_metadata_json")  # the JSON rows of the same run


def _write(rows: list[list[str]], name: str) -> None:
    load = os.getloadavg()[0]
    write_table(name, f"{N:,} battles in Chatbot Arena's layout, 100 models: rank --ci both",
                ["what", "wall (s, median of 3)", "read part (s)", "peak memory of any run (MB)", "ratio"], rows,
                notes=f"Machine: {os.cpu_count()} CPU cores shared with other jobs, load average {load:.1f} at the "
                      f"end. Targets: Parquet <= 2.5 s, JSON <= 5 s, peak <= 1 GB. Python {sys.version.split()[0]}.")


if __name__ == "__main__":
    main()
