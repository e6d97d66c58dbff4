"""The judge card: one self-contained HTML page saying whether to trust a judge, and for what.

Charts are matplotlib PNGs embedded as base64; every piece of text goes through :func:`html.escape`
(model names and outputs are user data and never become markup).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from html import escape
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure  # no pyplot: a library must not switch the backend

from judge.cards.figures import png
from judge.metrics.baselines import baseline_rows
from judge.metrics.temperature import score_rows
from judge.report_text import format_interval as _fmt
from judge.verdicts.judged_pairs import column
from preflab.io import write_output
from preflab.outcomes import Outcome

SETTINGS = ("judge model", "rubric", "temperature", "orders", "samples", "verdict methods", "price", "date")
# Provenance of the verdicts (judge.verdicts.provenance.CARD_FIELDS): what the API served and which rubric text.
SETTINGS += ("model version", "system fingerprint", "rubric hash", "method", "preflab version")


def position_chart(report: Mapping, by_model: pd.DataFrame | None = None) -> str | None:
    """Two orders: rate of choosing each slot with Wilson bars; one order: P(win|first) − P(win|second)."""
    if by_model is not None and len(by_model):
        fig = Figure(figsize=(6, 0.3 * len(by_model) + 1))
        ax = fig.subplots()
        ypos = np.arange(len(by_model))
        d = by_model["difference"].to_numpy()
        ax.errorbar(d, ypos, xerr=np.maximum(0, [d - by_model["lower"], by_model["upper"] - d]), fmt="o", color="C3")
        ax.axvline(0, color="grey", lw=1)
        ax.set_yticks(ypos, [str(m) for m in by_model["model"]])
        ax.set_xlabel("P(win | shown first) − P(win | shown second)")
        ax.set_title("Position bias by model (one order, randomised)")
        return png(fig)
    pos, one = report.get("position"), report.get("one_order_position")
    if pos:
        first = pos["first_position_rate"]
        vals = [first["value"], 1 - first["value"]]
        err = [[first["value"] - first["lower"], first["upper"] - first["value"]]] * 2
        labels, title = ["first slot", "second slot"], f"Slot chosen over {2 * pos['n_pairs']} verdicts"
    elif one and one["design"] == "randomised order":
        vals, labels = [one["win_when_first"], one["win_when_second"]], ["x shown first", "x shown second"]
        d = one["first_minus_second"]
        err = [[(d["upper"] - d["lower"]) / 2] * 2] * 2
        title = "P(x wins) by the slot x was shown in"
    elif one:
        r = one["first_win_rate"]
        vals, labels = [r["value"], 1 - r["value"]], ["first slot wins", "second slot wins"]
        err = [[r["value"] - r["lower"], r["upper"] - r["value"]]] * 2
        title = "Decisive verdicts by slot (order fixed)"
    else:
        return None
    fig = Figure(figsize=(4, 3))
    ax = fig.subplots()
    ax.bar(labels, vals, yerr=np.maximum(0, np.array(err).T), color=["C0", "C1"], capsize=6)
    chance = 0.5 if pos or (one and one["design"] != "randomised order") else np.mean(vals)
    ax.axhline(chance, color="grey", ls="--", lw=1)
    ax.set_ylim(0, 1)
    ax.set_title(title, fontsize=10)
    return png(fig)


def length_chart(pairs: pd.DataFrame, judge: np.ndarray, n_bins: int = 8) -> str | None:
    """P(x wins) for the judge and the humans across quantile bins of the length difference len_x − len_y."""
    diff = column(pairs, "len_x") - column(pairs, "len_y")
    human = column(pairs, "human")
    ok = ~np.isnan(diff)
    if ok.sum() < n_bins * 5:
        return None
    edges = np.unique(np.quantile(diff[ok], np.linspace(0, 1, n_bins + 1)))
    b = np.clip(np.searchsorted(edges, diff, side="right") - 1, 0, len(edges) - 2)
    fig = Figure(figsize=(5, 3))
    ax = fig.subplots()
    for name, code, style in (("judge", judge, "o-"), ("humans", human, "s--")):
        dec = ok & ((code == Outcome.FIRST) | (code == Outcome.SECOND))
        if not dec.any():
            continue
        xs, ys = [], []
        for k in range(len(edges) - 1):
            m = dec & (b == k)
            if m.sum() >= 3:
                xs.append(k)
                ys.append(np.mean(code[m] == Outcome.FIRST))
        ax.plot(xs, ys, style, label=name)
    ax.axhline(0.5, color="grey", lw=1)
    # Equal-count bins, labelled by their median difference (lengths are heavy-tailed).
    ax.set_xticks(range(len(edges) - 1), [f"{np.median(diff[ok & (b == k)]):.0f}" for k in range(len(edges) - 1)],
                  rotation=45, fontsize=8)
    ax.set_xlabel("length difference len_x − len_y (bin median)")
    ax.set_ylabel("P(x wins | decisive)")
    ax.set_ylim(0, 1)
    ax.legend()
    return png(fig)


def reliability_chart(report: Mapping) -> str | None:
    """Reliability diagram on decided pairs: observed P(x wins) per bin of p_x / (p_x + p_y), Wilson bars."""
    cal = report.get("calibration")
    if not cal or not cal.get("reliability"):
        return None
    t = pd.DataFrame(cal["reliability"])
    fig = Figure(figsize=(4, 4))
    ax = fig.subplots()
    ax.plot([0, 1], [0, 1], color="grey", ls="--", lw=1)
    # Clipped at 0: at p = 0 or 1 the Wilson bound can sit a rounding error past the estimate.
    yerr = np.maximum(0, [t["observed"] - t["lower"], t["upper"] - t["observed"]])
    ax.errorbar(t["mean_p"], t["observed"], yerr=yerr,
                fmt="o-", capsize=3)
    for _, r in t.iterrows():
        ax.annotate(str(int(r["n"])), (r["mean_p"], r["observed"]), fontsize=7, xytext=(3, -10),
                    textcoords="offset points")
    ax.set_xlabel("judge P(x wins | not a tie) = p_x / (p_x + p_y)")
    ax.set_ylabel("humans: share x wins (decided pairs)")
    ax.set_title(f"Reliability (3-class Brier {cal['brier']:.3f}, ECE {cal['ece']:.3f})", fontsize=10)
    return png(fig)


def confusion_chart(report: Mapping) -> str | None:
    """Heatmap of human (rows) × judge (columns) counts."""
    conf = report.get("confusion")
    if not conf:
        return None
    counts = np.array(conf["counts"])
    fig = Figure(figsize=(4, 3))
    ax = fig.subplots()
    ax.imshow(counts, cmap="Blues")
    ax.set_xticks(range(len(conf["columns"])), conf["columns"])
    ax.set_yticks(range(len(conf["rows"])), conf["rows"])
    ax.set_xlabel("judge")
    ax.set_ylabel("human")
    for (i, j), v in np.ndenumerate(counts):
        ax.text(j, i, str(v), ha="center", va="center", color="white" if v > counts.max() / 2 else "black")
    return png(fig)


Rows = list[tuple[str, str]]


def _position_rows(report: Mapping) -> Rows:
    pos, one = report.get("position"), report.get("one_order_position")
    rows = [("pairs", str(report["n_pairs"])), ("orders judged", report["orders"])]
    if pos:
        rows += [("position consistency", _fmt(report["consistency"])),
                 ("first-slot rate (2P verdicts; CI over pairs)", _fmt(report["first_position_rate"])),
                 ("primacy / recency pairs", f"{pos['primacy_count']} / {pos['recency_count']} "
                  f"(preference fairness {pos['preference_fairness']:+.3f})")]
    if one and one["design"] == "randomised order":
        rows.append(("P(win|first) − P(win|second)",
                     _fmt(one["first_minus_second"]) + f" — favours {one['favours']}"))
    elif one:
        rows.append(("first-slot win rate (fixed order)", _fmt(one["first_win_rate"]) + f" — favours {one['favours']}"))
    c = report["conservative"]
    rows.append(("winners (conservative)", f"x {c['a']}, y {c['b']}, tie {c['tie']}, unparsable {c['unparsable']}"))
    return rows


def _label_rows(report: Mapping) -> Rows:
    """What the reference side is: human votes, or objective correctness labels (JudgeBench, RewardBench)."""
    return [("labels", report["labels"])] if report.get("agreement") and report.get("labels") else []


def _baseline_rows(report: Mapping) -> Rows:
    return baseline_rows(report.get("baselines"), report.get("labels") or "humans")


def _agreement_rows(report: Mapping) -> Rows:
    if not report.get("agreement"):
        return []
    a = report["agreement"]
    labels = report.get("labels") or "humans"
    rows = [(f"agreement with {labels}", _fmt(a) + f" (n {a['n']}, {a['n_unparsable']} unparsable)"),
            ("agreement without ties", _fmt(report["agreement_without_ties"]))]
    if report["orders"] == "both":
        rows.append(("agreement, orders averaged instead", _fmt(report["agreement_averaged"])))
    single = report["kappa"].get("single_class_resamples") or 0
    return rows + [("Cohen's kappa (bootstrap CI)", _fmt(report["kappa"]) + (
                       f" ({single} single-class resamples, kappa 1 there)" if single else "")),
                   ("TPR / TNR (pass = x wins)", f"{_fmt(report['tpr'])} / {_fmt(report['tnr'])}")]


def _ppi_gain_rows(report: Mapping) -> Rows:
    gain = report.get("ppi_gain")
    if not gain:  # added by the caller that may fit BT (judge/ imports no arena): judge_arena.assist.judge_ppi_gain
        return []
    value = "unbounded (the judge reproduces the votes)" if gain.get("unbounded") else f"x{gain['gain']:.2f}"
    return [("PPI gain for a BT leaderboard (ESS x, unlimited judge verdicts)",
             f"{value} (lambda {gain['lambda']:.2f} for unlimited judge verdicts on these "
             f"{gain['n_items']:,.0f} items with votes; a leaderboard's PPI fit tunes its own lambda "
             "for its items, so the two differ)")]


def _human_rows(report: Mapping) -> Rows:
    humans = report.get("humans") or {}
    if not humans:
        return []
    pk = humans.get("pairwise_kappa") or {}
    loo = humans["leave_one_out"]
    rows = [("humans among themselves", f"Fleiss' kappa {humans['fleiss_kappa']:.3f}, Krippendorff's "
             f"alpha {humans['krippendorff_alpha']:.3f}" + (", pairwise kappa " + ", ".join(
                 f"{k}: {'—' if v is None or v != v else f'{v:.3f}'}" for k, v in pk.items()) if pk else "")),
            ("leave-one-out vs human majority", f"judge {_fmt(loo['judge'])}, humans {_fmt(loo['human'])}")]
    if humans.get("ceiling"):
        from judge.metrics.ceiling import ceiling_rows

        rows += ceiling_rows(humans["ceiling"])
    return rows


def _bias_rows(report: Mapping) -> Rows:
    lb, sp, rows = report.get("length_bias"), report.get("self_preference"), []
    if lb:
        rows.append((f"prefers the longer answer (|Δlen| > {lb['threshold']:g})",
                     f"judge {_fmt(lb['judge_prefers_longer'])}"
                     + (f", humans {_fmt(lb['human_prefers_longer'])}" if lb.get("human_prefers_longer") else "")))
        rows.append(("logistic slope on standardised Δlen", _fmt(lb["slope"])))
    if sp:
        rows.append((f"self-preference ({sp['judge_family']})", _fmt(sp["difference"]) + f" (n {sp['n']})"))
    return rows


def _corrected_rate_rows(report: Mapping) -> Rows:
    cw = report.get("corrected_win_rate")
    if not cw:
        return []
    fixed = "none: TPR + TNR ≤ 1, the judge carries no information" if cw["uninformative"] else _fmt(cw["corrected"])
    unparsable = f"; {cw['n_unparsable']} unparsable counted as x not winning" if cw.get("n_unparsable") else ""
    return [("x win rate: judge raw → corrected (TPR/TNR)", f"{cw['raw_rate']:.3f} → {fixed}"
             f" (humans on labelled pairs {cw['human_rate_labelled']:.3f}" + unparsable + ")")]


def _calibration_rows(report: Mapping) -> Rows:
    cal = report.get("calibration")
    if not cal:
        return []
    ece = "—" if cal.get("ece") is None else f"{cal['ece']:.4f}"
    low = f"; {cal['n_low_mass_excluded']} low-label-mass pairs left out" if cal.get("n_low_mass_excluded") else ""
    rows = [("Brier (3-class) / ECE (decided pairs)",
             f"{cal['brier']:.4f} / {ece} (n {cal['n']}, decided {cal['n_decided']}" + low + ")")]
    tie = cal.get("tie")
    if tie:
        rows.append(("P(tie): judge mean vs humans' tie rate",
                     f"{tie['mean_p_tie']:.3f} vs {_fmt(tie['observed'])} (tie ECE {tie['ece']:.4f})"))
    return rows


#: The card's summary table, section by section, in the order shown.
SUMMARY_SECTIONS = (_label_rows, _position_rows, _agreement_rows, _baseline_rows, _ppi_gain_rows, _human_rows,
                    _bias_rows, _corrected_rate_rows, _calibration_rows, score_rows)


def summary_rows(report: Mapping) -> Rows:
    """(label, formatted value with interval) for every metric the report has — the card's and CLI's table."""
    return [row for section in SUMMARY_SECTIONS for row in section(report)]


#: What the verdict says when no check vouches for any use of the judge.
NOTHING_USABLE = "nothing these checks can vouch for (see below)"


def verdict_lines(report: Mapping) -> Rows:
    """The card's verdict as (``"usable for"`` | ``"do not use for"``, text) lines, usable first; a judge that
    passes no check says so (:data:`NOTHING_USABLE`). The CLI, the card and the app's page lead with these."""
    verdict = report.get("verdict") or {"usable_for": [], "do_not_use_for": []}
    use = list(verdict["usable_for"]) or [NOTHING_USABLE]
    return [("usable for", u) for u in use] + [("do not use for", a) for a in verdict["do_not_use_for"]]


