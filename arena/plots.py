"""Leaderboard figures: a forest plot of ratings with intervals, a win-rate heatmap and ratings over time, as PNG
or HTML.

HTML output embeds the PNG and a table; every model name is escaped (names are user data, never markup).
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure  # no pyplot: a library must not switch the backend

from preflab.io import is_stdout, write_output


def forest_figure(table: pd.DataFrame, title: str = "Ratings with intervals"):
    """Ratings (dots) with lower/upper bounds (bars), best at the top."""
    t = table.sort_values("rating")
    fig = Figure(figsize=(7, max(2.5, 0.28 * len(t) + 1)))
    ax = fig.subplots()
    y = np.arange(len(t))
    ax.errorbar(t["rating"], y, xerr=[t["rating"] - t["lower"], t["upper"] - t["rating"]], fmt="o", ms=4,
                capsize=2, color="#1f5fa8")
    ax.set_yticks(y, t["model"].astype(str))
    level = table.attrs.get("level", 0.95)
    kind = "sandwich" if table.attrs.get("ci") == "sandwich" else "bootstrap"
    ax.set_xlabel(f"rating ({level:.0%} {kind} interval)")
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def heatmap_figure(matrix: pd.DataFrame, title: str = "Win rate (row beats column)"):
    """Matrix heatmap with values written in the cells when it is small enough to read."""
    k = len(matrix)
    fig = Figure(figsize=(max(4, 0.45 * k + 2), max(3.5, 0.45 * k + 1.5)))
    ax = fig.subplots()
    im = ax.imshow(matrix.to_numpy(float), cmap="RdBu", vmin=0, vmax=1)
    ax.set_xticks(range(k), matrix.columns.astype(str), rotation=90)
    ax.set_yticks(range(k), matrix.index.astype(str))
    if k <= 20:
        for (r, c), v in np.ndenumerate(matrix.to_numpy(float)):
            if np.isfinite(v):
                ax.text(c, r, f"{v:.2f}", ha="center", va="center", fontsize=7)
    fig.colorbar(im, ax=ax, fraction=0.04)
    ax.set_title(title)
    fig.tight_layout()
    return fig


def _png_bytes(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120)
    return buf.getvalue()


def _html_page(title: str, png: bytes, frame: pd.DataFrame) -> str:
    img = base64.b64encode(png).decode("ascii")
    table = frame.to_html(escape=True, float_format=lambda v: f"{v:.3f}", na_rep="")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
            "td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}</style></head><body>"
            f"<h1>{html.escape(title)}</h1><img alt='{html.escape(title)}' src='data:image/png;base64,{img}'>"
            f"{table}</body></html>")


def save_figure(fig, path: str | Path, title: str, frame: pd.DataFrame) -> Path:
    """Write ``fig`` as PNG (``.png``, or ``-`` for PNG on stdout) or as a self-contained HTML page with the
    data (``.html``)."""
    png = _png_bytes(fig)
    if is_stdout(path):
        write_output(path, png)
        return Path(path)
    path = Path(path)
    if path.suffix.lower() == ".png":
        path.write_bytes(png)
    elif path.suffix.lower() in (".html", ".htm"):
        path.write_text(_html_page(title, png, frame), encoding="utf-8")
    else:
        raise ValueError(f"{path}: use a .png or .html file name for plots")
    return path


def forest_plot(table: pd.DataFrame, path: str | Path, title: str = "Leaderboard") -> Path:
    """Forest plot of a :func:`arena.leaderboard.rank_battles` table, as PNG or HTML."""
    cols = ["model", "rating", "lower", "upper", "rank", "battles"]
    return save_figure(forest_figure(table, title), path, title, table[cols].set_index("model"))


def win_rate_heatmap(matrix: pd.DataFrame, path: str | Path, title: str = "Win rate (row beats column)") -> Path:
    """Heatmap of a win-rate matrix (observed or predicted), as PNG or HTML."""
    return save_figure(heatmap_figure(matrix, title), path, title, matrix)


def over_time_figure(res: pd.DataFrame, title: str = "Ratings over time"):
    """One line per model through its window ratings (at each window's start), with the interval as a band."""
    fig = Figure(figsize=(8, 4.5))
    ax = fig.subplots()
    for model, rows in res.sort_values("window_start").groupby("model", sort=True, observed=True):
        when = pd.to_datetime(rows["window_start"]).dt.tz_localize(None)
        line = ax.plot(when, rows["rating"], marker="o", ms=3, label=str(model))[0]
        ax.fill_between(when, rows["lower"], rows["upper"], color=line.get_color(), alpha=0.15, linewidth=0)
    level = res.attrs.get("level", 0.95)
    ax.set_ylabel(f"rating ({level:.0%} interval)")
    ax.set_xlabel("window start (UTC)" + (", cumulative" if res.attrs.get("cumulative") else ""))
    ax.set_title(f"{title} (window {res.attrs.get('window', '')})")
    ax.grid(alpha=0.3)
    if res["model"].nunique() <= 15:
        ax.legend(fontsize=7, loc="best")
    fig.autofmt_xdate()
    fig.tight_layout()
    return fig


def over_time_plot(res: pd.DataFrame, path: str | Path, title: str = "Ratings over time") -> Path:
    """Ratings refitted by date window (:func:`arena.over_time.ratings_over_time`), as PNG or HTML."""
    return save_figure(over_time_figure(res, title), path, title, res.set_index(["window_start", "model"]))
