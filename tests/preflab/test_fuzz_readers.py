"""Issue 14: mutated valid files fed to every reader; the only allowed outcomes are a result or InputError.

Mutations (Hypothesis): a field's value swapped for another JSON type, NaN/±Infinity, huge numbers and strings,
empty fields, dropped fields; then the serialised bytes truncated, bytes flipped or overwritten, and the text
re-encoded (latin-1, UTF-16, BOM). Bounded: the whole file runs in well under a minute.
"""

from __future__ import annotations

import io
import json
import os
import warnings
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from preflab.errors import InputError
from tests.preflab_cli import bad_cases as bc

# FUZZ_EXAMPLES=500 for a longer hunt; the default keeps `make test` fast.
FUZZ = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "25")), deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

WEIRD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.just(""), st.just("   "),
    st.floats(allow_nan=True, allow_infinity=True), st.just(1e308), st.just(-1e308),
    st.text(max_size=20), st.just("x" * 5000), st.just({"nested": [1, {"a": None}]}), st.just([1, "two", None]),
    st.just({}), st.just([]), st.just("caf\xe9"), st.just("\x00"),
)


def _items() -> list[dict]:
    return [{"item_id": f"i{i}", "prompt": f"p{i}", "model": m, "answer": f"{m} says {i}"}
            for i in range(4) for m in ("a", "b")]


def _pairs() -> list[dict]:
    return [{"item_id": f"i{i}", "prompt": "p", "model_x": "a", "answer_x": "x", "model_y": "b", "answer_y": "y"}
            for i in range(5)]


def _labels() -> list[dict]:
    return [{"item_id": f"demo-00{i}", "verdict_ab": "AB"[i % 2], "verdict_ba": ["A", "B", "tie"][i % 3],
             "human": "BA"[i % 2]} for i in range(1, 8)]


def _human_labels() -> list[dict]:
    """Labels for the judged pairs of :func:`bc.write_verdicts`, by (item, model pair)."""
    pairs = {(r["item_id"], r["model_x"], r["model_y"]) for r in bc.verdict_lines()}
    return [{"item_id": i, "model_a": x, "model_b": y, "human": "AB"[k % 2]}
            for k, (i, x, y) in enumerate(sorted(pairs))]


def _answers() -> list[dict]:
    return [{"uid": f"u{u}", "model": m, "metadata": {"token_len": 10 + u, "header_count": {"h1": 1},
                                                      "list_count": {"ordered": 0}, "bold_count": {"b": 2}}}
            for u in range(4) for m in ("alpha", "beta", "base")]


def _write_jsonl(recs, path):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs), encoding="utf-8")


def _write_json(recs, path):
    path.write_text(json.dumps(recs, ensure_ascii=False), encoding="utf-8")


def _write_csv(recs, path):
    pd.DataFrame(recs).to_csv(path, index=False)


def _write_parquet(recs, path):
    df = pd.DataFrame(recs)
    for col in df.columns:  # mixed-type columns as text, as a user's parquet would hold them
        if df[col].map(type).nunique() > 1:
            df[col] = df[col].map(lambda v: None if v is None else str(v))
    try:
        df.to_parquet(path, index=False)
    except Exception:  # noqa: BLE001  (a frame pyarrow cannot write is not an input we can build)
        df.astype(str).to_parquet(path, index=False)


def _toml(recs, path):
    rec = recs[0] if recs else {}
    lines = [f"{k} = {json.dumps(v)}" if isinstance(v, (str, int, float, bool)) and v == v and abs(float(v)
             if isinstance(v, (int, float)) else 0) != float("inf") else f"# {k} dropped" for k, v in rec.items()
             if k != "labels"]
    lines.append("[labels]")
    lines += [f"{json.dumps(k)} = {json.dumps(v)}" for k, v in (rec.get("labels") or {}).items()] \
        if isinstance(rec.get("labels"), dict) else []
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _read_battles(path: Path, tmp: Path):
    from arena.io.battles import load_battles

    out = load_battles(path)
    assert len(out) > 0
    load_battles(path, on_error="skip")


def _read_lc_alpaca(path: Path, tmp: Path):
    from arena.lc.data import load_alpaca_table

    bc.write_alpaca(tmp)
    load_alpaca_table([path, tmp / "beta.json"])


def _read_lc_table(path: Path, tmp: Path):
    from arena.lc.data import load_lc_table

    load_lc_table(path)


def _read_arena_hard(path: Path, tmp: Path):
    from arena.arenahard_files import load_arena_hard

    load_arena_hard([path])


def _read_answer_style(path: Path, tmp: Path):
    from arena.arenahard_files import load_answer_style

    load_answer_style([path])


def _read_verdicts(path: Path, tmp: Path):
    from judge.metrics.adapters import load_any

    load_any(path, "verdicts")


def _read_labels(path: Path, tmp: Path):
    from judge.metrics.adapters import load_judge_labels

    load_judge_labels(path)


def _read_human(path: Path, tmp: Path):
    from judge.metrics.adapters import load_verdicts_jsonl
    from judge.metrics.human_join import attach_human

    bc.write_verdicts(tmp)
    attach_human(load_verdicts_jsonl(tmp / "verdicts.jsonl"), path)


def _read_pairs(path: Path, tmp: Path):
    from judge.verdicts.pairs import load_pairs

    load_pairs(path)


def _read_rubric(path: Path, tmp: Path):
    from judge.verdicts.rubrics import load_rubric

    load_rubric(path)


