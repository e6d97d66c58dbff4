"""Output helpers for ``preflab rank``: the rich table, file writers and the progress bar."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

if TYPE_CHECKING:
    import pandas as pd


def rich_table(table: pd.DataFrame, top: int | None = None) -> Table:
    """The leaderboard as a rich table (rank, model, rating, interval, battles, W/L/T; ``ess`` when present)."""
    # imported here: arena.leaderboard_table loads JAX, which `rank` imports in a thread while the file is read
    from arena.leaderboard_table import display_decimals

    level = table.attrs.get("level", 0.95)
    both = {"lower_bootstrap", "lower_sandwich"} <= set(table.columns) and table.attrs.get("ci") == "both"
    kinds = ("bootstrap", "sandwich") if both else ("",)
    ci = "bootstrap and sandwich" if both else table.attrs.get("ci", "")
    out = Table(title=f"Leaderboard ({ci} {level:.0%} intervals, ties: {table.attrs.get('ties', 'half')})")
    intervals = [(k or "interval", k and f"_{k}") for k in kinds]  # (column title, suffix of lower/upper)
    for name, justify in (("rank", "right"), ("model", "left"), ("rating", "right"),
                          *((title, "right") for title, _ in intervals), ("battles", "right"), ("W / L / T", "right")):
        out.add_column(name, justify=justify)  # type: ignore[arg-type]
    ess = "ess" in table.columns
    if ess:
        out.add_column("ess", justify="right")
    shown = table if top is None else table.head(top)
    d = display_decimals(table)
    for row in shown.itertuples(index=False):
        lo_hi = [(getattr(row, "lower" + sfx) - row.rating, getattr(row, "upper" + sfx) - row.rating)
                 for _, sfx in intervals]
        cells = [f"{lo:+.{d}f} / {hi:+.{d}f}" for lo, hi in lo_hi]
        rating, style = f"{row.rating:.{d}f}", None
        if not getattr(row, "identified", True):  # Ford's condition fails, or style control: see the warning
            cells = ["unbounded (no MLE)" if table.attrs.get("separation") else "not identified"] * len(cells)
            rating, style = (rating if table.attrs.get("separation") else "—"), "dim"
        out.add_row(str(row.rank), str(row.model), rating, *cells, f"{row.battles:.0f}",
                    f"{row.wins:.0f} / {row.losses:.0f} / {row.ties:.0f}", *([f"{row.ess:.0f}"] if ess else []),
                    style=style)
    sep = table.attrs.get("separation")
    captions = [f"sampling unit: {table.attrs['unit_text']}"] if table.attrs.get("unit_text") else []
    if sep:
        groups = "; ".join("{" + ", ".join(g[:4]) + (", ..." if len(g) > 4 else "") + "}" for g in sep["groups"][:5])
        captions.append("no MLE: the models split into groups (see the warning): " + groups)
    if captions:
        out.caption = "\n".join(captions)
    return out


#: ``--output`` suffixes: the table as data (every column) or to share (:mod:`arena.leaderboard_share`).
DATA_SUFFIXES = (".csv", ".json", ".jsonl", ".parquet", ".pq")
SHARE_SUFFIXES = {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html"}


def check_output(output: Path | None) -> str | None:
    """Why ``--output`` cannot be written (None when it can): checked before the fit, not after."""
    if output is None or str(output) == "-" or output.suffix.lower() in (*DATA_SUFFIXES, *SHARE_SUFFIXES):
        return None
    return (f"--output {output}: unknown format {output.suffix or '(no suffix)'!r}; use .csv, .json or .parquet "
            "(every column) or .md or .html (the table to share)")


def write_board(table: pd.DataFrame, output: Path) -> str:
    """Write the leaderboard by suffix: .md/.html the shared table (:func:`arena.leaderboard_share.
    leaderboard_bytes`, the bytes the app's downloads hold), others every column (:func:`preflab.io.write_table`)."""
    from preflab.io import write_output, write_table

    fmt = SHARE_SUFFIXES.get(output.suffix.lower())
    if fmt is None:
        return write_table(table, output, meta_key="leaderboard")
    from arena.leaderboard_share import leaderboard_bytes

    return write_output(output, leaderboard_bytes(table, fmt))


@contextmanager
def bootstrap_progress(total: int, enabled: bool = True) -> Iterator[Callable[[int], None] | None]:
    """A rich progress bar for bootstrap refits; yields the callback ``advance(n_done)``."""
    if not enabled or total <= 0:
        yield None
        return
    # (~0.02 s of imports: only on a terminal)
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("bootstrap"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), transient=True) as bar:
        task = bar.add_task("refits", total=total)
        yield lambda n: bar.advance(task, n)
