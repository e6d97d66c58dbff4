"""Judge prices: a dated table of list prices, a user override, and "unknown" kept unknown (never $0).

A price is USD per million tokens, input and output. :func:`price_for` gives the table's entry for a model
(longest matching name prefix) or None; :func:`parse_price` reads the ``--price`` option
(``in=2.5,out=10`` or a TOML file with ``[prices]`` entries ``"model" = {in = .., out = ..}``).
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

#: When the table below was last checked against the providers' pricing pages.
PRICES_DATE = "2026-05-31"

# USD per 1M tokens (input, output), standard tier, no caching or batch discount. Models released after
# PRICES_DATE (e.g. gpt-6*, claude-*-5*) are not listed: their cost is reported as unknown until
# the user passes --price.
PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "gpt-4.1": (2.0, 8.0), "gpt-4.1-mini": (0.4, 1.6), "gpt-4.1-nano": (0.1, 0.4),
    "gpt-4o": (2.5, 10.0), "gpt-4o-mini": (0.15, 0.6), "o4-mini": (1.1, 4.4), "o3": (2.0, 8.0),
    "claude-haiku-4-5": (1.0, 5.0), "claude-sonnet-4-5": (3.0, 15.0), "claude-sonnet-4-6": (3.0, 15.0),
    "claude-opus-4-5": (5.0, 25.0), "claude-opus-4-6": (5.0, 25.0), "claude-opus-4-7": (5.0, 25.0),
    "claude-opus-4-1": (15.0, 75.0),
}


@dataclass(frozen=True)
class Price:
    """USD per million tokens; ``source`` says where it came from (``table 2026-05-31``, ``--price``, a file)."""

    input: float
    output: float
    source: str

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        """USD for the given token counts."""
        return (tokens_in * self.input + tokens_out * self.output) / 1e6

    def label(self) -> str:
        """``$2.5 in / $10 out per 1M tokens (table 2026-05-31)``."""
        return f"${self.input:g} in / ${self.output:g} out per 1M tokens ({self.source})"


FREE = Price(0.0, 0.0, "local server")


def price_for(model: str, table: Mapping[str, tuple[float, float]] = PRICES_PER_MTOK,
              source: str = f"table {PRICES_DATE}") -> Price | None:
    """The price of the longest table name that ``model`` starts with, or None (unknown)."""
    best = max((k for k in table if model.startswith(k)), key=len, default=None)
    return None if best is None else Price(*table[best], source)


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"--price: {what} must be a non-negative number of USD per 1M tokens, not {text!r}")
    return value


def parse_price(option: str, model: str) -> Price:
    """The ``--price`` option: ``in=2.5,out=10`` (USD per 1M tokens) or a TOML file with a ``[prices]``
    table of ``"model-prefix" = {in = 2.5, out = 10}`` (longest prefix of ``model`` wins)."""
    m = re.fullmatch(r"\s*in\s*=\s*([^,\s]+)\s*,\s*out\s*=\s*([^,\s]+)\s*", option)
    if m:
        return Price(_number(m.group(1), "in"), _number(m.group(2), "out"), "--price")
    path = Path(option)
    if not path.is_file():
        raise ValueError(f"--price {option!r}: expected in=USD,out=USD per 1M tokens (e.g. in=2.5,out=10) "
                         "or a TOML file with a [prices] table")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not TOML ({e})") from None
    table = {}
    for name, entry in (data.get("prices") or {}).items():
        if not isinstance(entry, Mapping) or "in" not in entry or "out" not in entry:
            raise ValueError(f"{path}: [prices] {name!r}: expected {{in = USD, out = USD}} per 1M tokens")
        table[name] = (_number(str(entry["in"]), f"{name}.in"), _number(str(entry["out"]), f"{name}.out"))
    found = price_for(model, table, str(path))
    if found is None:
        raise ValueError(f"{path}: no [prices] entry matches model {model!r}; add \"{model}\" = {{in = .., out = ..}}")
    return found