def _read_items(path: Path, tmp: Path):
    from voting.items import load_items

    load_items(path)


def _read_jsonl(path: Path, tmp: Path):
    from preflab.io import iter_jsonl

    list(iter_jsonl(path))


RUBRIC = [{"name": "fz", "version": "1", "instruction": "Which is better? {prompt}", "labels": {"A": "A", "B": "B"}}]

# name -> (valid records, file name, writer, reader)
READERS: dict[str, tuple[Callable[[], list[dict]], str, Callable, Callable]] = {
    "battles jsonl": (lambda: bc.battles(12), "b.jsonl", _write_jsonl, _read_battles),
    "battles json": (lambda: bc.battles(12), "b.json", _write_json, _read_battles),
    "battles csv": (lambda: bc.battles(12), "b.csv", _write_csv, _read_battles),
    "battles parquet": (lambda: bc.battles(12), "b.parquet", _write_parquet, _read_battles),
    "lc alpaca": (lambda: bc.annotations("alpha"), "alpha.json", _write_json, _read_lc_alpaca),
    "lc table csv": (bc.lc_rows, "t.csv", _write_csv, _read_lc_table),
    "lc table jsonl": (bc.lc_rows, "t.jsonl", _write_jsonl, _read_lc_table),
    "arena-hard": (bc.judgments, "j.jsonl", _write_jsonl, _read_arena_hard),
    "arena-hard style": (_answers, "s.jsonl", _write_jsonl, _read_answer_style),
    "verdicts": (lambda: bc.verdict_lines(12), "v.jsonl", _write_jsonl, _read_verdicts),
    "judge labels csv": (_labels, "l.csv", _write_csv, _read_labels),
    "human labels csv": (_human_labels, "h.csv", _write_csv, _read_human),
    "human labels jsonl": (_human_labels, "h.jsonl", _write_jsonl, _read_human),
    "pairs": (_pairs, "p.jsonl", _write_jsonl, _read_pairs),
    "rubric toml": (lambda: [dict(r) for r in RUBRIC], "r.toml", _toml, _read_rubric),
    "items jsonl": (_items, "i.jsonl", _write_jsonl, _read_items),
    "items csv": (_items, "i.csv", _write_csv, _read_items),
    "iter_jsonl": (_pairs, "x.jsonl", _write_jsonl, _read_jsonl),
}


@st.composite
def record_mutations(draw, records: list[dict]) -> list[dict]:
    recs = [dict(r) for r in records]
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(recs) - 1))
        keys = sorted(recs[i])
        if not keys:
            continue
        key = draw(st.sampled_from(keys))
        op = draw(st.sampled_from(["swap", "drop", "empty", "dup", "clear-all"]))
        if op == "swap":
            recs[i][key] = draw(WEIRD_VALUES)
        elif op == "drop":
            recs[i].pop(key)
        elif op == "empty":
            recs[i][key] = draw(st.sampled_from(["", None]))
        elif op == "dup":
            recs.append(dict(recs[i]))
        else:
            for r in recs:
                r[key] = draw(WEIRD_VALUES)
    if draw(st.integers(0, 9)) == 0:
        recs = recs[: draw(st.integers(0, 1))]
    return recs


@st.composite
def byte_mutations(draw, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(draw(st.integers(0, 2))):
        op = draw(st.sampled_from(["truncate", "flip", "overwrite", "latin1", "utf16", "bom", "none"]))
        if op == "truncate" and out:
            del out[draw(st.integers(0, len(out) - 1)):]
        elif op == "flip" and out:
            i = draw(st.integers(0, len(out) - 1))
            out[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "overwrite" and out:
            i = draw(st.integers(0, len(out) - 1))
            chunk = draw(st.binary(min_size=1, max_size=16))
            out[i:i + len(chunk)] = chunk
        elif op in ("latin1", "utf16"):
            try:
                out = bytearray(bytes(out).decode("utf-8").encode("latin-1" if op == "latin1" else "utf-16"))
            except (UnicodeDecodeError, UnicodeEncodeError):
                pass
        elif op == "bom":
            out = bytearray(b"\xef\xbb\xbf") + out
    return bytes(out)


def _run(reader: str, data, tmp: Path) -> None:
    make, filename, write, read = READERS[reader]
    recs = data.draw(record_mutations(make()), label="records")
    path = tmp / filename
    write(recs, path)
    path.write_bytes(data.draw(byte_mutations(path.read_bytes()), label="bytes"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            read(path, tmp)
        except InputError:
            pass  # the one allowed failure


@pytest.mark.parametrize("reader", list(READERS))
def test_mutated_files_give_a_result_or_an_input_error(reader, tmp_path_factory):
    @FUZZ
    @given(data=st.data())
    def check(data):
        _run(reader, data, tmp_path_factory.mktemp("fz"))

    check()


def test_the_valid_base_files_load(tmp_path):
    """The fuzz starts from valid files: each reader accepts its unmutated input."""
    for reader, (make, filename, write, read) in READERS.items():
        folder = tmp_path / reader.replace(" ", "_")
        folder.mkdir()
        write(make(), folder / filename)
        read(folder / filename, folder)


def test_corrupt_bytes_are_io_errors_not_crashes():
    from preflab.io import decode_error

    data = "ok\nline two caf\xe9\n".encode("latin-1")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        err = decode_error(data, "f.csv", e)
    assert "f.csv, line 2" in str(err) and "0xe9" in str(err)
    assert io.BytesIO(data).read() == data
