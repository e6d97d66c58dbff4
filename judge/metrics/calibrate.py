"""Calibrate a judge against humans: every metric on one judged-pairs table, and a verdict on its use.

:func:`calibrate` is the one entry the CLI, the card and the notebook call. It takes the table of
:mod:`judge.verdicts.judged_pairs` and returns a JSON-ready dict whose top-level keys are stable: ``n_pairs,
consistency, first_position_rate, conservative {a, b, tie}, agreement {value, lower, upper}, kappa {…},
tpr, tnr, length_bias {…}, self_preference {…}, calibration {brier (three-class), ece (decided pairs),
tie {…}}`` plus detail sections.
A metric that the data cannot support (no second order, no human labels, no lengths) is ``null``.
Unparsable verdicts are never dropped: they count as disagreements in agreement and kappa, and as "x does
not win" in the TPR/TNR-corrected win rate; their number is reported.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from judge.metrics import agreement as agr
from judge.metrics.baselines import baseline_uses, null_baselines
from judge.metrics.bias import (
    length_bias,
    one_order_position_bias,
    outcome_counts,
    position_bias,
    score_x,
    self_preference,
)
from judge.metrics.probability import (
    brier_score,
    brier_score_multiclass,
    corrected_win_rate,
    expected_calibration_error,
    reliability_table,
)
from judge.metrics.temperature import score_calibration
from judge.stats import wilson_interval
from judge.verdicts.judged_pairs import annotator_columns, column, combine_order_codes, has, judge_single, p_x_single
from preflab.outcomes import Outcome


def _two_orders(pairs: pd.DataFrame) -> bool:
    return bool(np.any(~np.isnan(column(pairs, "judge_xy")) & ~np.isnan(column(pairs, "judge_yx"))))


def judge_codes(pairs: pd.DataFrame) -> dict[str, np.ndarray]:
    """The judge's winner per pair (both combining rules when both orders exist, else the one order run)
    and its averaged ``p_x``, ``p_y``, ``p_tie`` (NaN on pairs where no order gave probabilities)."""
    codes = combine_order_codes(column(pairs, "judge_xy"), column(pairs, "judge_yx"), column(pairs, "p_xy"),
                                column(pairs, "p_yx"), column(pairs, "pt_xy"), column(pairs, "pt_yx"))
    forecast = ~np.isnan(column(pairs, "p_xy")) | ~np.isnan(column(pairs, "p_yx"))  # one-hot verdicts are no forecast
    probs = {k: np.where(forecast, codes[k], np.nan) for k in ("p_x", "p_y", "p_tie")}
    # low label mass in either order: the probability is no forecast of this verdict (not in Brier/ECE)
    low = np.zeros(len(pairs), dtype=bool)
    for o in ("xy", "yx"):
        if has(pairs, f"low_{o}"):
            low |= pairs[f"low_{o}"].fillna(False).astype(bool).to_numpy()
    probs["low_mass"] = low
    if _two_orders(pairs):
        return {"conservative": codes["conservative"], "average": codes["average"], **probs}
    single = judge_single(pairs)
    return {"conservative": single, "average": single, **probs}


def _one_order(pairs: pd.DataFrame, level: float) -> dict | None:
    """Position bias from pairs judged in exactly one, known order (x first iff ``judge_xy`` is set)."""
    xy, yx = column(pairs, "judge_xy"), column(pairs, "judge_yx")
    one = np.isnan(xy) ^ np.isnan(yx)
    if not one.any():
        return None
    p_x = p_x_single(pairs)
    win_x = np.where(np.isnan(p_x), score_x(judge_single(pairs)), p_x)[one]
    return one_order_position_bias(win_x, ~np.isnan(xy[one]), level)


def position_bias_by_model(pairs: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """One-order position bias per ``model_y`` (e.g. each AlpacaEval model against the baseline)."""
    rows = []
    for model, group in pairs.groupby("model_y", sort=True):
        res = _one_order(group, level)
        if res is None or res["design"] != "randomised order":
            continue
        diff = res["first_minus_second"]
        rows.append({"model": model, "n": res["n"], "win_when_first": res["win_when_first"],
                     "win_when_second": res["win_when_second"], "difference": diff["value"],
                     "lower": diff["lower"], "upper": diff["upper"], "favours": res["favours"]})
    return pd.DataFrame(rows)


def _human_section(pairs: pd.DataFrame, judge: np.ndarray, level: float) -> dict | None:
    cols = annotator_columns(pairs)
    if len(cols) < 2:
        return None
    ratings = pairs[cols].to_numpy(dtype=float)
    return {
        "annotators": len(cols),
        # Pairwise kappa only when column k is one person (PandaLM); crowd columns are just vote slots.
        "pairwise_kappa": None if pairs.attrs.get("annotators") == "crowd" else agr.pairwise_kappas(ratings),
        "fleiss_kappa": agr.fleiss_kappa(ratings),
        "krippendorff_alpha": agr.krippendorff_alpha_nominal(ratings),
        "leave_one_out": agr.leave_one_out_agreement(ratings, judge, level),
    }


def _calibration(codes: Mapping[str, np.ndarray], human: np.ndarray, n_bins: int, level: float) -> dict | None:
    """Calibration of the judge's three-way forecast (P(x), P(y), P(tie)) against the human outcome.

    - ``brier``: Brier's three-class score over every labelled pair (proper: a forecast that says tie 23% of
      the time is judged on the ties too);
    - ``ece`` and the reliability table: P(x wins | decided) = p_x / (p_x + p_y) against "x won" on the pairs
      the humans decided. Scoring the unconditional p_x there, as before, made a calibrated judge that says
      tie look miscalibrated (its p_x is low by the tie mass);
    - ``tie``: the tie-calibration line: mean P(tie) against the observed tie rate (Wilson), and its ECE.
    """
    p = np.stack([codes["p_x"], codes["p_y"], codes["p_tie"]], axis=1)
    low = codes.get("low_mass", np.zeros(len(human), dtype=bool))
    labelled = ~np.isnan(human) & ~np.isnan(p).any(axis=1) & ~low
    n_low = int(np.sum(~np.isnan(human) & ~np.isnan(p).any(axis=1) & low))
    if not labelled.any():
        return None
    p, h = np.clip(p[labelled], 0.0, 1.0), human[labelled]
    decided = (h != Outcome.TIE) & (p[:, 0] + p[:, 1] > 0)
    out: dict = {"n": int(labelled.sum()), "brier": brier_score_multiclass(p, h), "n_decided": int(decided.sum()),
                 "n_low_mass_excluded": n_low,
                 "brier_decided": None, "ece": None, "reliability": []}
    if decided.any():
        q = p[decided, 0] / (p[decided, 0] + p[decided, 1])
        x_won = (h[decided] == Outcome.FIRST).astype(float)
        out.update(brier_decided=brier_score(q, x_won), ece=expected_calibration_error(q, x_won, n_bins),
                   reliability=reliability_table(q, x_won, n_bins, level).to_dict(orient="records"))
    tie = (h == Outcome.TIE).astype(float)
    observed = wilson_interval(float(tie.sum()), tie.size, level)
    out["tie"] = {"mean_p_tie": float(p[:, 2].mean()), "observed": observed.as_dict(),
                  "ece": expected_calibration_error(p[:, 2], tie, n_bins)}
    return out


def _corrected(judge: np.ndarray, human: np.ndarray, n_bootstrap: int, level: float, seed: int) -> dict | None:
    """x's win rate (pass = x wins) on the pairs without human labels, corrected with TPR/TNR from the
    labelled ones; when every pair is labelled, on the labelled pairs themselves (a check: equals the humans).

    An unparsable (or missing) verdict is kept and counts as "x does not win", as in :mod:`judge.metrics.agreement`
    where it is a disagreement whenever the humans say x won: the TPR measured on the labelled pairs then
    includes the judge's failures to answer, and the correction stays unbiased when unparsable outputs are
    more common for one outcome. (Dropping them, as before, biased the corrected rate in that case.)
    """
    judge = np.where(np.isnan(judge), Outcome.UNPARSABLE, judge)
    labelled, unlabelled = ~np.isnan(human), np.isnan(human)
    if labelled.sum() < 2 or len(np.unique(human[labelled] == Outcome.FIRST)) < 2:
        return None
    res = corrected_win_rate(judge[labelled] == Outcome.FIRST, human[labelled] == Outcome.FIRST,
                             judge[unlabelled] == Outcome.FIRST if unlabelled.any() else None,
                             n_bootstrap=n_bootstrap, level=level, seed=seed)
    res["human_rate_labelled"] = float(np.mean(human[labelled] == Outcome.FIRST))
    res["n_unparsable"] = int(np.sum(judge == Outcome.UNPARSABLE))
    return res


def _scores(pairs: pd.DataFrame, human: np.ndarray, n_bins: int, seed: int) -> dict | None:
    """A scoring judge's reading (tolerance, ties) and its calibration at T = 1 and a cross-fitted T."""
    if not pairs.attrs.get("scores"):
        return None
    margin = np.nanmean(np.vstack([column(pairs, "margin_xy"), column(pairs, "margin_yx")]), axis=0)
    cal = score_calibration(margin, human, n_bins=n_bins, seed=seed) if np.any(~np.isnan(human)) else None
    return {**pairs.attrs["scores"], "calibration": cal}


