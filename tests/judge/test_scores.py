"""Scores as verdicts (issue 39, item 1): the generic layout read into the judged-pairs table, the tie rule,
the temperature fit checked against a known temperature, and bad score rows named by file, line and field."""

from __future__ import annotations

import json

import numpy as np
import pytest

from judge.metrics.adapters import load_any, load_verdicts_jsonl
from judge.metrics.calibrate import calibrate
from judge.metrics.temperature import fit_inverse_temperature, score_calibration
from judge.verdicts.scores import ScoreReading, load_scores, scores_table
from preflab.errors import InputError
from preflab.outcomes import Outcome
from tests.judge.score_files import rm_frame, write_scores


def _rows(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


ROWS = [{"item_id": "1", "model_x": "a", "model_y": "b", "score_x": 2.0, "score_y": 1.0, "label": "x"},
        {"item_id": "2", "model_x": "a", "model_y": "b", "score_x": 0.5, "score_y": 1.5, "label": "b"},
        {"item_id": "3", "model_x": "a", "model_y": "c", "score_x": 1.0, "score_y": 1.05, "label": "tie"}]


def test_score_rows_read_as_bradley_terry_verdicts_in_both_orders(tmp_path):
    pairs = load_verdicts_jsonl(_rows(tmp_path / "s.jsonl", ROWS))  # the reader every consumer calls
    assert list(pairs["item_id"]) == ["1", "2", "3"]
    assert pairs["p_xy"].to_numpy() == pytest.approx(1 / (1 + np.exp(-np.array([1.0, -1.0, -0.05]))))
    assert pairs["p_yx"].to_numpy() == pytest.approx(pairs["p_xy"].to_numpy())  # no order: one row, both orders
    assert list(pairs["judge_xy"]) == [Outcome.FIRST, Outcome.SECOND, Outcome.SECOND]
    assert list(pairs["human"]) == [Outcome.FIRST, Outcome.SECOND, Outcome.TIE]
    assert (pairs["pt_xy"] == 0).all() and pairs.attrs["label_source"] == "humans"
    assert pairs.attrs["settings"]["verdict methods"] == "score 6"


def test_a_stated_tolerance_makes_close_scores_a_tie_and_counts_them(tmp_path):
    pairs = load_scores(_rows(tmp_path / "s.jsonl", ROWS), ScoreReading(tolerance=0.1))
    assert list(pairs["judge_xy"]) == [Outcome.FIRST, Outcome.SECOND, Outcome.TIE]
    assert pairs.attrs["scores"]["ties"] == 1
    assert any("≤ 0.1 is a tie (1 pair)" in n for n in pairs.attrs["notes"])


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_jsonl_csv_and_parquet_give_the_same_table(tmp_path, suffix):
    frame = rm_frame(50, seed=3)
    ref = load_scores(write_scores(tmp_path / "ref.jsonl", frame))
    got = load_any(write_scores(tmp_path / f"s{suffix}", frame))  # auto layout finds the scores
    cols = ["item_id", "model_x", "model_y", "judge_xy", "p_xy", "p_yx", "human"]
    assert got[cols].to_dict("list") == ref[cols].to_dict("list")


def test_orders_given_per_row_keep_each_order_s_scores(tmp_path):
    rows = [dict(ROWS[0], order="xy"), dict(ROWS[0], order="yx", score_x=0.5, score_y=1.0)]
    pairs = load_scores(_rows(tmp_path / "s.jsonl", rows))
    assert pairs["judge_xy"][0] == Outcome.FIRST and pairs["judge_yx"][0] == Outcome.SECOND
    assert pairs.attrs["orders"] == "given"


def test_objective_labels_are_named_correctness_on_the_report(tmp_path):
    frame = rm_frame(60, seed=1).assign(label_source="correctness")
    report = calibrate(load_scores(write_scores(tmp_path / "s.jsonl", frame)), n_bootstrap=20)
    assert report["labels"] == "correctness"
    from judge.cards.card import summary_rows

    rows = dict(summary_rows(report))
    assert rows["labels"] == "correctness" and "agreement with correctness" in rows
    assert not any("human" in line for line in report["verdict"]["usable_for"] + report["verdict"]["do_not_use_for"])
    assert scores_table(rm_frame(60, seed=1), "<frame>", label_source="correctness").attrs["label_source"] == \
        "correctness"


BAD = [
    ("missing score", {"score_y": None}, "score_y", "missing"),
    ("non-numeric score", {"score_x": "high"}, "score_x", "not a number: 'high'"),
    ("NaN score", {"score_x": float("nan")}, "score_x", "not finite"),
    ("infinite score", {"score_y": float("inf")}, "score_y", "not finite"),
    ("unknown label", {"label": "maybe"}, "label", "unknown label 'maybe'"),
    ("bad order", {"order": "ab"}, "order", "'ab' is not 'xy' or 'yx'"),
    ("same model twice", {"model_y": "a"}, "model_y", "model_y equals model_x"),
]


@pytest.mark.parametrize(("name", "change", "field", "problem"), BAD, ids=[b[0] for b in BAD])
def test_bad_score_rows_name_file_line_and_field(tmp_path, name, change, field, problem):
    rows = [dict(r) for r in ROWS]
    rows[1].update(change)
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")  # json writes NaN/Infinity
    with pytest.raises(InputError) as e:
        load_verdicts_jsonl(path)
    assert (e.value.source, e.value.line, e.value.field) == (str(path), 2, field)
    assert problem in e.value.problem


def test_one_answer_scored_twice_with_different_values_is_refused(tmp_path):
    rows = [ROWS[0], dict(ROWS[0], model_y="c", score_x=2.5, score_y=0.0)]  # answer (1, a): 2.0 then 2.5
    with pytest.raises(InputError) as e:
        load_scores(_rows(tmp_path / "s.jsonl", rows))
    assert (e.value.line, e.value.field) == (2, "score_x") and "scored 2.5 here and 2.0 on line 1" in str(e.value)


def test_a_csv_names_the_csv_line(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("item_id,model_x,model_y,score_x,score_y\n1,a,b,1,2\n2,a,b,1,inf\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_any(path)
    assert (e.value.line, e.value.field) == (3, "score_y")


def test_repeated_rows_with_the_same_scores_are_counted_not_dropped_silently(tmp_path):
    pairs = load_scores(_rows(tmp_path / "s.jsonl", [ROWS[0], dict(ROWS[0], order="xy")]))
    assert any("1 repeated (pair, order) rows" in n for n in pairs.attrs["notes"])


def test_fitted_temperature_recovers_a_known_temperature():
    rng = np.random.default_rng(0)
    m = rng.normal(0, 3, 20_000)
    x_won = rng.random(m.size) < 1 / (1 + np.exp(-m / 2.5))  # the true reading is T = 2.5
    assert 1 / fit_inverse_temperature(m, x_won) == pytest.approx(2.5, rel=0.05)


def test_cross_fitted_temperature_is_better_calibrated_than_t1_when_the_scores_are_overconfident():
    frame = rm_frame(3000, seed=2, temperature=3.0)
    human = np.where(frame["label"] == "x", Outcome.FIRST, Outcome.SECOND).astype(float)
    cal = score_calibration((frame["score_x"] - frame["score_y"]).to_numpy(), human)
    assert cal["fitted"]["temperature"] == pytest.approx(3.0, rel=0.15)
    assert cal["fitted"]["ece"] < 0.03 < cal["at_t1"]["ece"]
    assert cal["fitted"]["brier"] < cal["at_t1"]["brier"]
    assert all(t == pytest.approx(3.0, rel=0.2) for t in cal["fitted"]["fold_temperatures"])


def test_the_fitted_temperature_is_never_scored_in_sample():
    # labels that are pure noise: an in-sample fit would shrink T to fit noise and look calibrated; out of fold,
    # the Brier at the fitted T cannot beat the constant 0.25 by more than noise
    rng = np.random.default_rng(5)
    m = rng.normal(0, 1, 200)
    human = np.where(rng.random(200) < 0.5, Outcome.FIRST, Outcome.SECOND).astype(float)
    cal = score_calibration(m, human)
    assert cal["fitted"]["brier"] >= 0.245


def test_scores_that_rank_the_wrong_way_get_no_temperature_and_the_card_says_so():
    rng = np.random.default_rng(3)
    m = rng.normal(0, 3, 2000)  # large margins: σ saturates, where Newton steps overshoot
    human = np.where(rng.random(m.size) < 1 / (1 + np.exp(m / 2)), Outcome.FIRST, Outcome.SECOND).astype(float)
    cal = score_calibration(m, human)
    assert cal["fitted"]["temperature"] is None
    assert cal["fitted"]["inverse_temperature"] == pytest.approx(-0.5, rel=0.15)
    from judge.metrics.temperature import score_rows

    rows = dict(score_rows({"scores": {"tolerance": 0.0, "ties": 1, "calibration": cal}}))
    assert rows["fitted T (cross-fitted, 5 folds)"].startswith("none: the scores rank the wrong way round")
