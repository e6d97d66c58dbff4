"""What every ``preflab`` command shares: the root Typer app, the two consoles, exiting on bad input, and
the start-up helpers of the computing commands (JAX imported in the background, per-part timings)."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, NoReturn

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
# The judge call options that `judge run` and `compare` share.
JUDGE_CACHE = Path.home() / ".cache" / "preflab" / "judge.sqlite"
CacheOpt = Annotated[Path, typer.Option(help="SQLite call cache.")]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the call cache.")]
RpmOpt = Annotated[float | None, typer.Option(help="Requests per minute limit.")]
TpmOpt = Annotated[float | None, typer.Option(help="Tokens per minute limit.")]
TimeoutOpt = Annotated[float, typer.Option(help="Seconds per call before it is retried.")]
SamplesOpt = Annotated[int, typer.Option(help="K sampled text verdicts per order instead of logprobs (0 = logprobs).")]
MaxTokensOpt = Annotated[int | None, typer.Option(help="Tokens to generate (default 3, or 16 when sampling).")]

#: The width of output that is not a terminal (a pipe, a file) unless ``COLUMNS`` says otherwise: rich would cut
#: tables and lines at 80 columns there; this wide, a table keeps its natural width.
PIPE_WIDTH = 500


def make_console(stderr: bool = False, **kwargs: object) -> Console:
    """A rich console on stdout (or stderr) that wraps at the terminal's width, and not at all short of
    :data:`PIPE_WIDTH` when the stream is a pipe or a file."""
    stream = sys.stderr if stderr else sys.stdout
    wide = not (stream.isatty() or os.environ.get("COLUMNS"))
    return Console(stderr=stderr, width=PIPE_WIDTH if wide else None, **kwargs)  # type: ignore[arg-type]


console = make_console()
err = make_console(stderr=True, soft_wrap=True)  # a message or a path is one line, never cut at 80 columns
#: The bundled demo arena: shipped inside the package as ``preflab.demo`` (data/demo in the checkout).
DEMO_DIR = Path(__file__).resolve().parents[1] / "preflab" / "demo"
if not DEMO_DIR.is_dir():  # a checkout run without installing: data/demo beside the packages
    DEMO_DIR = Path(__file__).resolve().parents[1] / "data" / "demo"


#: Set by ``preflab --debug``: errors a command would print as one line are raised instead (with traceback).
DEBUG = False


def _as_flag(prefix: str, mapping: str) -> str:
    """``'A': 'b', 'C': 'd'`` (a Python dict's items) as ``PREFIX A=b,C=d`` (quoted when a label has a space)."""
    import re

    pairs = re.findall(r"'((?:[^'\\]|\\.)*)': '((?:[^'\\]|\\.)*)'", mapping)
    if not pairs:
        return prefix + (" FILE_COLUMN=model_a" if prefix == "--columns" else " LABEL=tie")
    text = ",".join(f"{a}={b}" for a, b in pairs)
    return f"{prefix} {text!r}" if " " in text else f"{prefix} {text}"


#: Library words (Python arguments) -> the flags that do the same, for every message a command prints.
CLI_WORDS = (("rank without style control", "rank without --style-control"),
             ("exclude_models", "--filter exclude=M1,M2"), ("--ridge 0.01 / ridge=0.01", "--ridge 0.01"),
             ("load with on_error='skip'", "pass --skip-bad-rows"), ("with on_error='skip'", "with --skip-bad-rows"),
             ("on_error='skip'", "--skip-bad-rows"),
             (", or pass fmt=", ", or rename the file to one of these extensions"))


def cli_words(note: str) -> str:
    """A library message with its Python argument names replaced by the command line's flags
    (``layout=ColumnMap(columns=...)`` -> ``--columns``, ``ColumnMap(winners=...)`` -> ``--winner-map``,
    ``on_error='skip'`` -> ``--skip-bad-rows``, ``style_features=`` -> ``--style-features``)."""
    import re

    note = re.sub(r"style_features=(\w+(?:,\w+)*)", r"--style-features \1", note)
    note = re.sub(r"(?:layout=)?ColumnMap\(columns=\{(.*?)\}\)", lambda m: _as_flag("--columns", m.group(1)), note)
    note = re.sub(r"(?:layout=)?ColumnMap\(winners=\{(.*?)\}\)", lambda m: _as_flag("--winner-map", m.group(1)),
                  note)
    for word, flag in CLI_WORDS:
        note = note.replace(word, flag)
    return note


def fail(error: object, status: int = 2) -> NoReturn:
    """Print one clear error line in the command line's words (:func:`cli_words`) and exit (2: bad input or
    usage; 1: the command itself failed); under ``--debug`` an exception is raised instead, so its traceback
    shows."""
    if DEBUG and isinstance(error, BaseException):
        raise error
    err.print(f"[red]error:[/red] {escape(cli_words(redact(str(error))))}", highlight=False, soft_wrap=True)
    raise typer.Exit(status)


def print_lines(lines: list[str], console: Console | None = None) -> None:
    """Plain lines (no markup, no highlighting) on ``console``, or on stdout: the dry runs' printer."""
    for line in lines:
        if console is None:
            typer.echo(line)
        else:
            console.print(line, markup=False, highlight=False, soft_wrap=True)


def report_console(output: str | Path | None) -> Console:
    """Where a command prints its human-readable report: stderr when its data goes to stdout (``-``)."""
    return err if is_stdout(output) else console


def import_jax_in_background() -> threading.Thread:
    """Start importing JAX and the fitting modules in a thread, and load what the first compilation-cache
    lookup needs (the MLIR dialects, LAPACK's kernels: ~0.3 s), so that it overlaps reading the data,
    which mostly runs outside the GIL (pyarrow, numpy). ``join()`` the thread before fitting; a failure is
    left for the main thread's own import to raise, with its traceback."""

    def work() -> None:
        try:
            with jax_plugin_scan_by_folder_name():
                import arena.leaderboard  # noqa: F401  (and arena.jax_setup: x64 and the compilation cache)
            from arena.jax_setup import load_lowering_libraries

            load_lowering_libraries()
        except Exception:  # noqa: BLE001, S110  (the main thread imports again and reports it)
            pass

    # OpenBLAS's idle workers spin 2^28 cycles after each call before they sleep: on two cores one small
    # np.linalg.inv (the bootstrap's H^-1) cost ~0.2 s of CPU taken from the weight draws; 2^4 cycles
    # changes when they sleep, not how many there are or what they compute (read when numpy loads)
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    # numpy's and pandas' C extensions are not safe to initialise from two threads at once (seen: "cannot
    # import name '__cpu_features__' from partially initialized module numpy._core._multiarray_umath" in
    # about one warm rank of four): the reader's modules load here first, only JAX's in the thread
    import arena.io.battles  # noqa: F401

    thread = threading.Thread(target=work, name="preflab-import-jax", daemon=True)
    thread.start()
    return thread


@contextmanager
def jax_plugin_scan_by_folder_name() -> Iterator[None]:
    """While JAX is imported, its search for ROCm plugins (the metadata of every installed distribution
    read and parsed: ~0.12 s of a warm rank for ~165 of them) sees only the distributions whose folder
    name could be one, ``jax_rocm*``; JAX still checks their metadata itself. Other callers, and
    distributions without a folder name, are served as usual."""
    import importlib.metadata as md

    original, active = md.distributions, [True]

    def distributions(**kwargs):
        found = original(**kwargs)
        if active and sys._getframe(1).f_globals.get("__name__", "").startswith("jax."):
            return (d for d in found if (getattr(d, "_normalized_name", None) or "jax_rocm").startswith("jax_rocm"))
        return found

    md.distributions = distributions
    try:
        yield
    finally:
        active.clear()  # (a module that bound the wrapper keeps getting every distribution)
        md.distributions = original


class Timings:
    """``PREFLAB_TIMINGS=1``: a command reports where its time went, wall and CPU seconds per part, as one
    stderr line (``benchmarks/bench_rank.py`` reads it). ``start`` is from the process's start (Linux) to
    the command's first line: the interpreter, the CLI's imports and parsing the options."""

    def __init__(self) -> None:
        self.enabled = os.environ.get("PREFLAB_TIMINGS", "") not in ("", "0")
        self.parts: list[tuple[str, float, float]] = []
        self.last = (time.perf_counter(), time.process_time())
        if self.enabled:
            self.parts.append(("start", _process_age(), self.last[1]))

    def lap(self, part: str) -> None:
        """Close ``part``: the time since the previous lap."""
        if self.enabled:
            now = (time.perf_counter(), time.process_time())
            self.parts.append((part, now[0] - self.last[0], now[1] - self.last[1]))
            self.last = now

    def report(self) -> None:
        if self.enabled:
            total = (sum(w for _, w, _ in self.parts), time.process_time())
            err.print("timings: " + "; ".join(f"{name} {w:.3f} s (cpu {c:.3f})" for name, w, c in
                                              [*self.parts, ("total", *total)]), highlight=False, soft_wrap=True)


def _process_age() -> float:
    """Seconds since this process started (0 where /proc is missing)."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = float(f.read().rpartition(")")[2].split()[19])
        with open("/proc/uptime") as f:
            return max(0.0, float(f.read().split()[0]) - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0