def render_card(report: Mapping, pairs: pd.DataFrame | None = None, settings: Mapping[str, object] | None = None,
                title: str = "Judge card", by_model: pd.DataFrame | None = None) -> str:
    """The judge card as one HTML string (self-contained: charts inlined, no scripts)."""
    from judge.metrics.calibrate import judge_codes

    settings = dict(settings or {})
    settings.setdefault("orders", report.get("orders"))
    lines = verdict_lines(report)
    verdict = {kind: [text for k, text in lines if k == kind] for kind in ("usable for", "do not use for")}
    charts = [("Position bias", position_chart(report, by_model)),
              ("Length bias", length_chart(pairs, judge_codes(pairs)["conservative"]) if pairs is not None else None),
              ("Reliability diagram", reliability_chart(report)),
              ("Confusion matrix", confusion_chart(report))]
    li = lambda items: "".join(f"<li>{escape(str(i))}</li>" for i in items) or "<li>—</li>"  # noqa: E731
    table = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in summary_rows(report))
    checklist = "".join(
        f"<li class='ok'>{escape(k)}: {escape(str(settings[k]))}</li>" if settings.get(k) not in (None, "")
        else f"<li class='missing'>{escape(k)}: not recorded</li>" for k in SETTINGS)
    figs = "".join(f"<figure><figcaption>{escape(name)}</figcaption><img alt='{escape(name)}' src='{src}'></figure>"
                   for name, src in charts if src)
    notes = "".join(f"<li>{escape(n)}</li>" for n in report.get("notes", []))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>
