"""Output helpers for ``preflab rank``: the rich table, file writers and the progress bar."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table


def rich_table(table: pd.DataFrame, top: int | None = None) -> Table:
    """The leaderboard as a rich table (rank, model, rating, interval, battles, W/L/T)."""
    level = table.attrs.get("level", 0.95)
    out = Table(title=f"Leaderboard ({table.attrs.get('ci', '')} {level:.0%} intervals, "
                      f"ties: {table.attrs.get('ties', 'half')})")
    for name, justify in (("rank", "right"), ("model", "left"), ("rating", "right"), ("interval", "right"),
                          ("battles", "right"), ("W / L / T", "right")):
        out.add_column(name, justify=justify)  # type: ignore[arg-type]
    shown = table if top is None else table.head(top)
    for row in shown.itertuples(index=False):
        out.add_row(str(row.rank), str(row.model), f"{row.rating:.1f}",
                    f"{row.lower - row.rating:+.1f} / {row.upper - row.rating:+.1f}", f"{row.battles:.0f}",
                    f"{row.wins:.0f} / {row.losses:.0f} / {row.ties:.0f}")
    return out


def write_table(table: pd.DataFrame, path: Path) -> Path:
    """Write the leaderboard as CSV, JSON (records plus the attrs as metadata) or Parquet, by extension."""
    ext = path.suffix.lower()
    if ext == ".csv":
        table.to_csv(path, index=False)
    elif ext == ".json":
        meta = {k: v for k, v in table.attrs.items()}
        path.write_text(json.dumps({"leaderboard": table.to_dict("records"), "meta": meta}, indent=1,
                                   default=str), encoding="utf-8")
    elif ext in (".parquet", ".pq"):
        plain = table.copy()
        plain.attrs = {}
        plain.to_parquet(path, index=False)
    else:
        raise ValueError(f"{path}: use .csv, .json or .parquet for --output")
    return path


@contextmanager
def bootstrap_progress(total: int, enabled: bool = True) -> Iterator[Callable[[int], None] | None]:
    """A rich progress bar for bootstrap refits; yields the callback ``advance(n_done)``."""
    if not enabled or total <= 0:
        yield None
        return
    with Progress(TextColumn("bootstrap"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), transient=True) as bar:
        task = bar.add_task("refits", total=total)
        yield lambda n: bar.advance(task, n)