def calibrate(pairs: pd.DataFrame, *, family: Mapping[str, str] | None = None, judge_family: str | None = None,
              length_threshold: float = 0.0, n_bootstrap: int = 1000, n_bins: int = 10,
              level: float = 0.95, seed: int = 0) -> dict:
    """All calibration metrics for one judge on one judged-pairs table (see the module docstring)."""
    human = column(pairs, "human")
    codes = judge_codes(pairs)
    judge = codes["conservative"]
    two = _two_orders(pairs)
    pos = position_bias(column(pairs, "judge_xy"), column(pairs, "judge_yx"), level) if two else None
    with_human = bool(np.any(~np.isnan(human)))
    report: dict = {
        "source": pairs.attrs.get("source", ""),
        "notes": list(pairs.attrs.get("notes", [])),
        "n_pairs": len(pairs),
        "orders": "both" if two else "one",
        "consistency": pos["consistency"] if pos else None,
        "first_position_rate": pos["first_position_rate"] if pos else None,
        "position": pos,
        "one_order_position": _one_order(pairs, level),
        "conservative": outcome_counts(codes["conservative"]),
        "averaged": outcome_counts(codes["average"]),
        "agreement": None, "agreement_without_ties": None, "agreement_averaged": None,
        "kappa": None, "tpr": None, "tnr": None, "per_class": None, "confusion": None,
        "humans": None, "length_bias": None, "self_preference": None, "calibration": None,
        "corrected_win_rate": None, "baselines": None,
        "labels": pairs.attrs.get("label_source", "humans"), "scores": _scores(pairs, human, n_bins, seed),
    }
    if with_human:
        rates = agr.pass_rates(judge, human, level)
        conf = agr.confusion_matrix(judge, human)
        report.update(
            agreement=agr.accuracy(judge, human, True, level),
            agreement_without_ties=agr.accuracy(judge, human, False, level),
            agreement_averaged=agr.accuracy(codes["average"], human, True, level),
            kappa=agr.kappa_interval(judge, human, n_bootstrap=n_bootstrap, level=level, seed=seed).as_dict(),
            tpr=rates["tpr"], tnr=rates["tnr"],
            per_class=agr.per_class_rates(judge, human, level),
            confusion={"rows": list(conf.index), "columns": list(conf.columns), "counts": conf.to_numpy().tolist()},
            humans=_human_section(pairs, judge, level),
            calibration=_calibration(codes, human, n_bins, level),
            corrected_win_rate=_corrected(judge, human, n_bootstrap, level, seed),
            baselines=null_baselines(pairs, judge, level, n_bootstrap, seed),
        )
        if report["humans"]:
            from judge.metrics.ceiling import human_ceiling

            cols = annotator_columns(pairs)
            report["humans"]["ceiling"] = human_ceiling(pairs[cols].to_numpy(dtype=float), judge, n_bootstrap,
                                                        level, seed)
    if has(pairs, "len_x") and has(pairs, "len_y"):
        report["length_bias"] = length_bias(judge, column(pairs, "len_x"), column(pairs, "len_y"),
                                            human if with_human else None, length_threshold, level)
    if family and judge_family and with_human and has(pairs, "model_x"):
        report["self_preference"] = self_preference(
            judge, human, pairs["model_x"].to_numpy(), pairs["model_y"].to_numpy(), family, judge_family,
            n_bootstrap, level, seed)
    report["verdict"] = usage_verdict(report)
    return report


