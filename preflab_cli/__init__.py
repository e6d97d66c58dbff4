"""The ``preflab`` command line: thin shells over library calls, one module per package.

:mod:`preflab_cli.arena_cmds` (statistics), :mod:`preflab_cli.rank_cmd` (``preflab rank``),
:mod:`preflab_cli.judge_cmds` (``preflab judge ...``) and :mod:`preflab_cli.voting_cmds` (the app and its
store). Each command parses, calls one library function
and prints. Library imports happen inside commands, so ``preflab --help`` loads no JAX. The command modules
do without ``from __future__ import annotations``: typer would compile and evaluate every option's annotation
string on each run, twice per command (``tests/preflab_cli/test_cli_startup.py`` checks both).
"""

from __future__ import annotations

import sys

from preflab.errors import InputError
from preflab.redact import redact
from preflab_cli import (  # noqa: F401  (register commands)
    arena_cmds,
    bench_cmd,
    common,
    compare_cmd,
    generate_cmd,
    judge_score,
    rank_cmd,
    voting_cmds,
)
from preflab_cli.common import app, err
from preflab_cli.judge_cmds import app as judge_app

app.add_typer(judge_app, name="judge", help="Run LLM judges and calibrate them against humans.")


#: Old option spellings, still accepted (not shown in --help): one name per concept across commands.
OPTION_ALIASES = {"--n-bootstrap": "--bootstrap", "--ties-model": "--ties"}

__all__ = ["OPTION_ALIASES", "app", "canonical_args", "main"]


def canonical_args(args: list[str]) -> list[str]:
    """Rewrite old option spellings to today's (``--n-bootstrap`` -> ``--bootstrap``, ``--ties-model none``
    -> ``--ties half``)."""
    out: list[str] = []
    for arg in args:
        name, eq, value = arg.partition("=")
        if name in OPTION_ALIASES:
            name = OPTION_ALIASES[name]
            arg = name + eq + ("half" if name == "--ties" and value == "none" else value)
        elif arg == "none" and out and out[-1] == "--ties":
            arg = "half"
        out.append(arg)
    return out


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: bad input exits 2 with one line; anything unexpected exits 1 with one
    line and a pointer to ``--debug`` (which shows the traceback)."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    args = canonical_args([a for a in args if a != "--debug"])
    common.DEBUG = debug
    try:
        app(args=args, prog_name="preflab")
    except InputError as e:
        if debug:
            raise
        err.print(f"error: {redact(str(e))}", highlight=False, soft_wrap=True, markup=False)
        sys.exit(2)
    except Exception as e:  # noqa: BLE001  (the one place unexpected errors become one line)
        if debug:
            raise
        err.print(f"error: {type(e).__name__}: {redact(str(e))}", highlight=False, soft_wrap=True, markup=False)
        err.print("run with --debug for the traceback", highlight=False, markup=False)
        sys.exit(1)
    finally:
        common.DEBUG = False
        if "arena.jax_setup" in sys.modules:  # `rank` turned stored programs on for itself, not for the library
            sys.modules["arena.jax_setup"].STORE_PROGRAMS = False
