"""Calibration checks on the real shared data (PandaLM, LLMFAO, AlpacaEval)."""

from __future__ import annotations

import numpy as np
import pytest

from judge.metrics.adapters import load_any, load_llmfao, load_pandalm
from judge.metrics.calibrate import calibrate, position_bias_by_model


@pytest.fixture(scope="module")
def pandalm_report(shared_data):
    return calibrate(load_pandalm(shared_data / "pandalm"), n_bootstrap=500)


def test_pandalm_gpt35_vs_human_majority(pandalm_report):
    acc = pandalm_report["agreement"]
    assert acc["n"] == 999 and acc["n_unparsable"] == 25
    assert round(acc["value"], 3) == 0.698
    assert (round(acc["lower"], 3), round(acc["upper"], 3)) == (0.669, 0.725)
    kappa = pandalm_report["kappa"]
    assert round(kappa["value"], 3) == 0.476
    assert kappa["lower"] < 0.476 < kappa["upper"]


def test_pandalm_inter_annotator_kappas_match_published(pandalm_report):
    pk = pandalm_report["humans"]["pairwise_kappa"]
    assert {k: round(v, 3) for k, v in pk.items()} == {"1-2": 0.852, "1-3": 0.879, "2-3": 0.862}
    # The humans are the ceiling: the judge is far below them on the leave-one-out protocol.
    loo = pandalm_report["humans"]["leave_one_out"]
    assert loo["judge"]["upper"] < loo["human"]["lower"]


def test_pandalm_corrected_rate_recovers_humans_in_sample(pandalm_report):
    # With every parsable pair labelled, Rogan–Gladen recovers the human rate exactly (an algebraic identity).
    cw = pandalm_report["corrected_win_rate"]
    assert cw["corrected"]["value"] == pytest.approx(cw["human_rate_labelled"])
    assert cw["corrected"]["lower"] < cw["corrected"]["value"] < cw["corrected"]["upper"]


def test_pandalm_7b_is_also_calibrated(shared_data):
    rep = calibrate(load_pandalm(shared_data / "pandalm", judge="pandalm-7b"), n_bootstrap=200)
    assert rep["agreement"]["n_unparsable"] == 0 and 0.5 < rep["agreement"]["value"] < 0.9


def test_llmfao_gpt4_against_the_crowd(shared_data):
    pairs = load_llmfao(shared_data / "llmfao")
    rep = calibrate(pairs, n_bootstrap=300, length_threshold=100)
    # One order (x on the left): GPT-4 picks the right-hand answer more often, the crowd the left-hand one.
    assert rep["one_order_position"]["favours"] == "second"
    assert rep["one_order_position"]["first_win_rate"]["value"] == pytest.approx(943 / (943 + 1130))
    humans = rep["humans"]
    assert humans["annotators"] >= 4 and 0 < humans["krippendorff_alpha"] < 1
    assert rep["agreement"]["n"] == 2139 and 0 < rep["kappa"]["value"] < rep["agreement"]["value"]
    assert rep["length_bias"]["human_prefers_longer"]["n"] > 0


@pytest.mark.slow
def test_alpaca_eval_judge_favours_second_for_every_model(shared_data):
    pairs = load_any(shared_data / "alpaca_eval" / "annotations", layout="alpaca")
    table = position_bias_by_model(pairs)
    assert len(table) == 15
    assert (table["favours"] == "second").all(), table
    assert (table["upper"] < 0).all()
    rep = calibrate(pairs, n_bootstrap=200)
    assert rep["one_order_position"]["favours"] == "second"
    assert rep["agreement"] is None and rep["consistency"] is None  # no humans, one order: stated, not invented
    assert any("without logprobs" in n for n in rep["notes"])
    assert np.isfinite(rep["length_bias"]["slope"]["value"])
