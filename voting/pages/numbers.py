"""Numbers as a person reads them on the app's tables: counts as integers, rates as percentages with one
decimal, ratings with the decimals their intervals need, a dash for unknown (never ``None`` or ``nan``),
and headers in words. One place, so every page formats the same way; the pages hand the returned pandas
Styler to ``st.dataframe``, which shows its display values and still sorts by the numbers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

#: Columns that count votes, battles or items: whole numbers, with thousands separators.
COUNT_COLUMNS = ("rank", "battles", "wins", "losses", "ties", "votes", "skips", "shared_units", "fast_votes")
#: What an unknown number shows.
UNKNOWN = "—"


def number_formats(view: pd.DataFrame, decimals: int = 1, rates: Sequence[str] = (),
                   fixed: Mapping[str, str] | None = None) -> dict[str, str]:
    """Per numeric column, its format string: ``fixed`` first, then ``rates`` as percentages with one
    decimal, counts (integer columns, and :data:`COUNT_COLUMNS` holding whole numbers) as integers, other
    numbers with ``decimals``."""
    out: dict[str, str] = {}
    for c in view.columns:
        col = view[c]
        if fixed and c in fixed:
            out[c] = fixed[c]
        elif c in rates:
            out[c] = "{:.1%}"
        elif pd.api.types.is_bool_dtype(col):
            continue
        elif pd.api.types.is_integer_dtype(col):
            out[c] = "{:,}"
        elif pd.api.types.is_float_dtype(col):
            known = col.dropna()
            whole = c in COUNT_COLUMNS and bool((known == known.round()).all())
            out[c] = "{:,.0f}" if whole else f"{{:.{decimals}f}}"
    return out


def for_people(view: pd.DataFrame, decimals: int = 1, rates: Sequence[str] = (),
               headers: Mapping[str, str] | None = None,
               fixed: Mapping[str, str] | None = None) -> pd.io.formats.style.Styler:
    """``view`` styled for display (:func:`number_formats`, unknown as :data:`UNKNOWN`), its columns renamed
    by ``headers``."""
    styled = view.rename(columns=dict(headers or {}))
    formats = {(headers or {}).get(c, c): f for c, f in number_formats(view, decimals, rates, fixed).items()}
    return styled.style.format(formats, na_rep=UNKNOWN)

