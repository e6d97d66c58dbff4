"""The gate report: one self-contained HTML page for ``preflab compare``, beside the judge card.

A forest plot of each dimension's win rate with its interval (and each lm-eval task's delta with its
bootstrap interval), the three checks, the gate, and the settings table with differing settings marked.
Charts are matplotlib PNGs as on the judge card; all text goes through :func:`html.escape`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from html import escape
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from judge.cards.figures import png
from judge.gate.compare import check_lines
from judge.report_text import format_interval
from preflab.io import write_output


def forest_plot(rows: list[Mapping], key: str, label: str, null: float, xlabel: str) -> str | None:
    """Point and interval per row, the null line at ``null``; rows without an interval are left out."""
    rows = [r for r in rows if r[key].get("lower") is not None and r[key].get("value") is not None
            and not np.isnan(r[key]["value"])]
    if not rows:
        return None
    fig = Figure(figsize=(6, 0.45 * len(rows) + 1.2))
    ax = fig.subplots()
    y = np.arange(len(rows))[::-1]
    v = np.array([r[key]["value"] for r in rows])
    lo, hi = np.array([r[key]["lower"] for r in rows]), np.array([r[key]["upper"] for r in rows])
    colours = ["C2" if (r.get("verdict") == "better" or (r.get("verdict") is None and lo[i] > null)) else
               "C3" if (r.get("verdict") == "worse" or (r.get("verdict") is None and hi[i] < null)) else "C7"
               for i, r in enumerate(rows)]
    for yi, vi, a, b, c in zip(y, v, lo, hi, colours, strict=True):
        ax.errorbar([vi], [yi], xerr=[[max(vi - a, 0)], [max(b - vi, 0)]], fmt="o", color=c, capsize=4)
    ax.axvline(null, color="grey", ls="--", lw=1)
    ax.set_yticks(y, [str(r[label]) for r in rows])
    ax.set_xlabel(xlabel)
    return png(fig)


def _table(header: list[str], rows: list[list[str]], marks: list[bool] | None = None) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(("<tr class='differs'>" if marks and marks[i] else "<tr>")
                   + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for i, row in enumerate(rows))
    return f"<table><tr>{head}</tr>{body}</table>"


def render_gate_report(report: Mapping, title: str | None = None) -> str:
    """The page as a string."""
    title = title or f"Gate report: {report['candidate']} vs {report['base']}"
    dims, tasks = report.get("dimensions", []), report.get("tasks", [])
    parts = []
    gate = report.get("gate", {})
    if gate.get("no_verdict"):
        parts.append(f"<p class='noverdict'>No verdict: the judge is not usable on guard "
                     f"{escape(', '.join(gate['unreliable']))} (its two orders disagree above the flip limit)</p>")
    elif gate.get("checked"):
        ok = gate["passed"]
        parts.append(f"<p class='{'pass' if ok else 'fail'}'>Gate {'passed' if ok else 'FAILED'}: guards "
                     f"{escape(', '.join(gate['checked']))}"
                     + ("" if ok else f"; significantly worse on {escape(', '.join(gate['failed']))}") + "</p>")
    if dims:
        chart = forest_plot(dims, "win_rate", "dimension", 0.5, "candidate win rate over decisive pairs")
        if chart:
            parts.append(f"<figure><figcaption>Win rate by dimension (95% interval)</figcaption><img alt='forest plot' "
                         f"src='{chart}'></figure>")
        parts.append(f"<h2>Dimensions ({escape(str(report.get('test', '')))})</h2>" + _table(
            ["dimension", "wins", "losses", "ties", "position flips", "decisive", "win rate", "p", "p Holm",
             "verdict", "flip rate"],
            [[r["dimension"], str(r["wins"]), str(r["losses"]), str(r["ties"]), str(r["inconsistent"]),
              str(r["decisive"]), format_interval(r["win_rate"]), f"{r['p_value']:.4f}", f"{r['p_holm']:.4f}",
              r["verdict"], "—" if r["flip_rate"] is None else f"{r['flip_rate']:.0%}"] for r in dims]))
        checks = report.get("checks", {})
        items = check_lines(checks)
        warn = "".join(f"<li class='warn'>{escape(w)}</li>" for w in checks.get("warnings", []))
        parts.append("<h2>Checks</h2><ul>" + "".join(f"<li>{escape(i)}</li>" for i in items) + warn + "</ul>")
    if report.get("sequential"):
        parts.append("<h2>Sequential run</h2><pre>" + escape(json.dumps(report["sequential"], indent=1)) + "</pre>")
    if tasks:
        chart = forest_plot(tasks, "delta", "task", 0.0, "candidate − base (95% paired bootstrap)")
        if chart:
            parts.append("<figure><figcaption>lm-eval tasks</figcaption>"
                         f"<img alt='task deltas' src='{chart}'></figure>")
        parts.append("<h2>lm-eval tasks</h2>" + _table(
            ["task", "metric", "n", "base", "candidate", "delta", "McNemar p"],
            [[r["task"], f"{r['metric']},{r['filter']}", str(r["n"]), format_interval(r["base"]),
              format_interval(r["candidate"]), format_interval(r["delta"]),
              "—" if r["mcnemar_p"] is None else f"{r['mcnemar_p']:.4f}"] for r in tasks]))
    if report.get("settings"):
        s = report["settings"]
        parts.append("<h2>Settings (differences marked)</h2>" + _table(
            ["setting", "base", "candidate"], [[r["setting"], json.dumps(r["base"]), json.dumps(r["candidate"])]
                                                for r in s], [r["differs"] for r in s]))
    notes = "".join(f"<li>{escape(n)}</li>" for n in report.get("notes", []))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>
<style>
body{{font-family:system-ui,sans-serif;max-width:1100px;margin:1em auto;color:#222}}
table{{border-collapse:collapse;width:100%}} th,td{{text-align:left;padding:3px 8px;border-bottom:1px solid #ddd}}
tr.differs td{{background:#fff3cd}} li.warn{{color:#a60}} figcaption{{font-weight:600}} figure{{margin:0}}
.pass{{background:#e7f6e7;padding:.5em 1em}} .fail{{background:#fbe9e9;padding:.5em 1em}}
.noverdict{{background:#fff3cd;padding:.5em 1em}}
</style></head><body>
<h1>{escape(title)}</h1>
{''.join(parts)}
{f'<h2>Notes</h2><ul>{notes}</ul>' if notes else ''}
</body></html>"""


def write_gate_report(path: str | Path, report: Mapping, title: str | None = None) -> Path:
    """Render the gate report and write it (UTF-8; ``-`` is standard output)."""
    write_output(path, render_gate_report(report, title))
    return Path(path)
