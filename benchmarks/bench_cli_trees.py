"""The warm CLI of two checkouts side by side: ``preflab rank w1.parquet --ci both --top 3`` and ``preflab --help``,
each checkout's own code (``PYTHONPATH``), runs interleaved (before, after, before, after, ...) so both see
the same load on a shared machine; the median of ``--runs`` each, and after / before as a ratio.

    python -m benchmarks.bench_cli_trees --before /path/to/main --after . --runs 5

Python compiles a checkout's modules on every run when ``PYTHONDONTWRITEBYTECODE`` is set (as on the shared
machines: ~45 ms of a ``rank``), as an installed package never does: ``--bytecode`` keeps each tree's bytecode
in a temporary folder (``PYTHONPYCACHEPREFIX``; the trees are not written to), filled by the warm-up run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

from benchmarks.bench_rank import make_w1

CLI = "import sys; from preflab_cli import main; sys.argv[0] = 'preflab'; main()"


def timed(tree: Path, args: list[str], pycache: Path | None = None) -> float:
    """Wall seconds of one ``preflab ARGS`` run of ``tree``'s code (from its own folder); its bytecode kept
    under ``pycache`` when given."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", CLI, *args], check=True, capture_output=True, env=env, cwd=tree)
    return time.perf_counter() - t0


def compare(before: Path, after: Path, runs: int, bytecode: bool = False) -> list[list[str]]:
    """Rows ``[command, before s, after s, after/before]``: medians of ``runs`` interleaved warm runs."""
    with tempfile.TemporaryDirectory() as tmp:
        caches = {before: Path(tmp) / "before", after: Path(tmp) / "after"} if bytecode else {}
        path = Path(tmp) / "w1.parquet"
        make_w1()[["model_a", "model_b", "winner"]].to_parquet(path)
        rows = []
        for label, args in [("preflab rank w1.parquet --ci both --top 3", ["rank", str(path), "--ci", "both",
                                                                         "--top", "3"]),
                            ("preflab --help", ["--help"])]:
            for tree in (before, after):
                timed(tree, args, caches.get(tree))  # warm: the compilation cache and the file cache
            walls: dict[Path, list[float]] = {before: [], after: []}
            for _ in range(runs):
                for tree in (before, after):
                    walls[tree].append(timed(tree, args, caches.get(tree)))
            b, a = median(walls[before]), median(walls[after])
            rows.append([label, f"{b:.2f}", f"{a:.2f}", f"{a / b:.2f}x"])
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", type=Path, required=True)
    p.add_argument("--after", type=Path, default=Path("."))
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--bytecode", action="store_true", help="keep each tree's compiled modules between runs")
    a = p.parse_args()
    load = os.getloadavg()[0]
    rows = compare(a.before.resolve(), a.after.resolve(), a.runs, a.bytecode)
    print("| command | before (s) | after (s) | after / before |\n|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print(f"median of {a.runs} interleaved warm runs each; load average {load:.1f} at start, "
          f"{os.getloadavg()[0]:.1f} at end; {os.cpu_count()} cores; bytecode "
          + ("kept between runs" if a.bytecode else "compiled each run" if os.environ.get("PYTHONDONTWRITEBYTECODE")
             else "as the environment keeps it"))


if __name__ == "__main__":
    main()
