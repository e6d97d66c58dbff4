"""Judge drift: the same pairs judged twice (an anchor set re-judged later, or a new judge version).

Effects measured on the pairs both runs judged, each with an interval:

- ``flips``: share of pairs whose winner (both orders combined conservatively) changed (Wilson), with the
  agreement and Cohen's kappa between the runs. Reported, not tested: a judge that is not deterministic
  (sampled verdicts, or an API whose logprobs jitter) flips near-even pairs between two runs of the very
  same version, and two runs cannot tell that noise from a change; compare with a rerun of the old judge;
- ``net_flips``: (x→y flips − y→x flips) / pairs, a directional change between the answers, with the exact
  McNemar test on the two flip counts (McNemar 1947);
- ``p_x_shift``: mean change of P(x wins) per pair (normal interval over pairs);
- ``first_slot_shift``: mean change of P(first slot wins) over the (pair, order) verdicts, averaged per pair
  before the interval so a pair's two orders count once: a change of position bias, which cancels out of the
  identity effects when both orders are judged; with McNemar on the first/second-slot flips.

Verdict at tolerance τ: **changed** when some systematic effect's interval (all but ``flips``) lies wholly
beyond ±τ, else **same judge**. The intervals are taken at level 1 − α/k for the k effects the data support
(Bonferroni), so an unchanged judge is flagged with probability at most α. ``resolved`` says whether every
interval lies within ±τ, i.e. whether the data could have shown a change of τ.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from judge.metrics import agreement as agr
from judge.report_text import format_interval
from judge.stats import mcnemar_exact, wilson_interval, z_value
from judge.verdicts.judged_pairs import OUTCOMES, column
from preflab.outcomes import Outcome


def _key(pairs: pd.DataFrame) -> pd.Series:
    """(item, model_x, model_y) as one string; a layout without model names (judge_labels.csv) keys by item."""
    def names(col: str) -> pd.Series | str:
        return pairs[col].astype(str) if col in pairs else ""

    return pairs["item_id"].astype(str) + "\x1f" + names("model_x") + "\x1f" + names("model_y")


def matched(old: pd.DataFrame, new: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """The two runs restricted to the pairs both judged, in one order; counts of those left out."""
    k_old, k_new = _key(old), _key(new)
    common = pd.Index(k_old).intersection(pd.Index(k_new), sort=False)
    a = old.set_axis(k_old).loc[lambda d: ~d.index.duplicated()].loc[common].reset_index(drop=True)
    b = new.set_axis(k_new).loc[lambda d: ~d.index.duplicated()].loc[common].reset_index(drop=True)
    return a, b, {"common": len(common), "only_old": int(len(set(k_old) - set(common))),
                  "only_new": int(len(set(k_new) - set(common)))}


def first_slot_probability(pairs: pd.DataFrame) -> np.ndarray:
    """P(the answer shown first wins) per pair and order (pairs × [xy, yx]); NaN without probabilities.
    In order xy the first slot holds x; in yx it holds y, whose probability is 1 − P(x) − P(tie)."""
    p_xy, p_yx = column(pairs, "p_xy"), column(pairs, "p_yx")
    pt_yx = np.nan_to_num(column(pairs, "pt_yx"))
    return np.stack([p_xy, 1.0 - p_yx - pt_yx], axis=1)


def first_slot_choice(pairs: pd.DataFrame) -> np.ndarray:
    """1 when the verdict picked the first slot, 0 the second, NaN for ties, unparsable or not run."""
    xy, yx = column(pairs, "judge_xy"), column(pairs, "judge_yx")
    first = np.stack([np.where(xy == Outcome.FIRST, 1.0, np.where(xy == Outcome.SECOND, 0.0, np.nan)),
                      np.where(yx == Outcome.SECOND, 1.0, np.where(yx == Outcome.FIRST, 0.0, np.nan))], axis=1)
    return first


def _mean_interval(d: np.ndarray, level: float) -> dict:
    d = d[~np.isnan(d)]
    if d.size < 2:
        return {"value": float("nan"), "lower": float("nan"), "upper": float("nan"), "n": int(d.size)}
    half = z_value(level) * d.std(ddof=1) / np.sqrt(d.size)
    m = float(d.mean())
    return {"value": m, "lower": m - half, "upper": m + half, "n": int(d.size)}


def _net_interval(b: int, c: int, n: int, level: float) -> dict:
    """(b − c) / n with the Agresti–Min interval for matched proportions (Agresti & Min 2005, Statistics in
    Medicine 24:729–740: the Wald interval after adding ½ to each cell of the 2 × 2 table). The plain Wald
    interval has zero width when nothing flipped, so a handful of pairs would look like proof of no change."""
    if n == 0:
        return {"value": float("nan"), "lower": float("nan"), "upper": float("nan")}
    b_adj, c_adj, n_adj = b + 0.5, c + 0.5, n + 2
    d_adj = (b_adj - c_adj) / n_adj
    var = ((b_adj + c_adj) / n_adj - d_adj**2) / n_adj
    half = z_value(level) * np.sqrt(max(var, 0.0))
    return {"value": (b - c) / n, "lower": d_adj - half, "upper": d_adj + half}


def drift_report(old: pd.DataFrame, new: pd.DataFrame, tolerance: float = 0.05, alpha: float = 0.05,
                 n_bootstrap: int = 1000, seed: int = 0) -> dict:
    """Drift between two judged-pairs tables (:mod:`judge.verdicts.judged_pairs`) of the same pairs; see the module."""
    from judge.metrics.calibrate import judge_codes

    a, b, counts = matched(old, new)
    if counts["common"] == 0:
        raise ValueError("the two runs share no pair (same item_id, model_x, model_y)")
    ca, cb = judge_codes(a), judge_codes(b)
    wa, wb = ca["conservative"], cb["conservative"]
    n = len(a)
    flips = int(np.sum(wa != wb))
    x_to_y = int(np.sum((wa == Outcome.FIRST) & (wb == Outcome.SECOND)))
    y_to_x = int(np.sum((wa == Outcome.SECOND) & (wb == Outcome.FIRST)))
    fa, fb = first_slot_choice(a), first_slot_choice(b)
    slot_lost = int(np.nansum((fa == 1) & (fb == 0)))
    slot_gained = int(np.nansum((fa == 0) & (fb == 1)))
    shift_x = cb["p_x"] - ca["p_x"]
    slot_p = first_slot_probability(b) - first_slot_probability(a)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: no probabilities for that pair
        slot_shift = np.nanmean(slot_p, axis=1)
    # Slot effects differ from the identity ones only when both orders were judged.
    two_orders = bool(np.any(~np.isnan(column(a, "judge_xy"))) and np.any(~np.isnan(column(a, "judge_yx"))))
    effects_supported = ["net_flips"]
    if np.sum(np.isfinite(shift_x)) >= 2:
        effects_supported.append("p_x_shift")
    if two_orders and np.sum(np.isfinite(slot_shift)) >= 2:
        effects_supported.append("first_slot_shift")
    if two_orders:
        effects_supported.append("first_slot_net_flips")
    k = len(effects_supported)
    level = 1 - alpha / k
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        slot_net = np.nanmean(fb - fa, axis=1)  # per pair, so its two orders count once
    effects = {
        "flips": {**wilson_interval(flips, n, 0.95).as_dict(), "count": flips},
        "net_flips": {**_net_interval(x_to_y, y_to_x, n, level), "x_to_y": x_to_y, "y_to_x": y_to_x,
                      "mcnemar_p": mcnemar_exact(x_to_y, y_to_x)},
        "p_x_shift": _mean_interval(shift_x, level),
        "first_slot_shift": _mean_interval(slot_shift, level),
        "first_slot_net_flips": {**_mean_interval(slot_net, level),
                                 "second_to_first": slot_gained, "first_to_second": slot_lost,
                                 "mcnemar_p": mcnemar_exact(slot_gained, slot_lost)},
    }
    beyond, within = [], []
    for name in effects_supported:
        e = effects[name]
        if np.isnan(e["value"]):
            continue
        (beyond if e["lower"] > tolerance or e["upper"] < -tolerance else
         within if -tolerance <= e["lower"] and e["upper"] <= tolerance else []).append(name)
    code_a = np.where(np.isin(wa, OUTCOMES), wa, Outcome.UNPARSABLE)
    code_b = np.where(np.isin(wb, OUTCOMES), wb, Outcome.UNPARSABLE)
    return {
        "pairs": counts, "tolerance": tolerance, "alpha": alpha, "interval_level": level,
        "effects_tested": effects_supported,
        "agreement": wilson_interval(n - flips, n, 0.95).as_dict(),
        "kappa": agr.kappa_interval(code_b, np.where(code_a == Outcome.UNPARSABLE, np.nan, code_a),
                                    n_bootstrap=n_bootstrap, seed=seed).as_dict(),
        "ties": {"old": int(np.sum(wa == Outcome.TIE)), "new": int(np.sum(wb == Outcome.TIE))},
        "effects": effects,
        "changed_by": beyond,
        "verdict": "changed" if beyond else "same judge",
        "resolved": len(within) == len([e for e in effects_supported if not np.isnan(effects[e]["value"])]),
    }


def drift_rows(report: dict) -> list[tuple[str, str]]:
    """(label, value) rows for the CLI."""
    def f(d: dict) -> str:
        return format_interval(d, signed=True)

    e, p = report["effects"], report["pairs"]
    rows = [("pairs judged by both runs", f"{p['common']} (only old {p['only_old']}, only new {p['only_new']})"),
            ("agreement between runs (95%)", format_interval(report["agreement"])),
            ("Cohen's kappa between runs (95% bootstrap)", format_interval(report["kappa"])),
            ("flipped winners (95%; not part of the verdict)",
             f"{e['flips']['count']} = {format_interval(e['flips'])}"),
            (f"net flips x→y minus y→x ({report['interval_level']:.1%} interval)",
             f"{f(e['net_flips'])} ({e['net_flips']['x_to_y']} vs "
             f"{e['net_flips']['y_to_x']}, McNemar p {e['net_flips']['mcnemar_p']:.3g})"),
            ("mean P(x wins) shift, new − old", f(e["p_x_shift"])),
            ("mean P(first slot wins) shift (position bias)", f(e["first_slot_shift"])),
            ("first-slot picks gained minus lost", f"{f(e['first_slot_net_flips'])} (McNemar p "
             f"{e['first_slot_net_flips']['mcnemar_p']:.3g})")]
    why = f": {', '.join(report['changed_by'])} beyond ±{report['tolerance']:g}" if report["changed_by"] else (
        f" (no effect shown beyond ±{report['tolerance']:g}"
        + ("" if report["resolved"] else "; too few pairs to rule out a change of that size") + ")")
    rows.append((f"verdict (false-flag rate ≤ {report['alpha']:g})", report["verdict"] + why))
    return rows
