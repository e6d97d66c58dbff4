"""Issue 14, memory: the chunked readers and ``load_battles(lean=True)`` give the same battles, the same errors
and the same leaderboard as the whole-file readers, on valid files in every format and on mutated ones."""

from __future__ import annotations

import json
import os
import re
import warnings
from contextlib import ExitStack
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.io import battles as data
from arena.io import json_array, lean_load, readers
from preflab.errors import InputError
from tests.preflab.test_fuzz_readers import byte_mutations, record_mutations
from tests.preflab_cli import bad_cases as bc

# Random draws (print_blob: a failure prints the line that replays it). It was derandomized while `--hypothesis-seed=5`
# drew Parquet files the reads disagreed on: a corrupt page of conv_metadata, which a slim load never reads (the
# oracle's names_unread), and a file corrupt in its pandas metadata and a page, named for one or the other
# (test_lean_load_parquet). Hunt with FUZZ_EXAMPLES=200 and --hypothesis-seed=1..20.
FUZZ = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "25")), deadline=None, database=None,
                print_blob=True, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
KEEP = lean_load.lean_plan({}).keep  # type: ignore[union-attr]


def arena_records(n: int = 23) -> list[dict]:
    """Chatbot Arena rows as the dumps hold them: nested conv_metadata (dict counts), conversation text,
    ids and extra columns that the statistics never read."""
    rng = np.random.default_rng(n)
    recs = []
    for i in range(n):
        tok, md = rng.integers(20, 900, size=2).tolist(), rng.integers(0, 6, size=5).tolist()
        r = {k: v for k, v in bc.battle(i).items() if k not in data.STYLE_COLUMNS}
        r.update(judge=f"voter-{i % 3}", question_id=f"q{i // 2}", category=["code", "math"][i % 2],
                 anony=i % 4 != 0, score=0.25 * i,
                 conversation_a=[{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": "a" * i}],
                 conv_metadata={"sum_assistant_a_tokens": tok[0], "sum_assistant_b_tokens": tok[1],
                                "header_count_a": {"h1": i % 2, "h2": 1}, "header_count_b": {"h1": md[0]},
                                "list_count_a": {"ordered": md[1]}, "list_count_b": {"ordered": md[2]},
                                "bold_count_a": {"**": md[3]}, "bold_count_b": {"**": md[4]}})
        recs.append(r)
    return recs


def _tabular(recs: list[dict]) -> pd.DataFrame:
    """Nested values as JSON text, as write_battles and other tools store them in CSV and Parquet."""
    rows = [{k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in r.items()} for r in recs]
    return pd.DataFrame(rows)


def write(recs: list[dict], path: Path) -> Path:
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    elif path.suffix == ".json":
        path.write_text(json.dumps(recs), encoding="utf-8")
    elif path.suffix == ".csv":
        _tabular(recs).to_csv(path, index=False)
    else:
        df = _tabular(recs)
        for col in df.columns:  # mixed-type columns as text, as a user's parquet would hold them
            if df[col].map(type).nunique() > 1:
                df[col] = df[col].map(lambda v: None if v is None else str(v))
        try:
            df.to_parquet(path, index=False, row_group_size=7)
        except Exception:  # noqa: BLE001  (a frame pyarrow cannot write is not an input we can build)
            df.astype(str).to_parquet(path, index=False, row_group_size=7)
    return path


def whole_file_readers() -> ExitStack:
    """The readers as they were before chunking: every chunked reader declines."""
    stack = ExitStack()
    stack.enter_context(mock.patch.object(readers, "read_csv_chunks", lambda p, lean: None))
    stack.enter_context(mock.patch.object(readers, "read_parquet_batches", lambda p, lean: None))
    stack.enter_context(mock.patch.object(json_array, "read_json_array", lambda p, lean: None))
    return stack


def small_chunks() -> ExitStack:
    stack = ExitStack()
    stack.enter_context(mock.patch.object(readers, "CHUNK_ROWS", 4))
    stack.enter_context(mock.patch.object(readers, "PARQUET_BATCH_BYTES", 1))
    stack.enter_context(mock.patch.object(data, "CHUNK_ROWS", 4))
    stack.enter_context(mock.patch.object(json_array, "BLOCK_BYTES", 300))  # an array's records, a few per block
    return stack


def outcome(path: Path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return data.load_battles(path, **kw)
        except InputError as e:
            return str(e)


def lean_view(b: data.Battles, need=None) -> pd.DataFrame:
    keep = lean_load.lean_plan({}, (), need).keep  # type: ignore[union-attr]
    return b.df.drop(columns=[c for c in b.df.columns if c != "line" and c not in keep])


def assert_same(a, b, lean_b: bool = False, need=None) -> None:
    """Both the same InputError message, or the same battles (``b`` cut to the lean columns if asked)."""
    assert type(a) is type(b), (a, b)
    if isinstance(a, str):
        assert a == b
        return
    if lean_b:  # a lean frame numbers lines as int32: the same numbers
        assert a.df["line"].dtype in (np.int32, np.int64)
        a, b = (data.Battles(x.df.astype({"line": np.int64}), x.source, x.skipped) for x in (a, b))
    pd.testing.assert_frame_equal(a.df, lean_view(b, need) if lean_b else b.df, check_exact=True)
    assert a.skipped == b.skipped and a.source == b.source


FORMATS = ["b.jsonl", "b.json", "b.csv", "b.parquet"]


@pytest.mark.parametrize("name", FORMATS)
def test_valid_files_same_battles_in_every_reader(tmp_path, name):
    path = write(arena_records(), tmp_path / name)
    with whole_file_readers():
        before = outcome(path)
    with small_chunks():  # 6 chunks: categories united, style totals decided for the whole file
        full, lean = outcome(path), outcome(path, lean=True)
        slim, styled = outcome(path, lean=True, need=()), outcome(path, lean=True, need=data.STYLE_COLUMNS)
    assert isinstance(before, data.Battles), before
    assert_same(full, before)
    assert_same(lean, before, lean_b=True)
    assert_same(slim, before, lean_b=True, need=())
    assert_same(styled, before, lean_b=True, need=data.STYLE_COLUMNS)
    assert list(slim.df.columns) == ["model_a", "model_b", "winner", "line"]
    assert "conv_metadata" not in lean.df and "conversation_a" not in lean.df and "score" not in lean.df
    assert lean.df["header_count_a"].tolist() == [float(i % 2 + 1) for i in range(23)]
    assert not any(lean.df[c].dtype == object for c in lean.df.columns)  # no per-row Python objects kept


def test_lean_keeps_asked_for_columns_and_layouts(tmp_path):
    recs = [{"left": r["model_a"], "right": r["model_b"], "winner": {"model_a": "left", "model_b": "right"}.get(
        r["winner"], r["winner"]), "worker": r["judge"], "prompt": r["question_id"], "note": "x"}
            for r in arena_records()]
    for name in FORMATS:
        path = write(recs, tmp_path / name)
        full, lean = outcome(path, layout="llmfao"), outcome(path, layout="llmfao", lean=True)
        assert_same(lean, full, lean_b=True)
        assert list(lean.df.columns) == ["model_a", "model_b", "winner", "judge", "question_id", "line"]
    path = write(arena_records(), tmp_path / "k.csv")
    kept = outcome(path, lean=True, keep=("conversation_a",))
    assert "conversation_a" in kept.df and "score" not in kept.df


def test_flat_style_columns_win_over_conv_metadata_for_the_whole_file(tmp_path):
    """A flat style column anywhere in the file is used as is (NaN where absent), never refilled per chunk."""
    recs = arena_records()
    recs[21]["header_count_a"] = 9  # only in the last chunk
    path = write(recs, tmp_path / "b.jsonl")
    path.write_text(path.read_text().replace("\n", "\n\n", 1))  # a blank line: the line-by-line reader
    with small_chunks():
        full, lean = outcome(path), outcome(path, lean=True)
    assert_same(lean, full, lean_b=True)
    assert np.isnan(lean.df["header_count_a"].iloc[0]) and lean.df["header_count_a"].iloc[21] == 9


def test_rank_is_identical_on_lean_and_full_loads(tmp_path):
    from arena.leaderboard import fit_leaderboard
    from arena.leaderboard_options import IntervalOptions

    recs = arena_records(60)
    for name in FORMATS:
        path = write(recs, tmp_path / name)
        with whole_file_readers():
            before = data.load_battles(path)
        lean = data.load_battles(path, lean=True)
        for style in (False, True):
            a = fit_leaderboard(before, IntervalOptions(n_bootstrap=20, seed=1), style_control=style).table
            b = fit_leaderboard(lean, IntervalOptions(n_bootstrap=20, seed=1), style_control=style).table
            pd.testing.assert_frame_equal(a, b, check_exact=True)


def test_cli_info_and_rank_load_lean(tmp_path, monkeypatch):
    """The commands that only count and fit ask for the lean load (style control keeps conversation text)."""
    from preflab_cli import main

    seen = []
    real = data.load_battles

    def spy(path, **kw):
        seen.append((kw.get("lean"), tuple(kw.get("keep", ()))))
        return real(path, **kw)

    monkeypatch.setattr(data, "load_battles", spy)
    path = write(arena_records(300), tmp_path / "b.jsonl")
    for argv in (["info", str(path)], ["rank", str(path), "--bootstrap", "5"],
                 ["rank", str(path), "--bootstrap", "5", "--style-control"]):
        with pytest.raises(SystemExit) as done:
            main(argv)
        assert done.value.code in (0, None)
    assert [lean for lean, _ in seen] == [True, True, True]
    assert "conversation_a" not in seen[1][1] and "conversation_a" in seen[2][1]


@pytest.mark.parametrize("name", FORMATS)
def test_mutated_files_same_outcome_lean_full_and_whole_file(name, tmp_path_factory):
    """Hypothesis: on a mutated file the chunked, lean and whole-file reads give the same error message or
    the same battles, raising and skipping."""

    @FUZZ
    @given(st.data())
    def check(draws):
        tmp = tmp_path_factory.mktemp("lean")
        path = write(draws.draw(record_mutations(arena_records(9)), label="records"), tmp / name)
        path.write_bytes(draws.draw(byte_mutations(path.read_bytes()), label="bytes"))
        for on_error in ("raise", "skip"):
            with whole_file_readers():
                before = outcome(path, on_error=on_error)
            with small_chunks():
                full, lean = outcome(path, on_error=on_error), outcome(path, on_error=on_error, lean=True)
                slim = outcome(path, on_error=on_error, lean=True, need=())
            whole_lean, whole_slim = lean, slim  # JSON: no whole-file reader of its own
            if name != "b.jsonl":  # chunked CSV/Parquet and the streamed JSON array: the whole-file read's
                assert_same(full, before)
            if name.endswith((".csv", ".parquet")):
                with whole_file_readers():  # the full read restricted to the lean columns: the lean load's fallback
                    whole_lean = outcome(path, on_error=on_error, lean=True)
                    whole_slim = outcome(path, on_error=on_error, lean=True, need=())
            assert_same_lean(lean, full, whole_lean, path=path)
            assert_same_lean(slim, full, whole_slim, need=(), path=path)

    check()


def names_unread(full, need=None, path: Path | None = None) -> bool:
    """Whether a full load's error or skipped rows may come from a column a lean load with ``need`` drops (its
    text is never read: a bad byte there is no error of the lean load). A corrupt Parquet page names no column:
    it is in one the lean load drops when the file reads without that column (``conv_metadata``, unread when no
    style total is kept: the slim load of a seed-5 draw whose only corrupt page was there)."""
    plan = lean_load.lean_plan({}, (), need)
    keep = plan.keep  # type: ignore[union-attr]
    if isinstance(full, str):
        field = re.search(r"field '([^']*)'", full)
        if field:
            return field.group(1) not in keep
        if "not a readable Parquet file" in full and path is not None and not plan.reads_metadata:  # type: ignore
            return _reads_without(path, "conv_metadata")
        return "no valid battles" in full
    return any(s.field not in keep for s in full.skipped)


def _reads_without(path: Path, column: str) -> bool:
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(path).names
        pq.read_table(path, columns=[n for n in names if n != column]).to_pandas()
    except Exception:  # noqa: BLE001  (unreadable without it too)
        return False
    return column in names


def assert_same_lean(lean, full, whole, need=None, path: Path | None = None) -> None:
    """A lean load is the whole-file read restricted to its columns, and the full load unless that names a
    column the lean load drops."""
    assert_same(lean, whole, lean_b=True, need=need)
    if not names_unread(full, need, path):
        assert_same(lean, full, lean_b=True, need=need)


@pytest.mark.parametrize("name", FORMATS)
def test_columns_left_out_are_still_checked(tmp_path, name):
    """``need=()`` drops tstamp and the style totals, but a bad value in tstamp or a flat style column (in the last
    chunk) is still the full load's error, or skipped row; and the leaderboard of a slim load is the full load's.
    A CSV's or Parquet file's ``conv_metadata`` is not read at all when no style total is kept (issue 37: most of
    a Parquet read's time): a bad cell there leaves the slim load equal to the full load of the file without the
    column; so does a JSON array's, streamed (a JSONL file's records are parsed whole: its reader still reports it).
    """
    from arena.leaderboard import fit_leaderboard
    from arena.leaderboard_options import IntervalOptions

    mutations = {"tstamp": lambda r: r.update(tstamp="soon"),
                 "style": lambda r: r["conv_metadata"].update(header_count_a={"h1": "many"}),
                 "flat": lambda r: r.update(bold_count_b=-3),
                 "json": lambda r: r.update(conv_metadata="{not json")}
    for what, mutate in mutations.items():
        recs = arena_records()
        mutate(recs[21])
        path = write(recs, tmp_path / f"{what}-{name}")
        for on_error in ("raise", "skip"):
            with small_chunks():
                full, slim = outcome(path, on_error=on_error), outcome(path, on_error=on_error, lean=True, need=())
            if what in ("style", "json") and name.endswith((".csv", ".parquet")) or (what, name) == ("style", "b.json"):
                bare = write([{k: v for k, v in r.items() if k != "conv_metadata"} for r in recs],
                             tmp_path / f"bare-{what}-{name}")
                with small_chunks():
                    ref = outcome(bare, on_error=on_error)
                assert not isinstance(slim, str), slim
                assert_same(slim, data.Battles(ref.df, slim.source, ref.skipped), lean_b=True, need=())
                continue
            assert_same(slim, full, lean_b=True, need=())
            tabular = name.endswith((".csv", ".parquet"))  # JSON: a string is no metadata; bad JSON text always raises
            assert isinstance(full, str) == (on_error == "raise" and (what != "json" or tabular)
                                             or what == "json" and tabular), full
    path = write(arena_records(60), tmp_path / name)
    with whole_file_readers():
        before = data.load_battles(path)
    slim = data.load_battles(path, lean=True, need=())
    a = fit_leaderboard(before, IntervalOptions(n_bootstrap=20, seed=1)).table
    pd.testing.assert_frame_equal(a, fit_leaderboard(slim, IntervalOptions(n_bootstrap=20, seed=1)).table,
                                  check_exact=True)


def test_a_json_arrays_streamed_full_read_has_the_whole_parses_text_dtypes(tmp_path):
    """The stream gave Arrow's dictionaries (categoricals) where the whole-file parse gives ``str`` (a fuzz draw:
    ``conversation_a`` of empty strings)."""
    recs = [{"model_a": f"m{i % 3}", "model_b": f"m{(i + 1) % 3}", "winner": "model_a", "judge": "voter-0",
             "conversation_a": ""} for i in range(9)]
    path = write(recs, tmp_path / "b.json")
    with whole_file_readers():
        before = outcome(path)
    with small_chunks():
        assert_same(outcome(path), before)
