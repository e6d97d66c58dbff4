"""What every ``preflab`` command shares: the root Typer app, the two consoles, and exiting on bad input."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from preflab.io import is_stdout
from preflab.redact import redact

app = typer.Typer(
    name="preflab",
    help="Pairwise-preference lab: leaderboards with intervals, LLM judges and their calibration, a voting app.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err = Console(stderr=True)
#: The bundled demo arena: shipped inside the package as ``preflab.demo`` (data/demo in the checkout).
DEMO_DIR = Path(__file__).resolve().parents[1] / "preflab" / "demo"
if not DEMO_DIR.is_dir():  # a checkout run without installing: data/demo beside the packages
    DEMO_DIR = Path(__file__).resolve().parents[1] / "data" / "demo"


#: Set by ``preflab --debug``: errors a command would print as one line are raised instead (with traceback).
DEBUG = False


def fail(error: object, status: int = 2) -> NoReturn:
    """Print one clear error line and exit (2: bad input or usage; 1: the command itself failed); under
    ``--debug`` an exception is raised instead, so its traceback shows."""
    if DEBUG and isinstance(error, BaseException):
        raise error
    err.print(f"[red]error:[/red] {escape(redact(str(error)))}", highlight=False, soft_wrap=True)
    raise typer.Exit(status)


def report_console(output: str | Path | None) -> Console:
    """Where a command prints its human-readable report: stderr when its data goes to stdout (``-``)."""
    return err if is_stdout(output) else console
