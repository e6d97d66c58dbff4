"""Vote-write latency (p50/p95) and throughput: SQLite (WAL) and PostgreSQL 15, 1 / 8 / 32 concurrent writers.

Each writer is a separate process (``tests.harness.vote_writer``) casting votes one transaction each, as the app
does; all writers wait on a start barrier, so throughput = all votes / (last end - first start).
PostgreSQL is a throw-away local server (Debian's binaries, unix socket, default fsync on).

    python -m benchmarks.bench_votes [--votes 1600] [--writers 1,8,32]   # -> benchmarks/results/bench_votes.md
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import write_table

ROOT = Path(__file__).resolve().parents[1]


def run_config(url: str, writers: int, total: int) -> dict:
    """Write ``total`` votes with ``writers`` processes into a fresh store at ``url``."""
    from tests.harness.vote_writer import stress_items
    from voting.store import import_items, open_store

    per = max(1, total // writers)
    engine = open_store(url)
    import_items(engine, stress_items(per), "stress")
    engine.dispose()
    go = Path(tempfile.mkdtemp()) / "go"
    cmd = [sys.executable, "-m", "tests.harness.vote_writer", url]
    procs = [subprocess.Popen([*cmd, f"w{k}", str(per), "--go", str(go)], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True) for k in range(writers)]
    outs = _released_together(procs, go)
    return summarise(writers, outs)


def _released_together(procs: list[subprocess.Popen], go: Path) -> list[str]:
    """Release the writers at once (each reports "ready" with its store open) and collect what they print."""
    outs = []
    try:
        for p in procs:  # start barrier: every writer has its store open
            if p.stdout.readline().strip() != "ready":
                raise RuntimeError(f"a writer failed to start (exit code {p.wait()})")
        go.touch()
        for p in procs:
            outs.append(p.communicate(timeout=600)[0])
            if p.returncode:
                raise RuntimeError(f"a writer failed (exit code {p.returncode})")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    return outs


def summarise(writers: int, outs: list[str]) -> dict:
    """Latency percentiles and throughput from the writers' ``start``, ``end`` and per-vote latency lines."""
    lat, starts, ends = [], [], []
    for out in outs:
        for line in out.splitlines():
            key, value = line.split()
            if key == "start":
                starts.append(float(value))
            elif key == "end":
                ends.append(float(value))
            else:
                lat.append(float(value))
    lat_ms = np.array(lat) * 1000
    return {"writers": writers, "votes": len(lat), "p50_ms": float(np.percentile(lat_ms, 50)),
            "p95_ms": float(np.percentile(lat_ms, 95)), "throughput": len(lat) / (max(ends) - min(starts))}


def _sqlite_url(tmp: Path, tag: str) -> str:
    return f"sqlite:///{tmp / f'bench-{tag}.db'}"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--votes", type=int, default=1600, help="votes per configuration (split over the writers)")
    ap.add_argument("--writers", default="1,8,32")
    args = ap.parse_args(argv)
    counts = [int(w) for w in args.writers.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for w in counts:
            rows.append({"backend": "SQLite (WAL)", **run_config(_sqlite_url(Path(tmp), str(w)), w, args.votes)})
            print(rows[-1], flush=True)
    from tests.harness import pg_server

    if pg_server.available():
        import sqlalchemy as sa

        from voting.store import metadata

        with pg_server.temporary_postgres(max_connections=max(counts) + 20) as url:
            for w in counts:
                engine = sa.create_engine(url)
                metadata.drop_all(engine)
                engine.dispose()
                rows.append({"backend": "PostgreSQL 15", **run_config(url, w, args.votes)})
                print(rows[-1], flush=True)
    base = {r["backend"]: r["throughput"] for r in rows if r["writers"] == counts[0]}
    header = ["backend", "writers", "votes", "p50 latency (ms)", "p95 latency (ms)", "throughput (votes/s)",
              f"vs {counts[0]} writer(s)"]
    table = [[r["backend"], r["writers"], r["votes"], f"{r['p50_ms']:.2f}", f"{r['p95_ms']:.2f}",
              f"{r['throughput']:.0f}", f"{r['throughput'] / base[r['backend']]:.2f}x"] for r in rows]
    notes = (f"{os.cpu_count()} CPU cores, shared with other jobs while measured ({time.strftime('%Y-%m-%d')}); "
             "each vote is one transaction from its own writer process (`tests.harness.vote_writer`), all writers "
             "released together; throughput counts all writers together. PostgreSQL: local server, unix socket, "
             "fsync on; SQLite: WAL, synchronous=NORMAL, BEGIN IMMEDIATE with busy_timeout and retries.")
    write_table("bench_votes", "Vote writes: latency and throughput", header, table, notes)

if __name__ == "__main__":
    main()
