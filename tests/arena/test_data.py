"""The data model: every input format, lossless round trips, each bad-input case, aggregation."""

from __future__ import annotations

import gzip
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from arena.io.battles import (
    A_WINS,
    B_WINS,
    TIE,
    TIE_BOTHBAD,
    ColumnMap,
    DisconnectedGraphWarning,
    InputError,
    aggregate,
    aggregate_codes,
    comparison_components,
    load_battles,
    to_records_frame,
    warn_if_disconnected,
    write_battles,
)

RECORDS = [
    {"model_a": "alpha", "model_b": "beta", "winner": "model_a", "judge": "v1", "tstamp": 1700000000.5,
     "question_id": "q1", "category": "coding", "language": "English", "anony": True,
     "conv_metadata": {"sum_assistant_a_tokens": 120, "sum_assistant_b_tokens": 40,
                       "header_count_a": {"h1": 1, "h2": 2}, "header_count_b": {"h1": 0},
                       "list_count_a": {"ordered": 1, "unordered": 3}, "list_count_b": {"ordered": 0},
                       "bold_count_a": {"**": 4, "__": 0}, "bold_count_b": {"**": 0}}},
    {"model_a": "beta", "model_b": "gamma", "winner": "tie", "judge": "v2", "tstamp": 1700000100.0,
     "question_id": "q2", "category": "writing", "language": "German", "anony": False},
    {"model_a": "gamma", "model_b": "alpha", "winner": "tie (bothbad)", "judge": "v1", "tstamp": 1700000200.0,
     "question_id": "q3", "category": "coding", "language": "English", "anony": True},
    {"model_a": "alpha", "model_b": "gamma", "winner": "model_b", "judge": "v3", "tstamp": 1700000300.0,
     "question_id": "q4", "category": "math", "language": "English", "anony": True},
]


def write_json(path: Path, records: list[dict]) -> Path:
    path.write_text(json.dumps(records))
    return path


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture()
def arena_json(tmp_path: Path) -> Path:
    return write_json(tmp_path / "battles.json", RECORDS)


# ------------------------------------------------------------------------------------------- formats


def test_json_array_types_and_style_totals(arena_json: Path) -> None:
    b = load_battles(arena_json)
    assert len(b) == 4 and b.models == ["alpha", "beta", "gamma"]
    assert list(b.outcome) == [A_WINS, TIE, TIE_BOTHBAD, B_WINS]
    row = b.df.iloc[0]
    assert row["header_count_a"] == 3 and row["list_count_a"] == 4 and row["bold_count_a"] == 4
    assert row["sum_assistant_a_tokens"] == 120 and row["sum_assistant_b_tokens"] == 40
    assert np.isnan(b.df.iloc[1]["header_count_a"])  # no metadata -> missing, not zero
    assert b.df["anony"].tolist() == [True, False, True, True]
    assert b.skipped == ()


@pytest.mark.parametrize("name", ["b.jsonl", "b.jsonl.gz", "b.json", "b.json.gz", "b.csv", "b.parquet"])
def test_round_trip_every_format_is_lossless(arena_json: Path, tmp_path: Path, name: str) -> None:
    original = load_battles(arena_json)
    out = write_battles(original, tmp_path / name)
    again = load_battles(out)
    pd.testing.assert_frame_equal(to_records_frame(again), to_records_frame(original), check_dtype=False)
    if "json" in name:  # the written records equal the input records exactly
        opener = gzip.open if name.endswith(".gz") else open
        with opener(out, "rt") as fh:
            text = fh.read()
        records = json.loads(text) if name.startswith("b.json") and not name.startswith("b.jsonl") else [
            json.loads(line) for line in text.splitlines()]
        assert records == RECORDS


def test_dataframe_input_and_cross_format(arena_json: Path, tmp_path: Path) -> None:
    df = pd.DataFrame.from_records(RECORDS)
    from_df = load_battles(df)
    from_file = load_battles(arena_json)
    assert from_df.source == "<dataframe>"
    pd.testing.assert_frame_equal(to_records_frame(from_df), to_records_frame(from_file))
    csv = write_battles(from_file, tmp_path / "x.csv")
    back = load_battles(write_battles(load_battles(csv), tmp_path / "y.jsonl"))
    pd.testing.assert_frame_equal(to_records_frame(back), to_records_frame(from_file), check_dtype=False)


def test_column_map_for_another_layout(tmp_path: Path) -> None:
    path = tmp_path / "other.csv"
    pd.DataFrame({"first": ["x", "y"], "second": ["y", "z"], "result": ["1", "draw"], "rater": ["r1", "r2"]}).to_csv(
        path, index=False)
    cmap = ColumnMap(columns={"first": "model_a", "second": "model_b", "result": "winner", "rater": "judge"},
                     winners={"1": "model_a", "2": "model_b", "draw": "tie"})
    b = load_battles(path, layout=cmap)
    assert b.df["winner"].astype(str).tolist() == ["model_a", "tie"]
    assert b.df["judge"].tolist() == ["r1", "r2"]


