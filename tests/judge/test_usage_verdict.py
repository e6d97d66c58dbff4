"""The judge card's advice: every "usable for" needs its interval past the threshold, soft labels need information."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from judge.metrics.calibrate import usage_verdict

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo"


def _iv(value, lower, upper):
    return {"value": value, "lower": lower, "upper": upper}


def _reliability(mean_p, observed, n, half=0.02):
    return [{"n": k, "mean_p": m, "observed": o, "lower": o - half, "upper": o + half}
            for m, o, k in zip(mean_p, observed, n, strict=True)]


def test_a_point_past_the_threshold_is_not_enough():
    report = {"kappa": _iv(0.45, 0.35, 0.55), "agreement": _iv(0.7, 0.65, 0.75),
              "position": {"n_pairs": 100}, "consistency": _iv(0.82, 0.74, 0.9),
              "first_position_rate": _iv(0.5, 0.45, 0.55)}
    v = usage_verdict(report)
    assert v["usable_for"] == []
    assert any("lower bound < 0.4" in a for a in v["do_not_use_for"])
    assert any("single-order verdicts" in a for a in v["do_not_use_for"])
    report.update(kappa=_iv(0.5, 0.42, 0.58), consistency=_iv(0.9, 0.85, 0.95))
    v = usage_verdict(report)
    assert any(u.startswith("aggregate win rates") for u in v["usable_for"])
    assert any(u.startswith("verdicts in either order") for u in v["usable_for"])


def test_calibrated_but_uninformative_probabilities_are_not_soft_labels():
    from judge.metrics.calibrate import calibration_bounds

    flat = _reliability([0.48, 0.52], [0.49, 0.51], [700, 800], half=0.03)
    ece_hi, resolution = calibration_bounds(flat)
    assert ece_hi == pytest.approx((700 * 0.04 + 800 * 0.04) / 1500)
    assert resolution < 0.001
    report = {"kappa": _iv(0.0, -0.04, 0.04), "calibration": {"ece": 0.01, "reliability": flat}}
    v = usage_verdict(report)
    assert not any("soft labels" in u for u in v["usable_for"])
    assert any("soft labels: calibrated" in a and "uninformative" in a for a in v["do_not_use_for"])
    sharp = _reliability([0.1, 0.9], [0.11, 0.9], [700, 800])
    report = {"kappa": _iv(0.7, 0.62, 0.78), "calibration": {"ece": 0.01, "reliability": sharp}}
    assert any("soft labels" in u for u in usage_verdict(report)["usable_for"])
    # without kappa, information is the resolution term
    usable = usage_verdict({"calibration": {"ece": 0.01, "reliability": sharp}})["usable_for"]
    assert any("soft labels" in u for u in usable)
    assert not usage_verdict({"calibration": {"ece": 0.01, "reliability": flat}})["usable_for"]
    # a calibrated point ECE whose bins' intervals allow miscalibration past 0.05
    loose = _reliability([0.1, 0.9], [0.11, 0.9], [20, 20], half=0.12)
    report = {"kappa": _iv(0.7, 0.62, 0.78), "calibration": {"ece": 0.01, "reliability": loose}}
    assert not any("soft labels" in u for u in usage_verdict(report)["usable_for"])


def test_smollm2_is_never_praised_whatever_a_handful_of_votes(tmp_path):
    """SmolLM2 says A whatever it sees (kappa 0, first slot ~100%): on the demo votes, and with 6 pairs'
    human outcome redrawn (what a few more votes do), nothing is "usable for" (before: its probabilities were
    praised as soft labels in 2 of these 8 cases, ECE 0.047-0.048)."""
    pytest.importorskip("streamlit")
    from judge.metrics.calibrate import calibrate
    from voting.pages.calibration import judged_pairs
    from voting.store import open_store
    from voting.votes import seed_demo

    engine = open_store(f"sqlite:///{tmp_path / 'demo.db'}")
    seed_demo(engine, DEMO / "items.jsonl", DEMO / "battles.jsonl")
    pairs = judged_pairs(engine, "demo", DEMO / "verdicts-smollm2.jsonl")
    rng = np.random.default_rng(0)
    praised, avoid = [], []
    for trial in range(8):
        sub = pairs.copy()
        if trial:
            redrawn = rng.choice(sub.index[sub["human"].notna()], 6, replace=False)
            sub.loc[redrawn, "human"] = rng.choice([0, 1], 6)
        report = calibrate(sub, n_bootstrap=200)
        assert report["kappa"]["lower"] <= 0 <= report["kappa"]["upper"]
        praised += report["verdict"]["usable_for"]
        avoid.append(report["verdict"]["do_not_use_for"])
    assert praised == []
    assert all(any("no better than chance" in a for a in v) for v in avoid)