def _ok(d: Mapping | None, key: str = "value") -> bool:
    return d is not None and d.get(key) is not None and not math.isnan(d[key])


MIN_RESOLUTION = 0.01
"""Brier resolution below which probabilities carry no usable information (1/25 of a fair coin's 0.25)."""


def calibration_bounds(reliability: list[Mapping]) -> tuple[float, float]:
    """(ECE upper bound, Brier resolution) from the reliability table: ECE with each bin's observed rate at
    the far end of its Wilson interval (conservative), and resolution ``sum_b n_b (o_b - o)^2 / N`` (Murphy
    1973, 'A new vector partition of the probability score')."""
    if not reliability:
        return float("inf"), 0.0
    t = pd.DataFrame(reliability)
    w = t["n"] / t["n"].sum()
    far = np.maximum(np.abs(t["lower"] - t["mean_p"]), np.abs(t["upper"] - t["mean_p"]))
    base = float((w * t["observed"]).sum())
    return float((w * far).sum()), float((w * (t["observed"] - base) ** 2).sum())


Uses = tuple[list[str], list[str]]  # (usable for, do not use for)


def _agreement_uses(report: Mapping) -> Uses:
    """Kappa's lower bound: replacing humans (≥ 0.6), aggregates (≥ 0.4), nothing (≤ 0); leave-one-out."""
    kappa, humans = report.get("kappa"), report.get("humans") or {}
    if not _ok(kappa):
        return [], ["any claim of agreement with humans: no human labels were given"]
    use, avoid = [], []
    shown = f"kappa {kappa['value']:.2f} [{kappa['lower']:.2f}, {kappa['upper']:.2f}]"
    by_humans = report.get("labels", "humans") == "humans"  # else objective labels: "correctness"
    if kappa["lower"] >= 0.6:
        use.append(f"replacing {'human pairwise' if by_humans else 'correctness'} labels on this kind of data "
                   f"(kappa {kappa['value']:.2f}, lower bound {kappa['lower']:.2f} ≥ 0.6)")
    elif kappa["lower"] >= 0.4:
        use.append(f"aggregate win rates and rankings, corrected with its TPR/TNR ({shown}, lower bound ≥ 0.4)")
        avoid.append(f"per-item decisions: it disagrees with {'humans' if by_humans else 'the correctness labels'} on "
                     f"{1 - report['agreement']['value']:.0%} of pairs")
    elif kappa["lower"] <= 0:
        whose = "the humans' choices" if by_humans else "which answer is correct"
        avoid.append(f"anything that needs information about {whose}: {shown} does not exclude "
                     "0 (no better than chance)")
    else:
        avoid.append(f"replacing {'humans' if by_humans else 'the correctness labels'}: {shown} is not above "
                     "moderate agreement (lower bound < 0.4)")
    loo = humans.get("leave_one_out")
    if loo and _ok(loo["judge"]) and _ok(loo["human"]) and loo["judge"]["upper"] < loo["human"]["lower"]:
        avoid.append(f"claims of human-level agreement (leave-one-out {loo['judge']['value']:.2f} vs "
                     f"humans {loo['human']['value']:.2f})")
    return use, avoid


