"""A leaderboard to share: the table people read and its bytes as CSV, JSON, Markdown or HTML.

``preflab rank --output board.md`` (or ``.html``) and the app's Leaderboard downloads both call
:func:`leaderboard_bytes`, so the file a person shares is the same wherever it was made. Numbers are formatted
for people (ratings and bounds to one decimal, or more on a small scale; counts as whole numbers), a rating the
data does not pin down is left blank, never printed, and model names are text: Markdown and HTML are escaped
(a model named ``![x](http://evil)`` or ``<script>`` is shown as those characters), and the text cells of CSV
and Markdown cannot run as spreadsheet formulas (:func:`preflab.io.csv_safe`).
"""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pandas as pd

from preflab.io import csv_safe, safe_csv_bytes

#: File formats and their MIME types (the suffix of ``rank --output`` picks one: .csv, .json, .md, .html).
SHARE_FORMATS: dict[str, str] = {"csv": "text/csv", "json": "application/json", "md": "text/markdown",
                                 "html": "text/html"}
SHARED_COLUMNS = ("rank", "model", "rating", "lower", "upper", "battles", "wins", "losses", "ties")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>!|~&$])")  # what acts inside a table cell (emphasis, links, tags, ...)


def decimals(table: pd.DataFrame) -> int:
    """Decimals that show the ratings and their intervals: the terminal table's
    (:func:`arena.leaderboard_table.display_decimals`: one on Elo-like scales, more on a small one, where
    ``--scale 1``'s 0.03 is not ``0.0``)."""
    from arena.leaderboard_table import display_decimals

    return display_decimals(table)


def _count(values: pd.Series) -> pd.Series:
    """Whole numbers as integers (``628``, never ``628.0``); fractional counts (weighted votes) keep one decimal."""
    v = pd.to_numeric(values, errors="coerce").astype(float)
    return v.astype("Int64") if np.allclose(v.dropna(), v.dropna().round()) else v.round(1)


def shared_table(table: pd.DataFrame) -> pd.DataFrame:
    """The leaderboard as people read it: :data:`SHARED_COLUMNS`, rounded; ratings and bounds that are not
    identified or not finite are missing (blank), ``rank`` and counts are integers."""
    ok = table.get("identified", pd.Series(True, index=table.index)).astype(bool)
    out = pd.DataFrame({"rank": table["rank"].astype(int).to_numpy(), "model": table["model"].astype(str).to_numpy()})
    places = decimals(table)
    for col in ("rating", "lower", "upper"):
        v = pd.to_numeric(table[col], errors="coerce").astype(float).where(ok)
        out[col] = v.where(np.isfinite(v)).round(places).to_numpy()
    for col in ("battles", "wins", "losses", "ties"):
        out[col] = _count(table[col]).to_numpy()
    return out


def markdown_text(value: object) -> str:
    """A cell as Markdown that reads as the plain text: every character Markdown or an HTML tag could act on is
    escaped, line breaks become spaces."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(value).split()))


def _cells(shared: pd.DataFrame, places: int) -> list[list[str]]:
    """Every cell as text: numbers with ``places`` decimals (counts whole), missing as ''."""
    def text(col: str, v: object) -> str:
        if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
            return ""
        if col in ("rating", "lower", "upper") and isinstance(v, (float, np.floating)):
            return f"{v:.{places}f}"
        return str(v)

    return [[text(c, v) for c, v in zip(shared.columns, row, strict=True)] for row in shared.itertuples(index=False)]


def footer(table: pd.DataFrame) -> str:
    """What the intervals are, in one line (from the table's ``attrs``)."""
    a = table.attrs
    ci = {"both": "bootstrap"}.get(str(a.get("ci", "bootstrap")), str(a.get("ci", "bootstrap")))
    parts = [f"{float(a.get('level', 0.95)):.0%} {ci} intervals",
             f"ties: {a.get('ties', 'half')}", "rank = 1 + models whose interval lies wholly above"]
    if a.get("unit"):  # battle or item (the details of ``unit_text`` say how the file was read)
        parts.append(f"sampling unit: {a['unit']}")
    return "; ".join(parts)


def to_markdown(table: pd.DataFrame) -> str:
    shared = csv_safe(shared_table(table))
    rows = _cells(shared, decimals(table))
    right = {"rank", "rating", "lower", "upper", "battles", "wins", "losses", "ties"}
    lines = ["| " + " | ".join(shared.columns) + " |",
             "|" + "|".join("---:" if c in right else ":---" for c in shared.columns) + "|"]
    lines += ["| " + " | ".join(markdown_text(v) if c == "model" else v for c, v in zip(shared.columns, row,
                                                                                       strict=True)) + " |"
              for row in rows]
    return "\n".join(lines) + "\n\n" + footer(table) + "\n"


def to_html(table: pd.DataFrame, title: str = "Leaderboard") -> str:
    """A standalone page: one table, no script, no style sheet from elsewhere; every cell escaped."""
    shared = shared_table(table)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in shared.columns)
    body = "\n".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>"
                     for row in _cells(shared, decimals(table)))
    return (f'<!doctype html>\n<html lang="en">\n<head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            "<style>table{border-collapse:collapse}td,th{padding:2px 8px;border-bottom:1px solid #ddd}"
            "td:nth-child(n+3),th:nth-child(n+3),td:first-child{text-align:right}</style></head>\n<body>\n"
            f"<h1>{html.escape(title)}</h1>\n<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n"
            f"</table>\n<p>{html.escape(footer(table))}</p>\n</body>\n</html>\n")


def to_json(table: pd.DataFrame) -> str:
    """``{"leaderboard": [rows], "intervals": footer}``: missing numbers are ``null``."""
    shared = shared_table(table).astype(object)
    rows = [{c: (None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else
                 int(v) if isinstance(v, (int, np.integer)) else float(v) if isinstance(v, (float, np.floating))
                 else v) for c, v in row.items()} for row in shared.to_dict("records")]
    return json.dumps({"leaderboard": rows, "intervals": footer(table)}, indent=1, ensure_ascii=False) + "\n"


def leaderboard_bytes(table: pd.DataFrame, fmt: str) -> bytes:
    """The shared leaderboard (:func:`shared_table`) as ``fmt`` (:data:`SHARE_FORMATS`), UTF-8."""
    if fmt == "csv":
        return safe_csv_bytes(shared_table(table))
    writers = {"json": to_json, "md": to_markdown, "html": to_html}
    if fmt not in writers:
        raise ValueError(f"unknown leaderboard format {fmt!r}; use one of {', '.join(SHARE_FORMATS)}")
    return writers[fmt](table).encode()
