"""Issue 14, large inputs: the fast (Arrow) and the chunked line-by-line JSONL readers give the same battles."""

from __future__ import annotations

import json

import pandas as pd

from arena.io import battles as data
from tests.preflab import bad_cases as bc


def _frame(b) -> pd.DataFrame:
    df = b.df.copy()
    for col in df.columns:
        if isinstance(df[col].dtype, pd.CategoricalDtype) or str(df[col].dtype) == "string":
            df[col] = df[col].astype(object)
    return df


def test_fast_reader_and_chunked_line_reader_agree(tmp_path, monkeypatch):
    recs = bc.battles(23)
    for i, r in enumerate(recs):
        r["judge"] = f"voter-{i % 3}"
        r["conv_metadata"] = {"sum_assistant_a_tokens": 10 + i, "header_count_a": {"h1": i % 2, "h2": 1}}
        del r["sum_assistant_a_tokens"], r["header_count_a"]
    path = tmp_path / "b.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert data._read_jsonl_arrow(path) is not None  # this file takes the fast path
    fast = data.load_battles(path)
    monkeypatch.setattr(data, "_read_jsonl_arrow", lambda p, lean=None: None)
    monkeypatch.setattr(data, "CHUNK_ROWS", 5)  # 5 chunks, categories united across them
    slow = data.load_battles(path)
    pd.testing.assert_frame_equal(_frame(fast), _frame(slow), check_dtype=False)
    assert fast.models == slow.models and list(fast.outcome) == list(slow.outcome)
    assert fast.df["header_count_a"].tolist() == [float(i % 2 + 1) for i in range(23)]


def test_blank_lines_keep_true_line_numbers(tmp_path):
    recs = bc.battles(6)
    recs[4]["winner"] = "nobody"
    path = tmp_path / "b.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in recs[:2]) + "\n\n" + "\n".join(json.dumps(r) for r in recs[2:]))
    try:
        data.load_battles(path)
    except data.InputError as e:
        assert e.line == 6 and e.field == "winner"
    else:
        raise AssertionError("unknown winner accepted")
