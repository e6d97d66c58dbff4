"""Issue 37, item 3: a JSON array of battles (Chatbot Arena's ``clean_battle_*.json``) is read as a stream, a
block of records at a time, to the same frame as the whole-file parse, in a fraction of its memory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from arena.io import battles as data
from arena.io import json_array

WHOLE = "arena.io.json_array.read_json_array = lambda p, lean=None: None\n"
# Peak RSS from VmHWM (reset by exec), not ru_maxrss: that one keeps the forking parent's peak across exec, so a
# large pytest process (a long suite) hid the child's growth (both reads measured 0 MB).
PEAK = """
import sys
from pathlib import Path
{patch}
from arena.io import battles
def hwm():
    return next(int(v.split()[1]) for v in open("/proc/self/status") if v.startswith("VmHWM:"))
before = hwm()
b = battles.load_battles(Path(sys.argv[1]), lean={lean})
print(len(b), (hwm() - before) / 1024)
"""


def arena_array(n: int, seed: int = 0) -> list[dict]:
    """Battles in Chatbot Arena's layout: nested ``conv_metadata``, text with commas, brackets and escaped quotes."""
    rng = np.random.default_rng(seed)
    models = [f"model-{i}" for i in range(40)] + ['odd, "quoted" [model] \\ {x}']
    a, b = rng.integers(0, len(models), n), rng.integers(0, len(models) - 1, n)
    b = np.where(b >= a, b + 1, b)
    winners = np.array(["model_a", "model_b", "tie", "tie (bothbad)"])[rng.integers(0, 4, n)]
    return [{"question_id": f"q{i}", "model_a": models[a[i]], "model_b": models[b[i]], "winner": str(winners[i]),
             "judge": f"arena_user_{i % 97}", "turn": 1, "anony": True, "language": "English",
             "tstamp": 1.7e9 + i, "conv_metadata": {
                 "sum_user_tokens": int(i % 50), "sum_assistant_a_tokens": int(i % 300) + 1,
                 "sum_assistant_b_tokens": int(i % 211) + 2, "context_a_tokens": 3, "context_b_tokens": 4,
                 "header_count_a": {"h1": i % 2, "h2": 0, "h3": 1, "h4": 0, "h5": 0, "h6": 0},
                 "header_count_b": {"h1": 0, "h2": 1, "h3": 0, "h4": 0, "h5": 0, "h6": 0},
                 "list_count_a": {"ordered": 1, "unordered": i % 3}, "list_count_b": {"ordered": 0, "unordered": 2},
                 "bold_count_a": {"**": i % 4, "__": 0}, "bold_count_b": {"**": 1, "__": 0}}}
            for i in range(n)]


def _plain(b: data.Battles) -> pd.DataFrame:
    df = b.df.copy()
    for col in df.columns:
        if isinstance(df[col].dtype, pd.CategoricalDtype):
            df[col] = df[col].astype(object)
    return df.astype({"line": np.int64})


def _streamed_loads(path, monkeypatch) -> list:  # noqa: ANN001
    """Every kind of load of ``path`` (full, lean, lean with no or the style columns) read in 4 KiB blocks."""
    monkeypatch.setattr(json_array, "BLOCK_BYTES", 4096)
    loads = ({}, {"lean": True}, {"lean": True, "need": ()}, {"lean": True, "need": data.STYLE_COLUMNS})
    return [(kw, data.load_battles(path, **kw)) for kw in loads]


def _same_as_the_whole_file_read(path, monkeypatch, streamed: list) -> None:  # noqa: ANN001
    monkeypatch.setattr(json_array, "read_json_array", lambda p, lean=None: None)
    for kw, got in streamed:
        whole = data.load_battles(path, **kw)
        pd.testing.assert_frame_equal(_plain(got), _plain(whole), check_exact=True)
        assert got.models == whole.models and got.skipped == whole.skipped


@pytest.mark.parametrize("indent", [None, 1])
def test_streamed_blocks_give_the_whole_file_frame(tmp_path, monkeypatch, indent):
    path = tmp_path / "clean_battle.json"
    path.write_text(json.dumps(arena_array(500), indent=indent), encoding="utf-8")
    blocks = list(json_array.record_lines(path, 4096))
    assert len(blocks) > 20 and sum(n for _, n in blocks) == 500  # read in bounded blocks, every record once
    assert max(len(text) for text, _ in blocks) < 4096 + 2000  # a block plus at most one record
    streamed = _streamed_loads(path, monkeypatch)
    _same_as_the_whole_file_read(path, monkeypatch, streamed)


def test_unusual_arrays_fall_back_to_the_whole_file_reader(tmp_path):
    recs = arena_array(5)
    cases = {"trailing text": json.dumps(recs) + " []", "a number record": json.dumps([*recs, 3]),
             "trailing comma": json.dumps(recs)[:-1] + ",]", "unterminated": json.dumps(recs)[:-1],
             "NaN": json.dumps([*recs, {**recs[0], "tstamp": float("nan")}]), "empty": "[]",
             "mixed types": json.dumps([*recs, {**recs[0], "turn": "one"}])}
    for what, text in cases.items():
        path = tmp_path / "b.json"
        path.write_text(text, encoding="utf-8")
        assert json_array.read_json_array(path, None, 64) is None, what
    path.write_bytes(json.dumps(recs).encode()[:-40] + b"\xff" + json.dumps(recs).encode()[-40:])
    assert json_array.read_json_array(path) is None


