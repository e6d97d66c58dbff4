"""The jury's report and card: each member and the panel against humans, the members against each other,
and the effective number of independent judges (the math is :mod:`judge.metrics.jury`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from html import escape
from pathlib import Path

import numpy as np

from judge.metrics import agreement as agr
from judge.metrics.jury import JuryTable, effective_judges, panel_verdicts
from judge.report_text import format_interval as _fmt
from judge.stats import paired_bootstrap, wilson_interval
from judge.verdicts.judged_pairs import OUTCOMES
from preflab.io import write_output
from preflab.outcomes import IDENTITY_NAMES, Outcome


def _versus_humans(code: np.ndarray, human: np.ndarray, n_bootstrap: int, level: float, seed: int) -> dict:
    code = np.where(np.isnan(code), Outcome.UNPARSABLE, code)
    return {"agreement": agr.accuracy(code, human, True, level),
            "kappa": agr.kappa_interval(code, human, n_bootstrap=n_bootstrap, level=level, seed=seed).as_dict(),
            "no_verdict": int(np.sum(code == Outcome.UNPARSABLE))}


def _baselines(table: JuryTable, panel: np.ndarray, n_bootstrap: int, level: float, seed: int) -> dict | None:
    """The null baselines (:mod:`judge.metrics.baselines`) against the panel: the longer answer and the
    majority class (a panel pools members' orders, so it has no first slot)."""
    from judge.metrics.baselines import null_baselines

    pairs = table.keys.assign(human=table.human)
    if table.lengths is not None:
        pairs = pairs.assign(len_x=table.lengths[:, 0], len_y=table.lengths[:, 1])
    pairs.attrs["orders"] = "none"
    return null_baselines(pairs, panel, level, n_bootstrap, seed)


def jury_report(table: JuryTable, rule: str = "majority", n_bootstrap: int = 1000, level: float = 0.95,
                seed: int = 0) -> dict:
    """Everything the jury card shows, JSON-ready (NaN where the data cannot support a number)."""
    from judge.metrics.ceiling import human_ceiling

    panel = panel_verdicts(table, rule, seed)
    human = table.human
    labelled = bool(np.any(~np.isnan(human)))
    members = {}
    for j, name in enumerate(table.members):
        members[name] = {"answered": int(np.sum(~np.isnan(table.codes[:, j]))),
                         "counts": {IDENTITY_NAMES[c]: int(np.sum(table.codes[:, j] == c)) for c in OUTCOMES}}
        if labelled:
            members[name].update(_versus_humans(table.codes[:, j], human, n_bootstrap, level, seed))
    pairwise = []
    m = len(table.members)
    for j in range(m):
        for k in range(j + 1, m):
            both = ~np.isnan(table.codes[:, j]) & ~np.isnan(table.codes[:, k])
            same = int(np.sum(table.codes[both, j] == table.codes[both, k]))
            pairwise.append({"members": [table.members[j], table.members[k]], "n": int(both.sum()),
                             "agreement": wilson_interval(same, int(both.sum()), level).as_dict(),
                             # kappa_interval defines kappa as 1 where both use one class (as drift does)
                             "kappa": agr.kappa_interval(table.codes[both, j], table.codes[both, k],
                                                         n_bootstrap=n_bootstrap, level=level,
                                                         seed=seed).as_dict()})
    report: dict = {
        "rule": rule, "members": members, "n_pairs": len(table.keys), "pairwise": pairwise, "labels": table.labels,
        "panel": {"counts": {IDENTITY_NAMES[c]: int(np.sum(panel["panel"] == c))
                             for c in (*OUTCOMES, Outcome.UNPARSABLE)},
                  "splits": panel.get("splits"), "abstentions": panel["abstentions"],
                  "no_member_answered": panel["no_member_answered"]},
        "effective_judges": None, "panel_minus_best_member": None, "ceiling": None, "baselines": None,
    }
    if rule == "dawid-skene":
        report["panel"]["confusion"] = {name: panel["confusion"][j].round(4).tolist()
                                        for j, name in enumerate(table.members)}
    if labelled:
        report["panel"].update(_versus_humans(panel["panel"], human, n_bootstrap, level, seed))
        report["effective_judges"] = effective_judges(table.codes, human, n_bootstrap=min(n_bootstrap, 500),
                                                      level=level, seed=seed)
        best = max(table.members, key=lambda n: members[n]["agreement"]["value"])
        keep = ~np.isnan(human)
        right = lambda c: (np.where(np.isnan(c), Outcome.UNPARSABLE, c)[keep] == human[keep]).astype(float)  # noqa: E731
        gain = paired_bootstrap(right(table.codes[:, table.members.index(best)]), right(panel["panel"]),
                                n_bootstrap, level, seed)
        report["panel_minus_best_member"] = {"best_member": best, **gain.as_dict()}
        report["baselines"] = _baselines(table, panel["panel"], n_bootstrap, level, seed)
        if table.ratings is not None and table.ratings.shape[1] >= 2:
            report["ceiling"] = human_ceiling(table.ratings, panel["panel"], n_bootstrap=n_bootstrap,
                                              level=level, seed=seed)
    return report


def jury_rows(report: Mapping) -> list[tuple[str, str]]:
    """(label, value) rows for the CLI table and the card."""
    rows = [("pairs", str(report["n_pairs"])), ("panel rule", report["rule"])]
    for name, r in report["members"].items():
        if "agreement" in r:
            rows.append((f"member {name}: agreement / kappa vs {report.get('labels', 'humans')}",
                         f"{_fmt(r['agreement'])} / {_fmt(r['kappa'])} ({r['no_verdict']} without a verdict)"))
        else:
            rows.append((f"member {name}", f"answered {r['answered']} of {report['n_pairs']} pairs"))
    p = report["panel"]
    if "agreement" in p:
        rows.append((f"panel: agreement / kappa vs {report.get('labels', 'humans')}",
                     f"{_fmt(p['agreement'])} / {_fmt(p['kappa'])}"))
    gain = report.get("panel_minus_best_member")
    if gain:
        rows.append((f"panel − best member ({gain['best_member']}), agreement", _fmt(gain)))
    from judge.metrics.baselines import baseline_rows

    baselines = baseline_rows(report.get("baselines"), report.get("labels") or "humans")
    rows += [(k.replace("judge", "panel"), v) for k, v in baselines]
    split = f", {p['splits']} split votes called a tie" if p.get("splits") else ""
    rows.append(("abstentions (member verdicts missing or unparsable)",
                 f"{p['abstentions']}{split}; {p['no_member_answered']} pairs with no member answering"))
    for pw in report["pairwise"]:
        rows.append((f"members agree: {pw['members'][0]} vs {pw['members'][1]}",
                     f"{_fmt(pw['agreement'])} (kappa {_fmt(pw['kappa'])}, n {pw['n']})"))
    eff = report.get("effective_judges")
    if eff:
        rows.append(("effective number of independent judges",
                     f"{_fmt(eff)} of {eff['members']} (mean error correlation {eff['mean_error_correlation']:.3f})"))
    ceiling = report.get("ceiling")
    if ceiling:
        from judge.metrics.ceiling import ceiling_rows

        rows += [(k.replace("judge", "panel"), v.replace("judge", "panel")) for k, v in ceiling_rows(ceiling)]
    return rows


def render_jury_card(report: Mapping, title: str = "Jury card") -> str:
    """The jury card as one self-contained HTML page (all text escaped)."""
    table = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in jury_rows(report))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:1000px;margin:1em auto;color:#222}}
table{{border-collapse:collapse;width:100%}} th,td{{text-align:left;padding:3px 8px;border-bottom:1px solid #ddd}}
th{{width:45%;font-weight:500}}</style></head><body>
<h1>{escape(title)}</h1>
<h2>Numbers (95% intervals)</h2><table>{table}</table>
<p><small>Card rendered {dt.date.today().isoformat()} by preflab.</small></p>
</body></html>"""


def write_jury_card(path: str | Path, report: Mapping, title: str = "Jury card") -> Path:
    """Render the jury card and write it (``-`` is standard output)."""
    write_output(path, render_jury_card(report, title))
    return Path(path)