<style>
body{{font-family:system-ui,sans-serif;max-width:1100px;margin:1em auto;color:#222}}
.verdict{{display:flex;gap:1em}} .verdict div{{flex:1;padding:.6em 1em;border-radius:6px}}
.use{{background:#e7f6e7}} .avoid{{background:#fbe9e9}}
table{{border-collapse:collapse;width:100%}} th,td{{text-align:left;padding:3px 8px;border-bottom:1px solid #ddd}}
th{{width:40%;font-weight:500}} .figs{{display:flex;flex-wrap:wrap;gap:1em}} figure{{margin:0}}
li.missing{{color:#a00}} figcaption{{font-weight:600}}
</style></head><body>
<h1>{escape(title)}</h1><p>{escape(str(report.get('source', '')))}</p>
<section class="verdict"><div class="use"><h2>Usable for</h2><ul>{li(verdict['usable for'])}</ul></div>
<div class="avoid"><h2>Do not use for</h2><ul>{li(verdict['do not use for'])}</ul></div></section>
<h2>Numbers (95% intervals)</h2><table>{table}</table>
<div class="figs">{figs}</div>
<h2>Settings checklist</h2><ul>{checklist}</ul>
{f'<h2>Notes</h2><ul>{notes}</ul>' if notes else ''}
<p><small>Card rendered {dt.date.today().isoformat()} by preflab.</small></p>
</body></html>"""


def write_card(path: str | Path, report: Mapping, pairs: pd.DataFrame | None = None,
               settings: Mapping[str, object] | None = None, title: str = "Judge card",
               by_model: pd.DataFrame | None = None) -> Path:
    """Render the card and write it to ``path`` (UTF-8; ``-`` is standard output)."""
    write_output(path, render_card(report, pairs, settings, title, by_model))
    return Path(path)
