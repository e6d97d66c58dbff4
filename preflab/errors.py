"""The one input-error type every reader raises: file, line (or record), field, what is wrong, what to do."""

from __future__ import annotations


class InputError(ValueError):
    """A bad input row or file, with the file, line and field it concerns and what to do about it.

    The CLI prints ``str(error)`` in one line and exits with status 2 (no traceback unless ``--debug``).
    """

    def __init__(self, source: str, line: int | None, field: str | None, problem: str, hint: str = ""):
        self.source, self.line, self.field, self.problem, self.hint = source, line, field, problem, hint
        where = source if line is None else f"{source}, line {line}"
        what = f"field '{field}': " if field else ""
        super().__init__(f"{where}: {what}{problem}" + (f". {hint}" if hint else ""))


def shown(value: object) -> str:
    """A bad value as a message quotes it: the plain Python value's repr (``-3.0``), never a numpy scalar's
    (``np.float64(-3.0)``), whichever reader or chunking typed the column."""
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        value = value.tolist()  # a scalar's Python value, an array's list (a Parquet list cell)
    return repr(value)


def closest(word: str, choices: object) -> str | None:
    """The closest of ``choices`` to a mistyped ``word`` (case ignored; difflib's ratio at least 0.6), or None."""
    import difflib

    by_folded = {str(c).casefold(): str(c) for c in choices}  # type: ignore[attr-defined]
    close = difflib.get_close_matches(str(word).casefold(), list(by_folded), n=1, cutoff=0.6)
    return by_folded[close[0]] if close else None


def did_you_mean(word: str, choices: object) -> str:
    """`` (did you mean 'X'?)`` with :func:`closest`, else ``""``: appended to a message naming an unknown
    column, model or label."""
    near = closest(word, choices)
    return f" (did you mean {near!r}?)" if near is not None else ""