@pytest.mark.slow
def test_peak_memory_well_below_the_whole_file_parse(tmp_path):
    """200,000 battles with ``conv_metadata``: the streamed lean read (what ``rank`` does) grows the process by
    less than two thirds of what parsing the array whole did (peak RSS growth past the imports)."""
    path = tmp_path / "clean_battle_200k.json"
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(arena_array(200_000), fh)
    root = Path(__file__).resolve().parents[2]

    def grown(patch: str) -> float:
        out = subprocess.run([sys.executable, "-c", PEAK.format(patch=patch, lean=True), str(path)], cwd=root,
                             capture_output=True, text=True, check=True).stdout.split()
        assert out[0] == "200000"
        return float(out[1])

    streamed, whole = grown(""), grown("import arena.io.json_array\n" + WHOLE)
    assert whole > 80 and streamed < whole / 1.5, (streamed, whole)  # measured by VmHWM: 333 vs 602 MB


@pytest.mark.parametrize("indent", [1, 2, "\t"])
def test_indented_arrays_are_cut_at_their_record_ends_without_a_full_scan(tmp_path, monkeypatch, indent):
    """``json.dump(..., indent=N)`` (Chatbot Arena's files): records end with a line break, the records' indent
    and ``},``. Blocks are cut there (only the last block is scanned quote by quote, to find the array's end)
    and give the frame of the whole-file parse; names holding ``\\n },`` (escaped in the text) change nothing."""
    recs = arena_array(400)
    for i in range(0, 400, 7):
        recs[i]["model_a"] = 'odd\n },{"x": ['  # as JSON text: odd\\n },{\\"x\\": [
    path = tmp_path / "clean_battle.json"
    path.write_text(json.dumps(recs, indent=indent), encoding="utf-8")
    scanned, reads = [], []
    top_level, record_lines = json_array._top_level, json_array.record_lines
    monkeypatch.setattr(json_array, "_top_level", lambda text: scanned.append(len(text)) or top_level(text))
    monkeypatch.setattr(json_array, "record_lines", lambda *a: reads.append(a) or record_lines(*a))
    blocks = list(json_array.record_lines(path, 4096))
    assert len(blocks) > 20 and sum(n for _, n in blocks) == 400 and len(scanned) == 1
    streamed = _streamed_loads(path, monkeypatch)
    assert len(scanned) == len(reads) >= 5  # one scan a read: its last block
    _same_as_the_whole_file_read(path, monkeypatch, streamed)


def test_record_ends_inside_a_record_fall_back_to_the_whole_file_reader(tmp_path):
    """A hand-indented array whose nested object also closes at the records' indent: the cut there leaves a
    text that is not a sequence of whole records, so the whole-file reader reads it (the same battles)."""
    text = json.dumps(arena_array(60), indent=1)
    nested = '\n  "extra": {"x": 1\n },\n  "conv_metadata": {'
    for at in (0, len(text) // 2):
        path = tmp_path / "b.json"
        path.write_text(text[:at] + text[at:].replace('\n  "conv_metadata": {', nested, 1), encoding="utf-8")
        assert json_array.read_json_array(path, None, 512) is None
        assert len(data.load_battles(path)) == 60


def test_utf8_is_checked_across_blocks_that_skip_decoding(tmp_path):
    """ASCII blocks are not decoded, unless a sequence from the block before is pending: a lone lead byte at a
    block's end, then ASCII, is still bad UTF-8 (the whole read names it), and text split inside a character
    reads as the whole parse."""
    text = json.dumps(arena_array(3)).encode()
    path = tmp_path / "b.json"
    for at in range(60, 70):  # the lead byte at, or near, the end of the first 64-byte block
        path.write_bytes(text[:at] + b"\xc3" + text[at:])
        assert json_array.read_json_array(path, None, 64) is None, at
    recs = arena_array(30)
    for r in recs[::3]:
        r["model_a"] = "modèle-ü"
    path.write_text(json.dumps(recs, ensure_ascii=False, indent=1), encoding="utf-8")
    got = json_array.read_json_array(path, None, 61)
    assert got is not None and (got["model_a"] == [r["model_a"] for r in recs]).all()


@pytest.mark.parametrize("indent", [None, 1])
def test_a_raw_line_break_inside_a_string_is_refused_as_by_the_whole_file_reader(tmp_path, monkeypatch, indent):
    """JSON text never holds a raw line break inside a string: blocks keep their line breaks, so Arrow's
    parse refuses one and the whole-file reader names it (the streamed read made it a space and read on)."""
    text = json.dumps(arena_array(60), indent=indent).replace('"model-', '"model\n },-', 1)
    path = tmp_path / "b.json"
    path.write_text(text, encoding="utf-8")
    for block in (512, json_array.BLOCK_BYTES):
        assert json_array.read_json_array(path, None, block) is None
        monkeypatch.setattr(json_array, "BLOCK_BYTES", block)
        with pytest.raises(ValueError, match="b.json, line .*not valid JSON"):
            data.load_battles(path)