def test_llmfao_layout_on_real_crowd_votes(shared_data: Path) -> None:
    b = load_battles(shared_data / "llmfao" / "crowd-comparisons.csv", layout="llmfao")
    assert len(b) == 8931 and len(b.models) == 59 and b.skipped == ()
    assert b.df["winner"].value_counts().to_dict() == {"tie": 3471, "model_a": 2911, "model_b": 2549,
                                                        "tie (bothbad)": 0}
    assert b.df["judge"].nunique() == 124


# ------------------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("index", "patch", "field", "problem"),
    [
        (2, {"winner": "model_c"}, "winner", "unknown winner label"),
        (1, {"model_b": "beta"}, "model_b", "a model battling itself"),
        (3, {"model_a": "  "}, "model_a", "empty model name"),
        (2, {"tstamp": "yesterday"}, "tstamp", "not a number"),
    ],
)
def test_bad_row_names_file_line_and_field(tmp_path: Path, index: int, patch: dict, field: str,
                                           problem: str) -> None:
    records = [dict(r) for r in RECORDS]
    records[index].update(patch)
    path = write_jsonl(tmp_path / "bad.jsonl", records)
    with pytest.raises(InputError) as info:
        load_battles(path)
    e = info.value
    assert (e.source, e.line, e.field) == (str(path), index + 1, field)
    assert str(path) in str(e) and f"line {index + 1}" in str(e) and f"'{field}'" in str(e)
    assert problem in str(e) and "on_error='skip'" in str(e)
    # the same file with skipping: exactly that row is dropped, counted and reported
    b = load_battles(path, on_error="skip")
    assert len(b) == 3 and [s.line for s in b.skipped] == [index + 1]
    assert "skipped 1 bad row" in b.skip_report() and field in b.skip_report()


