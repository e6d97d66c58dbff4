"""Progress on a terminal only: a spinner naming the step while a long read or simulation runs.

Shown when stderr is a terminal (rich's ``Console.is_terminal``); in pipes and CI logs nothing is written, so
captured output stays what the command reports. Transient: the line is cleared when the step ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from preflab_cli.common import err


@contextmanager
def step_status(text: str) -> Iterator[None]:
    """A spinner with ``text`` on stderr while the block runs, on a terminal only."""
    if not err.is_terminal:
        yield
        return
    with err.status(text, spinner="dots"):
        yield
