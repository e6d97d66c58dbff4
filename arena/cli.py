"""The ``preflab`` command line: a thin shell over library calls.

Each subcommand parses options, calls one library function and prints or writes its result.
``preflab judge ...`` lives in :mod:`judge.cli` and is mounted here.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from arena.data import BattleDataError, aggregate, comparison_components, load_battles, write_battles

app = typer.Typer(
    name="preflab",
    help="Pairwise-preference lab: leaderboards with intervals, LLM judges and their calibration, a voting app.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err = Console(stderr=True)

LayoutOpt = Annotated[str, typer.Option("--layout", help="Input layout: arena (Chatbot Arena) or llmfao.")]
SkipOpt = Annotated[bool, typer.Option("--skip-bad-rows", help="Drop bad rows, count and report them.")]


def load_or_exit(path: Path, layout: str = "arena", skip_bad_rows: bool = False):
    """Load battles for a command; print a clear error and exit 2 on bad input, report skipped rows."""
    try:
        battles = load_battles(path, layout=layout, on_error="skip" if skip_bad_rows else "raise")
    except BattleDataError as e:
        err.print(f"[red]error:[/red] {e}", highlight=False)
        raise typer.Exit(2) from None
    if battles.skipped:
        err.print(f"[yellow]{battles.skip_report()}[/yellow]", highlight=False)
    return battles


@app.command()
def info(path: Path, layout: LayoutOpt = "arena", skip_bad_rows: SkipOpt = False) -> None:
    """Validate a battles file and summarise it: rows, models, outcomes, graph components."""
    battles = load_or_exit(path, layout, skip_bad_rows)
    counts = aggregate(battles)
    comps = comparison_components(counts)
    outcomes = battles.df["winner"].value_counts().to_dict()
    console.print(f"{path}: {len(battles)} battles, {counts.n_models} models, {len(battles.skipped)} skipped")
    console.print("outcomes: " + ", ".join(f"{k} {v}" for k, v in outcomes.items()))
    if len(comps) > 1:
        console.print(f"[yellow]{len(comps)} disconnected components:[/yellow] " + "; ".join(map(str, comps)))
    else:
        console.print("comparison graph: connected")


@app.command()
def convert(src: Path, dst: Path, layout: LayoutOpt = "arena", skip_bad_rows: SkipOpt = False) -> None:
    """Convert battles between JSON, JSONL, CSV and Parquet (by extension), validating on the way."""
    battles = load_or_exit(src, layout, skip_bad_rows)
    write_battles(battles, dst)
    console.print(f"wrote {len(battles)} battles to {dst}")


def _mount_subcommands() -> None:
    """Attach command groups that live in other modules (kept lazy-tolerant for partial installs)."""
    from judge.cli import app as judge_app

    app.add_typer(judge_app, name="judge", help="Run LLM judges and calibrate them against humans.")


_mount_subcommands()


def main() -> None:
    """Console-script entry point."""
    sys.exit(app())