def _order_uses(report: Mapping) -> Uses:
    """Consistency's lower bound ≥ 0.8 and a first-slot rate whose interval holds 0.5: either order will do."""
    pos, first, consistency = report.get("position"), report.get("first_position_rate"), report.get("consistency")
    if not (pos and _ok(consistency)):
        return [], []
    if consistency["lower"] < 0.8 or first["lower"] > 0.5 or first["upper"] < 0.5:  # the interval, not the point
        return [], [f"single-order verdicts (consistency {consistency['value']:.2f}, first slot chosen "
                    f"{first['value']:.2f}): judge both orders and combine conservatively"]
    return [f"verdicts in either order (consistency {consistency['value']:.2f})"], []


def _one_order_uses(report: Mapping) -> Uses:
    one = report.get("one_order_position")
    if one and one.get("favours") in ("first", "second"):
        return [], [f"one-order comparisons without randomised order: it favours the answer shown {one['favours']}"]
    return [], []


def _length_uses(report: Mapping) -> Uses:
    """A preference for the longer answer beyond the humans' (or beyond 0.5 without them)."""
    lb = report.get("length_bias")
    if not (lb and _ok(lb["judge_prefers_longer"])):
        return [], []
    j, h = lb["judge_prefers_longer"], lb.get("human_prefers_longer")
    human = h if h and _ok(h) else None
    if not (j["lower"] > human["upper"] if human else j["lower"] > 0.5):
        return [], []
    return [], [f"comparing answers of different lengths without length control (prefers the longer "
                f"answer {j['value']:.0%} of the time" + (f" vs humans {h['value']:.0%})" if human else ")")]


