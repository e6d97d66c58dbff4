"""Every command that takes a verdict file takes a scores file (issue 39, item 1): calibrate and its card,
compare, jury, drift and ``rank --judge-battles`` (PPI), each run through the CLI on a reward model's scores."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from tests.judge.compare_files import preflab
from tests.judge.score_files import rm_frame, write_scores


def test_calibrate_reads_scores_and_reports_t1_and_the_cross_fitted_t(tmp_path, capsys):
    path = write_scores(tmp_path / "rm.jsonl", rm_frame(600, seed=4, temperature=2.0))
    code, out, err = preflab(capsys, "judge", "calibrate", str(path), "--bootstrap", "50", "--json",
                             str(tmp_path / "m.json"), "--report", str(tmp_path / "card.html"))
    assert code == 0, err
    report = json.loads((tmp_path / "m.json").read_text())
    cal = report["scores"]["calibration"]
    assert cal["at_t1"]["temperature"] == 1.0 and 1.5 < cal["fitted"]["temperature"] < 2.7
    assert report["scores"]["tolerance"] == 0 and report["labels"] == "humans"
    assert [r["name"] for r in report["baselines"]["rows"]] == ["majority class"]  # no lengths, no slots
    assert "Brier / ECE at fitted T (out-of-fold)" in out
    card = (tmp_path / "card.html").read_text()
    assert "fitted T (cross-fitted, 5 folds)" in card and "null baseline: majority class" in card


def test_calibrate_tie_margin_is_stated_and_counted(tmp_path, capsys):
    frame = pd.DataFrame({"item_id": ["1", "2", "3"], "model_x": "a", "model_y": "b",
                          "score_x": [1.0, 2.0, 0.0], "score_y": [1.04, 0.0, 2.0]})
    path = write_scores(tmp_path / "rm.csv", frame)
    code, out, err = preflab(capsys, "judge", "calibrate", str(path), "--tie-margin", "0.05", "--bootstrap", "10")
    assert code == 0, err
    assert "x 1, y 1, tie 1" in " ".join(out.split())
    assert "≤ 0.05 is a tie (1 pair)" in " ".join(out.split())


def _versions(n: int, seed: int) -> pd.DataFrame:
    """A new model version that scores higher than the old on 3 of 4 prompts."""
    rng = np.random.default_rng(seed)
    new, old = rng.normal(0.7, 1, n), rng.normal(0, 1, n)
    return pd.DataFrame({"item_id": [f"q{i}" for i in range(n)], "model_x": "new", "model_y": "old",
                         "score_x": new.round(4), "score_y": old.round(4)})


def test_compare_takes_a_scores_file(tmp_path, capsys):
    frame = _versions(80, 0)
    path = write_scores(tmp_path / "rm.jsonl", frame)
    code, out, err = preflab(capsys, "compare", "--base", "old", "--candidate", "new", "--verdicts", str(path),
                             "--json", "-")
    assert code == 0, err
    row = json.loads(out)["dimensions"][0]
    wins = int((frame["score_x"] > frame["score_y"]).sum())
    assert (row["wins"], row["losses"], row["inconsistent"]) == (wins, 80 - wins, 0)  # an RM has no slot


def test_jury_takes_scores_files_and_shows_the_baselines(tmp_path, capsys):
    frame = rm_frame(200, seed=6)
    a = write_scores(tmp_path / "rm_a.jsonl", frame.assign(judge="rm-a"))
    noisy = frame.assign(score_x=frame["score_x"] + np.random.default_rng(1).normal(0, 1, 200), judge="rm-b")
    b = write_scores(tmp_path / "rm_b.csv", noisy)
    lengths = tmp_path / "lengths.csv"
    frame.assign(len_x=np.arange(200) % 7, len_y=3)[["item_id", "model_x", "model_y", "len_x", "len_y"]].to_csv(
        lengths, index=False)
    code, out, err = preflab(capsys, "judge", "jury", str(a), str(b), "--lengths", str(lengths), "--bootstrap", "50",
                             "--json", str(tmp_path / "jury.json"))
    assert code == 0, err
    report = json.loads((tmp_path / "jury.json").read_text())
    assert set(report["members"]) == {"rm-a", "rm-b"}
    assert [r["name"] for r in report["baselines"]["rows"]] == ["longer answer", "majority class"]
    assert "null baseline: longer answer" in out and "panel − best baseline" in out


def test_drift_compares_two_reward_model_runs(tmp_path, capsys):
    frame = rm_frame(300, seed=7, labels=False)
    old = write_scores(tmp_path / "old.jsonl", frame)
    new = write_scores(tmp_path / "new.parquet", frame.assign(score_x=frame["score_x"] + 1.0))  # favours x now
    code, out, err = preflab(capsys, "judge", "drift", str(old), str(new), "--bootstrap", "50", "--json", "-")
    assert code == 1, err  # drift exits 1 on a changed judge
    report = json.loads(out)
    assert report["verdict"] == "changed" and report["effects"]["net_flips"]["y_to_x"] > 0
    assert report["effects"]["net_flips"]["x_to_y"] == 0
    code, out, err = preflab(capsys, "judge", "drift", str(old), str(old), "--bootstrap", "50", "--json", "-")
    assert code == 0 and json.loads(out)["verdict"] == "same judge"


def test_rank_judge_battles_takes_scores_as_ppi_judge_labels(tmp_path, capsys):
    judge = rm_frame(2000, seed=8, labels=False)
    path = write_scores(tmp_path / "rm.jsonl", judge)
    human = rm_frame(300, seed=9)
    human = pd.DataFrame({"model_a": human["model_x"], "model_b": human["model_y"],
                          "winner": np.where(human["label"] == "x", "model_a", "model_b"),
                          "question_id": human["item_id"]})
    human.to_csv(tmp_path / "human.csv", index=False)
    out_path = tmp_path / "ppi.json"
    code, out, err = preflab(capsys, "rank", str(tmp_path / "human.csv"), "--judge-battles", str(path),
                             "--bootstrap", "50", "--output", str(out_path))
    assert code == 0, err
    body = json.loads(out_path.read_text())
    assert body["meta"]["n_judge_items"] == 2000
    assert body["leaderboard"][0]["model"] == "alpha"


def test_objective_labels_name_the_reference_side_on_the_jury_card(tmp_path, capsys):
    frame = rm_frame(120, seed=11).assign(label_source="correctness")
    a = write_scores(tmp_path / "a.jsonl", frame.assign(judge="rm-a"))
    b = write_scores(tmp_path / "b.jsonl", frame.assign(judge="rm-b", score_y=frame["score_y"] + 0.3))
    code, out, err = preflab(capsys, "judge", "jury", str(a), str(b), "--bootstrap", "20")
    assert code == 0, err
    assert "panel: agreement / kappa vs correctness" in out
    assert "null baseline: majority class (agreement with correctness)" in out
