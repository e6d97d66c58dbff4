"""How a report writes a number with its interval: one format for the jury card, the ceiling and drift rows,
the compare tables and the gate report."""

from __future__ import annotations

import math
from collections.abc import Mapping


def _unknown(v: object) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def format_interval(d: Mapping | None, pct: bool = False, signed: bool = False) -> str:
    """``0.700 [0.550, 0.820]`` (percentages with ``pct``, a ``+`` sign with ``signed``); an unknown value is a
    dash, and a value whose bounds are unknown is written alone."""
    if not d or _unknown(d.get("value")):
        return "—"
    spec = ("+" if signed else "") + (".1%" if pct else ".3f")
    lo, hi = d.get("lower"), d.get("upper")
    if _unknown(lo) or _unknown(hi):
        return format(d["value"], spec)
    return f"{format(d['value'], spec)} [{format(lo, spec)}, {format(hi, spec)}]"