def test_csv_line_numbers_count_the_header(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("model_a,model_b,winner\nx,y,model_a\nx,y,banana\n")
    with pytest.raises(InputError, match=r"bad.csv, line 3: field 'winner': unknown winner label"):
        load_battles(path)


def test_missing_column_is_named(tmp_path: Path) -> None:
    path = tmp_path / "nowinner.csv"
    path.write_text("model_a,model_b,result\nx,y,model_a\n")
    with pytest.raises(InputError, match=r"field 'winner': missing column.*found: model_a, model_b, result"):
        load_battles(path)


def test_bad_json_line_raises_or_is_counted(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    lines = [json.dumps(r) for r in RECORDS]
    lines.insert(2, '{"model_a": "alpha", "model_b": ')  # truncated line 3
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"broken.jsonl, line 3: invalid JSON line"):
        load_battles(path)
    b = load_battles(path, on_error="skip")
    assert len(b) == 4 and [(s.line, s.problem) for s in b.skipped] == [(3, "invalid JSON line")]


def test_bad_json_array_and_unknown_extension(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('[{"model_a": "x",\n "model_b": }]')
    with pytest.raises(InputError, match=r"broken.json, line 2: not valid JSON"):
        load_battles(path)
    (tmp_path / "x.txt").write_text("model_a,model_b,winner\n")
    with pytest.raises(InputError, match="unknown file type '.txt'"):
        load_battles(tmp_path / "x.txt")
    with pytest.raises(InputError, match="file not found"):
        load_battles(tmp_path / "absent.jsonl")


def test_skip_counts_every_reason_without_silent_drops(tmp_path: Path) -> None:
    records = [dict(r) for r in RECORDS] + [
        {"model_a": "x", "model_b": "x", "winner": "model_a"},
        {"model_a": "x", "model_b": "y", "winner": "??"},
        {"model_a": "", "model_b": "y", "winner": "tie"},
    ]
    b = load_battles(write_jsonl(tmp_path / "mixed.jsonl", records), on_error="skip")
    assert len(b) + len(b.skipped) == len(records)
    assert sorted(s.field for s in b.skipped) == ["model_a", "model_b", "winner"]


# ---------------------------------------------------------------------------------- graph and counts


def test_disconnected_graph_warning_names_components(tmp_path: Path) -> None:
    records = [{"model_a": "a", "model_b": "b", "winner": "model_a"},
               {"model_a": "c", "model_b": "d", "winner": "tie"},
               {"model_a": "d", "model_b": "e", "winner": "model_b"}]
    counts = aggregate(load_battles(pd.DataFrame(records)))
    assert comparison_components(counts) == [["c", "d", "e"], ["a", "b"]]
    with pytest.warns(DisconnectedGraphWarning, match=r"2 disconnected components: \{c, d, e\}; \{a, b\}"):
        warn_if_disconnected(counts)
    connected = aggregate(load_battles(pd.DataFrame(records + [{"model_a": "b", "model_b": "c",
                                                               "winner": "tie"}])))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(warn_if_disconnected(connected)) == 1


def test_aggregate_matches_pandas_groupby() -> None:
    rng = np.random.default_rng(1)
    n, k = 20_000, 12
    names = [f"m{i:02d}" for i in range(k)]
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    winner = np.array(["model_a", "model_b", "tie", "tie (bothbad)"])[rng.integers(0, 4, n)]
    df = pd.DataFrame({"model_a": np.array(names)[a], "model_b": np.array(names)[b], "winner": winner})
    counts = aggregate(load_battles(df))
    got = pd.DataFrame({"model_a": np.array(counts.models)[counts.a], "model_b": np.array(counts.models)[counts.b],
                        "winner": np.array(["model_a", "model_b", "tie", "tie (bothbad)"])[counts.outcome],
                        "n": counts.count}).set_index(["model_a", "model_b", "winner"])["n"].sort_index()
    want = df.groupby(["model_a", "model_b", "winner"]).size().astype(float).sort_index()
    pd.testing.assert_series_equal(got, want, check_names=False)
    per = counts.per_model().set_index("model")
    assert per["battles"].sum() == 2 * n
    assert per.loc["m00", "wins"] == ((a == 0) & (winner == "model_a")).sum() + ((b == 0) & (winner == "model_b")).sum()


def test_aggregate_weights_and_large_model_count_path() -> None:
    a, b, o = np.array([0, 0, 1]), np.array([1, 1, 0]), np.array([A_WINS, A_WINS, TIE])
    c = aggregate_codes(a, b, o, ["p", "q"], weights=np.array([0.5, 2.0, 1.0]))
    assert sorted(zip(c.a.tolist(), c.b.tolist(), c.outcome.tolist(), c.count.tolist(), strict=True)) == [
        (0, 1, 0, 2.5), (1, 0, 2, 1.0)]
    many = [f"m{i}" for i in range(4000)]  # k*k*4 > 5e7 -> np.unique path
    c2 = aggregate_codes(np.array([3999, 3999, 5]), np.array([5, 5, 3999]), np.array([1, 1, 0]), many)
    assert sorted(zip(c2.a.tolist(), c2.b.tolist(), c2.outcome.tolist(), c2.count.tolist(), strict=True)) == [
        (5, 3999, 0, 1.0), (3999, 5, 1, 2.0)]


def test_with_df_keeps_missing_flags_and_drops_unused_models() -> None:
    records = [dict(r) for r in RECORDS]
    del records[1]["anony"]  # a missing flag must survive re-typing
    b = load_battles(pd.DataFrame(records))
    assert b.df["anony"].isna().tolist() == [False, True, False, False]
    sub = b.with_df(b.df[(b.df["model_a"] != "beta") & (b.df["model_b"] != "beta")])
    assert sub.models == ["alpha", "gamma"] and len(sub) == 2
    assert sub.df["anony"].tolist() == [True, True]
    assert b.with_df(b.df.iloc[:2]).df["anony"].isna().tolist() == [False, True]


@pytest.mark.parametrize("lean", [False, True])
def test_bad_style_value_message_same_whatever_the_chunking(tmp_path, monkeypatch, lean):
    """A flat style count out of range is quoted as a plain value: a chunk that types the column float64 gave
    ``np.float64(-3.0)``, a mix of chunks ``-3.0`` (the line reader: a blank line)."""
    import arena.io.battles
    import arena.io.readers

    rows = [{"model_a": "a", "model_b": "b", "winner": "model_a"} for _ in range(4)]
    rows[3]["header_count_a"] = -3.0
    path = tmp_path / "b.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "\n")
    messages = set()
    for rows_per_chunk in (2, 20_000):
        monkeypatch.setattr(arena.io.battles, "CHUNK_ROWS", rows_per_chunk)
        monkeypatch.setattr(arena.io.readers, "CHUNK_ROWS", rows_per_chunk)
        with pytest.raises(InputError, match="header_count_a") as e:
            load_battles(path, lean=lean)
        messages.add(str(e.value))
    assert len(messages) == 1, messages
    assert "(-3.0)" in messages.pop()


def test_error_quotes_no_numpy_scalar(tmp_path):
    path = tmp_path / "b.jsonl"
    path.write_text("".join(json.dumps({"model_a": "a", "model_b": "b", "winner": "model_a",
                                        "tstamp": -1 if i == 2 else 5}) + "\n" for i in range(4)))
    with pytest.raises(InputError, match=r"tstamp.*\(-1\)") as e:
        load_battles(path)
    assert "np." not in str(e.value)


@pytest.mark.parametrize("column", ["model_a", "bold_count_a"])
def test_a_parquet_list_where_a_value_belongs_is_an_input_error(tmp_path, column):
    """Parquet lists come back as numpy arrays: a list as a model name was a TypeError (unhashable), as a
    style count a ValueError while quoting it (both found by the reader fuzz)."""
    from preflab.errors import InputError

    row = {"model_a": "m0", "model_b": "m1", "winner": "model_a", "tstamp": 1.7e9, "bold_count_a": 0,
           "bold_count_b": 1}
    path = tmp_path / "b.parquet"
    pd.DataFrame([{**row, column: []}]).to_parquet(path)  # (pyarrow cannot mix lists and values in a column)
    with pytest.raises(InputError, match=rf"line 1: field '{column}'"):
        load_battles(path)
