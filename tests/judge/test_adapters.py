"""Adapters: the seed CSV, `preflab judge run` JSONL, human labels and lengths, with their error messages."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from judge.metrics.adapters import load_any, load_judge_labels, load_verdicts_jsonl
from judge.metrics.human_join import attach_human, attach_lengths
from preflab.errors import InputError
from preflab.outcomes import Outcome


def _write_labels(path):
    rows = (["i,A,A,A"] * 9 + ["i,B,B,B"] * 5 + ["i,A,B,tie"] * 6)
    path.write_text("item_id,verdict_ab,verdict_ba,human\n" + "\n".join(
        r.replace("i,", f"q{k},", 1) for k, r in enumerate(rows)) + "\n")
    return path


def test_seed_judge_labels_csv(tmp_path):
    pairs = load_judge_labels(_write_labels(tmp_path / "judge_labels.csv"))
    assert len(pairs) == 20
    assert list(pairs["judge_xy"][:9]) == [Outcome.FIRST] * 9 and list(pairs["judge_yx"][14:]) == [Outcome.SECOND] * 6
    assert (pairs["human"] == Outcome.TIE).sum() == 6


def test_seed_csv_errors_name_file_line_and_field(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("item_id,verdict_ab,verdict_ba,human\nq1,A,B,A\nq2,A,maybe,B\n")
    with pytest.raises(InputError) as e:
        load_judge_labels(bad)
    assert e.value.line == 3 and e.value.field == "verdict_ba" and "maybe" in str(e.value)
    missing = tmp_path / "missing.csv"
    missing.write_text("item_id,verdict_ab\nq1,A\n")
    with pytest.raises(InputError, match="verdict_ba"):
        load_judge_labels(missing)


def _row(item, order, verdict, p_a, p_b, p_tie=0.0, **extra):
    return {"item_id": item, "model_x": "mx", "model_y": "my", "order": order, "p_a": p_a, "p_b": p_b,
            "p_tie": p_tie, "verdict": verdict, "label_mass": 0.99, "raw": verdict, "tokens": 10, "cost": 0.0,
            "latency": 0.1, **extra}


def test_verdicts_jsonl_slots_become_identity(tmp_path):
    rows = [
        _row("q1", "xy", "A", 0.8, 0.2),      # x first, A = x
        _row("q1", "yx", "B", 0.3, 0.7),      # y first, B = x → consistent x
        _row("q2", "xy", "A", 0.6, 0.4),      # first slot both times → inconsistent
        _row("q2", "yx", "A", 0.9, 0.1),
        _row("q3", "xy", None, None, None, None),
        _row("q3", "yx", "tie", 0.2, 0.2, 0.6),
        _row("q3", "yx", "A", 0.9, 0.1),      # a repeat of (q3, yx): counted, first kept
    ]
    path = tmp_path / "verdicts.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    pairs = load_verdicts_jsonl(path).set_index("item_id")
    assert pairs.loc["q1", "judge_xy"] == Outcome.FIRST and pairs.loc["q1", "judge_yx"] == Outcome.FIRST
    assert pairs.loc["q1", "p_xy"] == pytest.approx(0.8) and pairs.loc["q1", "p_yx"] == pytest.approx(0.7)
    assert pairs.loc["q2", "judge_xy"] == Outcome.FIRST and pairs.loc["q2", "judge_yx"] == Outcome.SECOND
    assert pairs.loc["q2", "p_yx"] == pytest.approx(0.1)  # P(x) = p_b when y is shown first
    assert pairs.loc["q3", "judge_xy"] == Outcome.UNPARSABLE and np.isnan(pairs.loc["q3", "p_xy"])
    assert pairs.loc["q3", "judge_yx"] == Outcome.TIE and pairs.loc["q3", "pt_yx"] == pytest.approx(0.6)
    assert load_verdicts_jsonl(path).attrs["notes"] == ["1 repeated (pair, order) rows ignored"]


@pytest.mark.parametrize("line,field,match", [
    ('{"item_id": "q1", "order": "ab", "verdict": "A"}', "order", "'xy' or 'yx'"),
    ('{"item_id": "q1", "order": "xy", "verdict": "C?"}', "verdict", "unknown verdict"),
    ('{"order": "xy", "verdict": "A"}', "item_id", "missing"),
    ('{"item_id": "q1", "order": "xy", "verdict": "A", "p_a": "high"}', "p_a", "not a number"),
    ("{not json", None, "not valid JSON"),
])
def test_verdicts_jsonl_errors(tmp_path, line, field, match):
    path = tmp_path / "v.jsonl"
    path.write_text(json.dumps(_row("q0", "xy", "A", 0.5, 0.5)) + "\n" + line + "\n")
    with pytest.raises(InputError, match=match) as e:
        load_verdicts_jsonl(path)
    assert e.value.line == 2 and e.value.field == field and str(path) in str(e.value)


def test_attach_human_and_lengths_count_unmatched(tmp_path):
    pairs = load_judge_labels(_write_labels(tmp_path / "judge_labels.csv")).drop(columns="human")
    labels = tmp_path / "human.csv"
    labels.write_text("item_id,human\nq0,A\nq1,B\nzz,tie\n")
    out = attach_human(pairs, labels)
    assert out.loc[0, "human"] == Outcome.FIRST and out.loc[1, "human"] == Outcome.SECOND
    assert out["human"].isna().sum() == 18
    assert "1 human labels match no judged pair" in out.attrs["notes"]
    assert "18 judged pairs have no human label" in out.attrs["notes"]
    lengths = tmp_path / "pairs.jsonl"
    lengths.write_text(json.dumps({"item_id": "q0", "prompt": "p", "model_x": "a", "answer_x": "abc",
                                   "model_y": "b", "answer_y": "abcdef"}) + "\n")
    with_len = attach_lengths(out, lengths)
    assert with_len.loc[0, ["len_x", "len_y"]].tolist() == [3, 6] and with_len["len_x"].isna().sum() == 19
    bad = tmp_path / "bad_human.csv"
    bad.write_text("item_id,human\nq0,A\nq1,C3\n")
    with pytest.raises(InputError, match="line 3"):
        attach_human(pairs, bad)


def test_load_any_guesses_layouts(tmp_path, shared_data):
    assert len(load_any(_write_labels(tmp_path / "judge_labels.csv"))) == 20
    assert load_any(shared_data / "pandalm").attrs["source"].startswith("PandaLM")
    assert load_any(shared_data / "llmfao", judge="gpt3").attrs["source"] == "LLMFAO, judge gpt3"
    one = load_any(shared_data / "alpaca_eval" / "annotations" / "phi-2.json.gz")
    assert set(one["model_y"]) == {"phi-2"}
    with pytest.raises(ValueError, match="layout"):
        load_any(tmp_path, layout="nope")
    with pytest.raises(InputError, match="--layout"):
        load_any(tmp_path)


def test_real_adapters_shapes(shared_data):
    from judge.metrics.adapters import load_alpaca, load_llmfao, load_pandalm

    pandalm = load_pandalm(shared_data / "pandalm")
    assert len(pandalm) == 999 and (pandalm["judge_xy"] == Outcome.UNPARSABLE).sum() == 25
    assert pandalm["judge_yx"].isna().all()
    llmfao = load_llmfao(shared_data / "llmfao")
    assert len(llmfao) == 2139
    votes = llmfao[[c for c in llmfao.columns if c.startswith("human_")]]
    assert int(votes.notna().sum().sum()) == 8931  # every crowd vote kept
    assert (llmfao["judge_xy"] == Outcome.SECOND).sum() == 1130 and (llmfao["judge_xy"] == Outcome.FIRST).sum() == 943
    alpaca = load_alpaca(shared_data / "alpaca_eval" / "annotations" / "alpaca-7b.json.gz")
    shown = alpaca["judge_xy"].notna() ^ alpaca["judge_yx"].notna()
    assert shown.all()  # one order per pair, from AlpacaEval's seeded coin
    ann = pd.read_json(shared_data / "alpaca_eval" / "annotations" / "alpaca-7b.json.gz")
    assert len(alpaca) == len(ann)
