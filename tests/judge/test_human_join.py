"""Human labels onto judged pairs: one join (item and unordered model pair) for the CLI and the app page."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from judge.metrics.human_join import attach_human, join_human
from preflab.errors import InputError
from preflab.outcomes import Outcome

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo"


def _pairs(rows):
    return pd.DataFrame(rows, columns=["item_id", "model_x", "model_y"])


def test_join_by_item_and_unordered_pair_oriented_to_x():
    pairs = _pairs([("q1", "m1", "m2"), ("q1", "m3", "m1"), ("q2", "m2", "m1"), ("q2", "m1", "m3")])
    labels = pd.DataFrame({"item_id": ["q1", "q1", "q2"], "model_a": ["m1", "m1", "m1"],
                           "model_b": ["m2", "m3", "m2"], "human": ["A", "B", "A"],
                           "human_1": ["A", "B", "tie"], "human_2": ["B", "", "A"]})
    out = join_human(pairs, labels)
    # q1 m1-m2: A = m1 = x; q1 m3-m1: B = m3 = x; q2 m2-m1: A = m1 = y; q2 m1-m3: no label
    assert out["human"].tolist()[:3] == [Outcome.FIRST, Outcome.FIRST, Outcome.SECOND]
    assert np.isnan(out["human"].iloc[3])
    assert out["human_1"].tolist()[:3] == [Outcome.FIRST, Outcome.FIRST, Outcome.TIE]
    assert out.loc[2, "human_2"] == Outcome.SECOND
    assert out.attrs["notes"] == ["1 judged pairs have no human label"]


def test_last_row_per_item_no_longer_wins(tmp_path):
    """Before: attach_human kept the last row per item_id, so every pair of an item got one pair's label."""
    pairs = _pairs([("q1", "m1", "m2"), ("q1", "m1", "m3")])
    path = tmp_path / "labels.csv"
    path.write_text("item_id,human,model_a,model_b\nq1,A,m1,m2\nq1,B,m1,m3\n")
    assert attach_human(pairs, path)["human"].tolist() == [Outcome.FIRST, Outcome.SECOND]


def test_conflicting_labels_for_one_pair_are_refused_with_the_line(tmp_path):
    pairs = _pairs([("q1", "m1", "m2")])
    path = tmp_path / "labels.csv"
    path.write_text("item_id,human,model_a,model_b\nq1,A,m1,m2\nq1,A,m2,m1\n")  # line 3 says m2 won
    with pytest.raises(InputError, match="conflicting labels") as e:
        attach_human(pairs, path)
    assert e.value.line == 3 and e.value.field == "human" and "human_1" in str(e.value)
    path.write_text("item_id,human,model_a,model_b\nq1,A,m1,m2\nq1,B,m2,m1\n")  # the same label twice
    out = attach_human(pairs, path)
    assert out["human"].tolist() == [Outcome.FIRST] and "1 repeated human label rows ignored" in out.attrs["notes"]


