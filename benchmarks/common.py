"""Small helpers shared by the benchmarks: timing and writing the Markdown tables the README quotes."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def best_of(fn: Callable[[], object], repeat: int = 3) -> float:
    """Best wall time in seconds over ``repeat`` runs (the least noisy estimate on a shared machine)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def write_table(name: str, title: str, header: list[str], rows: list[list[object]], notes: str = "") -> str:
    """Print a Markdown table and write it to ``benchmarks/results/<name>.md``; returns the text."""
    lines = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    text = "\n".join(lines) + ("\n\n" + notes if notes else "") + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.md").write_text(text)
    print(text)
    return text