def _self_preference_uses(report: Mapping) -> Uses:
    sp = report.get("self_preference")
    if sp and _ok(sp["difference"]) and sp["difference"]["lower"] > 0:
        return [], [f"judging its own family ({sp['judge_family']}): +{sp['difference']['value']:.2f} over humans"]
    return [], []


def _soft_label_uses(report: Mapping) -> Uses:
    """Soft labels: the ECE's upper bound ≤ 0.05 and information (kappa's lower bound > 0, else resolution)."""
    cal, kappa = report.get("calibration"), report.get("kappa")
    if not (cal and cal.get("ece") is not None):
        return [], []
    ece_hi, resolution = calibration_bounds(cal.get("reliability") or [])
    informative = kappa["lower"] > 0 if _ok(kappa) else resolution >= MIN_RESOLUTION
    if ece_hi <= 0.05 and informative:
        return [f"its probabilities as soft labels (ECE {cal['ece']:.3f}, at most {ece_hi:.3f} on decided "
                f"pairs; resolution {resolution:.3f})"], []
    if ece_hi <= 0.05:
        return [], [f"its probabilities as soft labels: calibrated (ECE {cal['ece']:.3f}) but uninformative ("
                    + (f"kappa's lower bound {kappa['lower']:.2f} ≤ 0" if _ok(kappa) else
                       f"resolution {resolution:.3f} < {MIN_RESOLUTION}") + "): probabilities near the base "
                    "rate say nothing about a pair"]
    return [], [f"reading P(A wins) as a probability (ECE {cal['ece']:.3f}, up to {ece_hi:.3f} within the "
                "bins' intervals, on decided pairs)"]


def _tie_uses(report: Mapping) -> Uses:
    """P(tie) whose mean lies outside the humans' tie rate interval."""
    tie = (report.get("calibration") or {}).get("tie")
    if not tie or tie["observed"]["lower"] <= tie["mean_p_tie"] <= tie["observed"]["upper"]:
        return [], []
    seen = (f"humans tie {tie['observed']['value']:.2f} [{tie['observed']['lower']:.2f}, "
            f"{tie['observed']['upper']:.2f}]")
    return [], [f"reading P(tie) as a probability (mean {tie['mean_p_tie']:.2f}, {seen})" if tie["mean_p_tie"] > 0
                else f"unconditional P(x wins): it gives ties no probability, but {seen}"]


#: The card's checks, in the order their lines are shown.
USAGE_CHECKS = (baseline_uses, _agreement_uses, _order_uses, _one_order_uses, _length_uses, _self_preference_uses,
                _soft_label_uses, _tie_uses)


def usage_verdict(report: Mapping) -> dict[str, list[str]]:
    """The card's one-screen verdict: what the judge is usable for, and what not, from the intervals.

    Every "usable for" needs its interval, not the point, past the threshold: kappa's lower bound ≥ 0.6
    substantial, ≥ 0.4 moderate (Landis & Koch 1977); consistency's lower bound ≥ 0.8; a bias counts when its
    interval excludes no-bias; soft labels need the ECE's upper bound (:func:`calibration_bounds`) ≤ 0.05 and
    information: kappa's lower bound above 0 (or, without kappa, resolution ≥ :data:`MIN_RESOLUTION`).
    """
    use: list[str] = []
    avoid: list[str] = []
    for check in USAGE_CHECKS:
        more_use, more_avoid = check(report)
        use += more_use
        avoid += more_avoid
    return {"usable_for": use, "do_not_use_for": avoid}


def _json_ready(obj):
    if isinstance(obj, dict):
        return {str(k): _json_ready(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_json_ready(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def report_json(report: Mapping) -> str:
    """The report as JSON text (NaN → null), with the stable keys first."""
    return json.dumps(_json_ready(dict(report)), indent=2, ensure_ascii=False)