def test_label_by_item_alone_is_refused_when_the_item_has_several_pairs(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("item_id,human\nq1,A\n")
    with pytest.raises(InputError, match="ambiguous"):
        attach_human(_pairs([("q1", "m1", "m2"), ("q1", "m1", "m3")]), path)
    assert attach_human(_pairs([("q1", "m1", "m2")]), path)["human"].tolist() == [Outcome.FIRST]  # one pair: A = x
    nameless = pd.DataFrame({"item_id": ["q1"]})
    with pytest.raises(InputError, match="orient"):
        join_human(nameless, pd.DataFrame({"item_id": ["q1"], "model_a": ["m1"], "model_b": ["m2"],
                                           "human": ["A"]}))


def _metrics(report: dict) -> dict:
    """Everything both paths can compute: the app also has single voters (the humans section)."""
    return {k: v for k, v in report.items() if k not in ("source", "notes", "humans", "verdict")}


def test_cli_and_app_page_give_identical_metrics_on_the_demo(tmp_path):
    pytest.importorskip("streamlit")
    from judge.metrics.calibrate import report_json
    from judge_arena.assist import calibration_report
    from preflab_cli.judge_cmds import app
    from voting.pages.calibration import judged_pairs
    from voting.store import load_votes, open_store
    from voting.votes import export_bytes, seed_demo

    engine = open_store(f"sqlite:///{tmp_path / 'demo.db'}")
    seed_demo(engine, DEMO / "items.jsonl", DEMO / "battles.jsonl")  # `preflab demo-seed`
    labels = tmp_path / "labels.csv"  # `preflab export-votes labels.csv --as labels`
    labels.write_bytes(export_bytes(load_votes(engine, "demo"), "labels"))
    verdicts = DEMO / "verdicts-smollm2.jsonl"
    out = tmp_path / "cli.json"
    res = CliRunner().invoke(app, ["calibrate", str(verdicts), "--human", str(labels), "--lengths",
                                   str(DEMO / "pairs.jsonl"), "--bootstrap", "500", "--json", str(out)])
    assert res.exit_code == 0, res.output
    cli = json.loads(out.read_text())
    page = json.loads(report_json(calibration_report(judged_pairs(engine, "demo", verdicts), n_bootstrap=500)))
    # the page counts every vote, the exported labels file holds one label per item: only n_votes differs
    assert cli["ppi_gain"].pop("n_votes") == 233 and page["ppi_gain"].pop("n_votes") == 751
    assert _metrics(cli) == _metrics(page)
    assert cli["agreement"]["n"] == 233 and cli["agreement"]["value"] == pytest.approx(0.446, abs=5e-4)
    assert cli["ppi_gain"]["n_items"] == 233  # the card's PPI gain, on both paths
    assert "7 judged pairs have no human label" in cli["notes"]


def test_exported_labels_keep_their_model_pair(tmp_path):
    from judge.metrics.adapters import load_judge_labels

    path = tmp_path / "labels.csv"
    path.write_text("item_id,verdict_ab,verdict_ba,human,model_a,model_b\nq1,A,A,B,m1,m2\nq1,,,A,m1,m3\n")
    pairs = load_judge_labels(path)
    assert pairs[["model_x", "model_y"]].values.tolist() == [["m1", "m2"], ["m1", "m3"]]
    other = tmp_path / "other.csv"
    other.write_text("item_id,human,model_a,model_b\nq1,A,m3,m1\nq1,tie,m2,m1\n")
    assert attach_human(pairs, other)["human"].tolist() == [Outcome.TIE, Outcome.SECOND]


def test_cli_refuses_an_ambiguous_label_file_with_exit_2(tmp_path):
    from preflab_cli.judge_cmds import app

    labels = tmp_path / "labels.csv"
    labels.write_text("item_id,human\ndemo-001,A\n")  # demo-001 has several judged pairs
    res = CliRunner().invoke(app, ["calibrate", str(DEMO / "verdicts-smollm2.jsonl"), "--human", str(labels)])
    assert res.exit_code == 2 and "ambiguous" in res.output and "Traceback" not in res.output


def test_the_vote_join_labels_and_measures_each_answer_by_identity():
    """The app page's join (judge.metrics.human_join.join_votes): the votes' labels through join_human, each
    answer's length in characters by (item, model), so a pair listed the other way round gets the right lengths
    and an answer the store does not hold is unknown (NaN), not 0."""
    from judge.metrics.human_join import join_votes

    verdicts = _pairs([("q1", "m1", "m2"), ("q2", "m2", "m1")])
    verdicts.attrs["settings"] = {"judge model": "j"}
    labels = pd.DataFrame({"item_id": ["q1", "q2"], "model_a": ["m1", "m1"], "model_b": ["m2", "m2"],
                           "human": ["A", "A"]})
    out = join_votes(verdicts, labels, {("q1", "m1"): "four", ("q1", "m2"): "sixsix", ("q2", "m2"): "xy"})
    assert out["human"].tolist() == [Outcome.FIRST, Outcome.SECOND]  # q2: A = m1 = y
    assert out["len_x"].tolist() == [4, 2] and out["len_y"].iloc[0] == 6 and np.isnan(out["len_y"].iloc[1])
    assert out.attrs["settings"] == {"judge model": "j"}
