"""Plain option values without pydantic (issue 16: ``preflab rank`` warm in under 2 s).

Typer 0.29 coerces every option's value, defaults included, through a pydantic ``TypeAdapter`` built on first
use: importing pydantic and building the adapters of ``rank``'s 25 options cost ~0.06 s of each run. Here a
value that already has its option's plain type (a default), or a string in the plain spelling of a ``str``,
``int``, ``float``, ``Path`` or ``list[str]`` option, is taken as pydantic takes it. Anything else (another
type, an unusual spelling, a bad value, constraints, a path typer would refuse) goes to typer's own
coercion, so every result and every message is typer's. :func:`install` does nothing on a typer without
that machinery.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args, get_origin

_INT = re.compile(r"-?(0|[1-9][0-9]*)")
_FLOAT = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE]-?[0-9]+)?")
TYPER = object()
"""Marks a value this module leaves to typer."""


def plain_value(annotation: Any, info: Any, value: Any) -> Any:
    """``value`` coerced to ``annotation`` as typer's pydantic adapter would, or :data:`TYPER` where this
    module does not decide (``info``: the option's ``typer.models.ParameterInfo``)."""
    if info.parser is not None or info.min is not None or info.max is not None or info.clamp:
        return TYPER
    if annotation is str:
        return value if type(value) is str else TYPER
    if annotation is int:
        if type(value) is int:
            return value
        return int(value) if type(value) is str and _INT.fullmatch(value) else TYPER
    if annotation is float:
        if type(value) is float:
            return value
        return float(value) if type(value) is str and _FLOAT.fullmatch(value) else TYPER
    if annotation is bool:
        return value if type(value) is bool else TYPER
    if annotation is Path:
        return _plain_path(info, value)
    if get_origin(annotation) is list and get_args(annotation) == (str,) and isinstance(value, (list, tuple)):
        return list(value) if all(type(v) is str for v in value) else TYPER
    return TYPER


def _plain_path(info: Any, value: Any) -> Any:
    """A ``Path`` option without typer's path checks, or one whose checks pass (typer reports the others)."""
    if info.path_type is not None or info.resolve_path or info.allow_dash or info.exists or info.writable \
            or not (info.file_okay and info.dir_okay):
        return TYPER
    if type(value) is not str or not value:
        return value if isinstance(value, Path) else TYPER
    try:
        os.stat(value)
    except OSError:
        return Path(value)
    return Path(value) if not info.readable or os.access(value, os.R_OK) else TYPER


try:  # typer 0.29's coercion machinery (an earlier typer: click converts the values, nothing to do)
    from typer import _coercion, core

    _typers = _coercion.build_runtime_param
    _Base: Any = _coercion.RuntimeParam
except (ImportError, AttributeError):  # pragma: no cover
    _typers, _Base = None, object


@dataclass(frozen=True)
class PlainRuntime(_Base):
    """Typer's coercion of one option, with :func:`plain_value` first."""

    descriptor: Any

    @classmethod
    def build(cls, descriptor: Any) -> Any:
        if descriptor.file_annotation is not None:  # options that open files: typer's
            return _typers(descriptor)
        return cls(annotation=descriptor.annotation, parameter_info=descriptor.parameter_info,
                   descriptor=descriptor)

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        out = plain_value(self.annotation, self.parameter_info, value)
        if out is TYPER:
            out = _typers(self.descriptor)._coerce_value(value, param=param, ctx=ctx)
        return out


def install() -> None:
    """Route typer's option coercion through :func:`plain_value` first (a no-op on other typers)."""
    if _typers is not None and getattr(core, "build_runtime_param", None) is _typers:
        core.build_runtime_param = PlainRuntime.build
