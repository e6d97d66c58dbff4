"""LC inputs: AlpacaEval annotation files and the generic table; bad input names file, record and field."""

from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest

from arena.lc.data import LCDataError, load_alpaca_table, load_lc_table, table_from_frame


def annotations(model: str, n: int = 4, baseline: str = "gpt4_1106_preview", start: int = 0) -> list[dict]:
    return [{"instruction": f"q{i}", "output_1": "b" * (10 + i), "generator_1": baseline,
             "output_2": "m" * (5 + 3 * i), "generator_2": model, "preference": 1.0 + (i % 3) / 2,
             "annotator": "weighted_alpaca_eval_gpt4_turbo"} for i in range(start, start + n)]


def write(path, records, gz=False):
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            json.dump(records, fh)
    else:
        path.write_text(json.dumps(records))
    return path


def test_alpaca_files_become_one_table(tmp_path):
    a = write(tmp_path / "alpha.json.gz", annotations("alpha"), gz=True)
    b = write(tmp_path / "beta.json", annotations("beta"))
    table = load_alpaca_table([a, b])
    assert sorted(table["model"].unique()) == ["alpha", "beta"]
    assert table["preference"].tolist()[:3] == [0.0, 0.5, 1.0]
    assert table["output_length"].tolist()[:2] == [5, 8]
    assert table["baseline_length"].tolist()[:2] == [10, 11]


def test_legacy_zero_preference_is_a_draw(tmp_path):
    recs = annotations("alpha")
    recs[0]["preference"] = 0
    table = load_alpaca_table([write(tmp_path / "alpha.json", recs)])
    assert table["preference"].iloc[0] == 0.5


def test_mismatched_baseline_outputs_between_files(tmp_path):
    a = write(tmp_path / "alpha.json", annotations("alpha"))
    recs = annotations("beta")
    recs[2]["output_1"] = "different baseline answer"
    b = write(tmp_path / "beta.json", recs)
    with pytest.raises(LCDataError, match=r"beta\.json, record 3: field 'baseline output'.*alpha\.json, record 3"):
        load_alpaca_table([a, b])


def test_files_with_no_common_instruction(tmp_path):
    a = write(tmp_path / "alpha.json", annotations("alpha"))
    b = write(tmp_path / "beta.json", annotations("beta", start=10))
    with pytest.raises(LCDataError, match=r"shares no instruction with the other files"):
        load_alpaca_table([a, b])


def test_files_against_different_baselines_and_the_baseline_option(tmp_path):
    a = write(tmp_path / "alpha.json", annotations("alpha"))
    b = write(tmp_path / "beta.json", annotations("beta", baseline="text_davinci_003"))
    with pytest.raises(LCDataError, match=r"judged against baseline .* pass --baseline NAME"):
        load_alpaca_table([a, b])
    assert load_alpaca_table([a, b], baseline="text_davinci_003")["model"].unique().tolist() == ["beta"]
    with pytest.raises(LCDataError, match=r"no record is judged against baseline 'nope'"):
        load_alpaca_table([a, b], baseline="nope")


def test_missing_output_text_means_missing_length(tmp_path):
    recs = annotations("alpha")
    recs[1]["output_2"] = None
    with pytest.raises(LCDataError, match=r"alpha\.json, record 2: field 'output_2': missing output text"):
        load_alpaca_table([write(tmp_path / "alpha.json", recs)])


@pytest.mark.parametrize("value", [2.5, 0.5, "oops"])
def test_alpaca_preference_outside_one_two(tmp_path, value):
    recs = annotations("alpha")
    recs[3]["preference"] = value
    with pytest.raises(LCDataError, match=r"alpha\.json, record 4: field 'preference'"):
        load_alpaca_table([write(tmp_path / "alpha.json", recs)])


def test_single_row_model(tmp_path):
    a = write(tmp_path / "alpha.json", annotations("alpha"))
    b = write(tmp_path / "beta.json", annotations("beta", n=1))
    with pytest.raises(LCDataError, match=r"beta\.json, record 1: field 'model': model 'beta' has a single row"):
        load_alpaca_table([a, b])


def test_duplicate_instruction_for_a_model(tmp_path):
    recs = annotations("alpha")
    recs.append(dict(recs[0]))
    with pytest.raises(LCDataError, match=r"record 5: field 'instruction': model 'alpha' already has a record"):
        load_alpaca_table([write(tmp_path / "alpha.json", recs)])


def generic(n: int = 3) -> pd.DataFrame:
    rows = []
    for m in ("a", "b"):
        for i in range(n):
            rows.append({"instruction": f"q{i}", "model": m, "baseline": "base", "output": "x" * (i + 3),
                         "baseline_output": "y" * (2 * i + 1), "preference": 0.25 * i})
    return pd.DataFrame(rows)


def test_generic_table_csv_and_jsonl(tmp_path):
    df = generic()
    df.to_csv(tmp_path / "t.csv", index=False)
    df.to_json(tmp_path / "t.jsonl", orient="records", lines=True)
    for name in ("t.csv", "t.jsonl"):
        table = load_lc_table(tmp_path / name)
        assert table["preference"].tolist() == df["preference"].tolist()
        assert table["output_length"].tolist() == [3, 4, 5, 3, 4, 5]


def test_generic_table_alpaca_scale_and_given_lengths():
    df = generic().drop(columns=["output", "baseline_output"])
    df["output_length"], df["baseline_length"] = 100, 50
    df["preference"] = df["preference"] + 1.0
    table = table_from_frame(df, "t.csv", scale="12")
    assert table["preference"].max() == 0.5


@pytest.mark.parametrize("value,scale", [(-0.2, "auto"), (1.3, "01"), (2.4, "auto")])
def test_generic_preference_out_of_range(value, scale):
    df = generic()
    df.loc[4, "preference"] = value
    with pytest.raises(LCDataError, match=r"t\.csv, record 5: field 'preference': value .* is outside"):
        table_from_frame(df, "t.csv", scale=scale)


def test_generic_missing_length_and_missing_columns():
    df = generic().drop(columns=["output"])
    df["output_length"] = [3, None, 5, 3, 4, 5]
    with pytest.raises(LCDataError, match=r"t\.csv, record 2: field 'output_length': missing or negative length"):
        table_from_frame(df, "t.csv")
    with pytest.raises(LCDataError, match=r"field 'baseline_output': neither 'baseline_output' nor"):
        table_from_frame(generic().drop(columns=["baseline_output"]), "t.csv")
