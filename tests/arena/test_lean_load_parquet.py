"""Parquet damage that the lean and chunked loads report as input errors (corrupt pandas metadata, text that
is not UTF-8, broken pages), also in the columns a lean load drops; and batches sized by bytes per row."""

from __future__ import annotations

import json
from contextlib import ExitStack

import pandas as pd
import pytest

from arena.io import battles as data
from arena.io import readers
from preflab.errors import InputError
from tests.arena.test_lean_load import arena_records, small_chunks, whole_file_readers, write
from tests.preflab_cli import bad_cases as bc


def test_parquet_with_corrupt_pandas_metadata_is_an_input_error(tmp_path):
    """pyarrow raised a bare KeyError on a Parquet file whose ``pandas`` metadata lacks its columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist([{k: v for k, v in bc.battle(i).items()} for i in range(6)])
    path = tmp_path / "b.parquet"
    pq.write_table(table.replace_schema_metadata({"pandas": json.dumps({"index_columns": []})}), path)
    for lean in (False, True):
        with pytest.raises(InputError, match="not a readable Parquet file"):
            data.load_battles(path, lean=lean)


@pytest.mark.parametrize("column", ["model_a", "winner"])
def test_parquet_text_that_is_not_utf8_is_an_input_error(tmp_path, column):
    """Arrow does not check Parquet's strings: a byte that is not UTF-8 raised a bare UnicodeDecodeError when
    the names were read (found by the reader fuzz). Now the usual message, or the row skipped and counted."""
    frame = pd.DataFrame({"model_a": ["alpha", "beta"] * 3, "model_b": ["gamma"] * 6,
                          "winner": ["model_a", "tie"] * 3})
    frame.loc[3, column] = "zeta" if column == "model_a" else "model_b"  # one row holds the value to break
    frame.to_parquet(tmp_path / "ok.parquet")
    raw = bytearray((tmp_path / "ok.parquet").read_bytes())
    target = b"zeta" if column == "model_a" else b"model_b"
    raw[raw.index(target) + 1] = 0xFF
    path = tmp_path / "b.parquet"
    path.write_bytes(bytes(raw))
    for lean, need in ((False, None), (True, None), (True, ())):
        with pytest.raises(InputError, match=f"line 4: field '{column}': not valid UTF-8 text"):
            data.load_battles(path, lean=lean, need=need)
        kept = data.load_battles(path, lean=lean, need=need, on_error="skip")
        assert len(kept.df) == 5 and [(s.line, s.field) for s in kept.skipped] == [(4, column)]


@pytest.mark.parametrize("column", ["conversation_a", "judge", "conv_metadata"])
def test_parquet_other_text_that_is_not_utf8_is_an_input_error(tmp_path, column):
    """The same for every other text column: answer text under style control raised a bare UnicodeDecodeError
    (exit 2 without file, line or field); a long value is quoted around its bad byte. ``conv_metadata``, like
    its JSON, cannot be skipped."""
    long = "x" * 300 if column == "conversation_a" else ""
    frame = pd.DataFrame({"model_a": ["alpha", "beta"] * 3, "model_b": ["gamma"] * 6,
                          "winner": ["model_a", "tie"] * 3, "judge": ["j1", "j2"] * 3,
                          "conversation_a": [f"answer {i} **bold**" for i in range(6)], "conversation_b": "# b",
                          "conv_metadata": json.dumps({"sum_assistant_a_tokens": 3})})
    frame.loc[3, column] = long + "zeta" + long
    frame.to_parquet(tmp_path / "ok.parquet", compression=None)
    raw = bytearray((tmp_path / "ok.parquet").read_bytes())
    raw[raw.index(b"zeta") + 1] = 0xFF
    path = tmp_path / "b.parquet"
    path.write_bytes(bytes(raw))
    quoted = r"\(at byte 301: \.\.\.b'x{29}z\\xffta" if long else r"\(b'z\\xffta'\)"
    for lean, need in ((False, None), (True, None), (True, data.STYLE_COLUMNS)):
        keep = ("conversation_a", "conversation_b")
        if column in data.OPTIONAL_TEXT and need is not None:  # a column the command does not read
            assert len(data.load_battles(path, lean=lean, need=need, keep=keep).df) == 6
            continue
        with pytest.raises(InputError, match=f"line 4: field '{column}': not valid UTF-8 text {quoted}"):
            data.load_battles(path, lean=lean, need=need, keep=keep)
        if column == "conv_metadata":
            with pytest.raises(InputError, match="line 4: field 'conv_metadata': not valid UTF-8"):
                data.load_battles(path, lean=lean, need=need, keep=keep, on_error="skip")
        else:
            kept = data.load_battles(path, lean=lean, need=need, keep=keep, on_error="skip")
            assert len(kept.df) == 5 and [(s.line, s.field) for s in kept.skipped] == [(4, column)]
            assert kept.df[column].tolist()  # every kept value reads


def test_parquet_batches_are_sized_by_bytes_per_row(tmp_path):
    """Narrow files (names and winner) read in batches far larger than CHUNK_ROWS; files with long text per
    row keep CHUNK_ROWS-row batches, so their memory stays bounded."""
    import pyarrow.parquet as pq

    n = 200_000
    narrow = pd.DataFrame({"model_a": ["m1", "m2"] * (n // 2), "model_b": ["m2", "m3"] * (n // 2),
                           "winner": ["model_a", "tie"] * (n // 2)})
    narrow.to_parquet(tmp_path / "narrow.parquet")
    wide = narrow.iloc[:50_000].assign(conv_metadata=["x" * 400 + str(k) for k in range(50_000)])
    wide.to_parquet(tmp_path / "wide.parquet")
    assert readers.parquet_batch_rows(pq.ParquetFile(tmp_path / "narrow.parquet").metadata) > 10 * readers.CHUNK_ROWS
    assert readers.parquet_batch_rows(pq.ParquetFile(tmp_path / "wide.parquet").metadata) == readers.CHUNK_ROWS


def test_lean_load_ignores_bad_text_in_columns_it_drops_also_in_its_fallback(tmp_path):
    """Found by the fuzz: a corrupt ``conversation_a`` page (bad UTF-8 in 7 of 9 rows) made the full read skip
    7 rows that a lean read (which never reads the column) kept. The rule: a read checks the text it keeps, so
    the lean read keeps all 9, also when it falls back to the whole-file reader (here forced, and on a bad
    model name elsewhere, whose message must not turn into one about ``conversation_a``)."""
    recs = arena_records(9)
    for i in range(2, 9):
        recs[i]["conversation_a"] = [{"role": "zeta"}]
    path = tmp_path / "ok.parquet"
    write(recs, path)
    path.write_bytes(path.read_bytes().replace(b"zeta", b"z\xffta"))
    full = data.load_battles(path, on_error="skip")
    assert len(full.df) == 2 and {s.field for s in full.skipped} == {"conversation_a"}
    for whole in (False, True):
        with whole_file_readers() if whole else ExitStack():
            lean = data.load_battles(path, lean=True, on_error="skip")
            assert len(lean.df) == 9 and lean.skipped == ()
            assert len(data.load_battles(path, lean=True, keep=("conversation_a",), on_error="skip").df) == 2
    recs[5]["model_b"] = recs[5]["model_a"]
    write(recs, path)
    path.write_bytes(path.read_bytes().replace(b"zeta", b"z\xffta"))
    with pytest.raises(InputError, match="line 3: field 'conversation_a'"):
        data.load_battles(path)
    with pytest.raises(InputError, match="line 6: field 'model_b': a model battling itself"):
        data.load_battles(path, lean=True)


def test_parquet_pandas_metadata_corrupt_for_a_dropped_column_is_an_input_error(tmp_path):
    """Found by the fuzz: one flipped byte in the ``pandas`` metadata entry of ``conversation_a`` (a column the
    lean read drops) made the lean read succeed while its whole-file fallback and the full read raised."""
    import pyarrow.parquet as pq

    table = pq.read_table(write(arena_records(9), tmp_path / "ok.parquet"))
    meta = json.loads(table.schema.metadata[b"pandas"])
    entry = next(c for c in meta["columns"] if c["name"] == "conversation_a")
    entry["pandas_xype"] = entry.pop("pandas_type")
    path = tmp_path / "b.parquet"
    pq.write_table(table.replace_schema_metadata({"pandas": json.dumps(meta)}), path)
    for lean, need in ((False, None), (True, None), (True, ())):
        with pytest.raises(InputError, match="not a readable Parquet file"):
            data.load_battles(path, lean=lean, need=need)


def test_parquet_corrupt_dictionary_page_of_a_dropped_column_is_an_input_error(tmp_path):
    """Found by the fuzz: a page of ``judge`` whose indices point past its dictionary was an error of the full and
    lean reads but not of a slim one (``need=()``), which read the column as a dictionary and dropped it."""
    import pyarrow.parquet as pq

    frame = pd.DataFrame({"model_a": ["a", "b"] * 3, "model_b": ["c"] * 6, "winner": ["model_a", "tie"] * 3,
                          "judge": ["j1", "j2", "j3"] * 2})
    frame.to_parquet(tmp_path / "ok.parquet")
    raw, path = (tmp_path / "ok.parquet").read_bytes(), tmp_path / "b.parquet"
    chunk = pq.ParquetFile(tmp_path / "ok.parquet").metadata.row_group(0).column(3)  # judge's pages
    first = chunk.dictionary_page_offset or chunk.data_page_offset
    for at, bit in ((at, bit) for at in range(first, first + chunk.total_compressed_size) for bit in range(8)):
        path.write_bytes(raw[:at] + bytes([raw[at] ^ 1 << bit]) + raw[at + 1:])
        try:
            pq.read_table(path, read_dictionary=["judge"])  # one bit flipped; read, not decoded: no error yet
            pq.read_table(path)
        except Exception as e:  # noqa: BLE001
            if "dictionary bounds" in str(e):
                break
    else:
        pytest.skip("this writer's layout has no such byte")
    for lean, need in ((False, None), (True, None), (True, ())):
        with pytest.raises(InputError, match="not a readable Parquet file"):
            data.load_battles(path, lean=lean, need=need)


def test_parquet_number_column_held_as_text_that_is_not_utf8_is_an_input_error(tmp_path):
    """A style count held as text with a byte that is not UTF-8 raised a bare ArrowException ("Wrapping ...
    failed") when it was converted to numbers (found by the reader fuzz). Now the usual message, or skipped."""
    frame = pd.DataFrame({"model_a": ["alpha", "beta"] * 3, "model_b": ["gamma"] * 6,
                          "winner": ["model_a", "tie"] * 3, "bold_count_a": ["1", "2", "0", "zeta", "1", "3"]})
    frame.to_parquet(tmp_path / "ok.parquet", compression=None)
    raw = bytearray((tmp_path / "ok.parquet").read_bytes())
    raw[raw.index(b"zeta") + 1] = 0xFF
    path = tmp_path / "b.parquet"
    path.write_bytes(bytes(raw))
    for lean in (False, True):
        with pytest.raises(InputError, match="line 4: field 'bold_count_a': not valid UTF-8 text"):
            data.load_battles(path, lean=lean)
        kept = data.load_battles(path, lean=lean, on_error="skip")
        assert len(kept.df) == 5 and [(s.line, s.field) for s in kept.skipped] == [(4, "bold_count_a")]


@pytest.mark.parametrize("name", ["b.parquet", "b.csv", "b.jsonl"])
def test_conv_metadata_is_parsed_only_when_a_style_total_is_kept(tmp_path, name, monkeypatch):
    """Issue 37: a 1M-battle Parquet file with ``conv_metadata`` took 7.2 s to rank (1.9 s without the column):
    every lean load parsed it to check style totals that ``rank`` without style control never reads. Now it
    is read only when a style total is kept (style control, ``info``); the names and outcomes are the same."""
    from arena.io import lean_load
    from arena.io.battles import STYLE_COLUMNS

    path = write(arena_records(40), tmp_path / name)
    calls = []
    for module in (lean_load, readers):
        real = module.style_from_metadata
        monkeypatch.setattr(module, "style_from_metadata", lambda cells, real=real: calls.append(1) or real(cells))
    slim = data.load_battles(path, lean=True, need=())
    assert calls == [] and not set(STYLE_COLUMNS) & set(slim.df.columns)
    styled = data.load_battles(path, lean=True, need=STYLE_COLUMNS)
    assert calls and set(STYLE_COLUMNS) <= set(styled.df.columns)
    names = ["model_a", "model_b", "winner"]
    pd.testing.assert_frame_equal(slim.df[names], styled.df[names])


def short_page_file(tmp_path, metadata: dict | None = None):
    """9 battles in row groups of 7 and 2, the first data page of ``model_a`` counting 6 values, not 7."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist([bc.battle(i) for i in range(9)])
    if metadata is not None:
        table = table.replace_schema_metadata(metadata)
    pq.write_table(table, tmp_path / "ok.parquet", row_group_size=7, compression="NONE")
    raw = bytearray((tmp_path / "ok.parquet").read_bytes())
    start = pq.ParquetFile(tmp_path / "ok.parquet").metadata.row_group(0).column(0).data_page_offset
    at = raw.index(b",\x15\x0e", start) + 2  # DataPageHeader (field 5), num_values (field 1) = 7, zigzag 14
    assert at < start + 12, "not the first data page header of model_a"
    raw[at] = 0x0C  # 6 values
    path = tmp_path / "b.parquet"
    path.write_bytes(bytes(raw))
    return path


def test_parquet_page_header_short_of_its_rows_is_the_same_error_from_every_read(tmp_path):
    """Found by flipping each bit of the fuzz's Parquet file in turn: a data page header of ``model_a`` that counts
    6 values where its row group holds 7. Arrow's batches (of 4 rows) end at the shortest column, so the chunked,
    lean and slim loads silently gave 8 battles of 9, while the whole-file read (and the lean load's fallback)
    named the mismatch. Every read now gives that one message naming the file; the CLI exits 2 with it."""
    from preflab_cli import main

    path = short_page_file(tmp_path)
    messages = set()
    for readers_of in (small_chunks, ExitStack, whole_file_readers):  # batches of 4 rows, of all rows, none
        for lean, need in ((False, None), (True, None), (True, ())):
            with readers_of(), pytest.raises(InputError, match="not a readable Parquet file") as e:
                data.load_battles(path, lean=lean, need=need)
            messages.add(str(e.value))
    assert len(messages) == 1 and str(path) in messages.pop()
    with pytest.raises(SystemExit) as done:
        main(["info", str(path)])
    assert done.value.code == 2


@pytest.mark.parametrize("column", ["model_a", "judge"])
def test_parquet_dictionary_holding_a_value_twice_reads_as_written_in_every_read(tmp_path, column):
    """The seed-5 fuzz class: Arrow's ``read_dictionary`` dedups a dictionary page's values but not its indices
    (``a0 a1 a2 a3`` with ``a1`` flipped to ``a0`` reads as ``a0 a2 a3``, the last index out of bounds), while
    decoding the column reads the names as written. Every read, chunked or whole, kept (``model_a``) or dropped
    by a slim load (``judge``), gives the names as written: ``a0 a0 a2 a3``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = ["a0", "a1", "a2", "a3"] * 3
    table = pa.table({"model_a": names if column == "model_a" else ["m"] * 12, "model_b": ["b"] * 12,
                      "winner": ["model_a", "tie"] * 6, "judge": names if column == "judge" else ["j"] * 12})
    pq.write_table(table, tmp_path / "ok.parquet", compression="NONE")
    raw = bytearray((tmp_path / "ok.parquet").read_bytes())
    raw[raw.index(b"a1") + 1] = ord("0")  # the dictionary page comes first in its column chunk
    path = tmp_path / "b.parquet"
    path.write_bytes(bytes(raw))
    with pytest.raises(IndexError):  # the cause: Arrow's dictionary read, not the file
        pq.read_table(path, read_dictionary=[column]).to_pandas()
    for readers_of in (small_chunks, ExitStack, whole_file_readers):
        for lean, need in ((False, None), (True, None), (True, ())):
            with readers_of():
                got = data.load_battles(path, lean=lean, need=need)
            if column in got.df:
                assert got.df[column].astype(str).tolist() == ["a0", "a0", "a2", "a3"] * 3
            assert len(got.df) == 12


def test_parquet_corrupt_in_pandas_metadata_and_a_page_names_the_same_problem_in_every_read(tmp_path):
    """Fuzz seed 5 (200 examples): pandas read the ``pandas`` metadata before the pages when given ``columns=``
    (a slim load's whole-file read, without ``conv_metadata``) and after them otherwise, so the full and lean
    loads named the bad page and the slim load the bad metadata. The metadata is now read first by every read."""
    path = short_page_file(tmp_path, {"pandas": "{not json"})
    messages = set()
    for readers_of in (small_chunks, ExitStack, whole_file_readers):
        for lean, need in ((False, None), (True, None), (True, ())):
            with readers_of(), pytest.raises(InputError, match="not a readable Parquet file") as e:
                data.load_battles(path, lean=lean, need=need)
            messages.add(str(e.value))
    assert len(messages) == 1 and "Expecting property name" in messages.pop()
