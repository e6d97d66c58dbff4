"""Issue 37: the command line's messages speak its own words. Hints name flags (``--columns``,
``--winner-map``, ``--skip-bad-rows``), not Python arguments (``layout=ColumnMap(...)``, ``on_error='skip'``,
``fmt=``); a mistyped column or model gets "did you mean"; a folder, an unknown model to exclude and a
mistyped ``--db`` are errors (exit 2), never a silent success."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.preflab_cli.bad_cases import DEMO, Case, b, battles, jsonl, run_case

PYTHON_WORDS = ("ColumnMap", "on_error", "fmt=", "layout=", "exclude_models")


def run(tmp_path: Path, filename: str, content: str, *argv: str):
    return run_case(Case("case", filename, b(content), argv), tmp_path)


def one_error(res) -> str:  # noqa: ANN001
    assert res.code == 2, (res.code, res.err, res.out)
    lines = [line for line in res.err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in res.err, res.err
    assert not any(w in lines[0] for w in PYTHON_WORDS), lines[0]
    return lines[0]


def test_a_misspelt_column_gets_did_you_mean_and_the_columns_flag(tmp_path):
    # before: "... rename the columns or pass layout=ColumnMap(columns={...})", no suggestion
    text = one_error(run(tmp_path, "b.csv", "Model_A,model_b,winner\nx,y,model_a\n", "info", "{f}"))
    assert "missing column(s) ['model_a'] (did you mean 'Model_A'?)" in text
    assert text.endswith("rename the columns or pass --columns Model_A=model_a")
    ok = run(tmp_path, "b.csv", "Model_A,model_b,winner\nx,y,model_a\n", "info", "{f}", "--columns", "Model_A=model_a")
    assert ok.code == 0 and "1 battles, 2 models" in ok.out


def test_other_winner_labels_are_mapped_with_winner_map(tmp_path):
    # before: "... or map labels with a ColumnMap; or load with on_error='skip' ..." and no option to do it
    content = "model_a,model_b,winner\nx,y,draw\nx,y,A\ny,x,B\n"
    text = one_error(run(tmp_path, "b.csv", content, "info", "{f}"))
    assert "unknown winner label ('draw')" in text
    assert "map labels with --winner-map draw=tie,A=model_a,B=model_b; or pass --skip-bad-rows" in text
    ok = run(tmp_path, "b.csv", content, "info", "{f}", "--winner-map", "draw=tie,A=model_a",
             "--winner-map", "B=model_b")
    assert ok.code == 0 and "outcomes: model_a 1, model_b 1, tie 1" in ok.out, ok.out + ok.err
    bad = one_error(run(tmp_path, "b.csv", content, "info", "{f}", "--winner-map", "draw=drawn"))
    assert "'--winner-map': 'drawn' is not a winner label" in bad


def test_a_folder_is_named_as_a_folder_with_a_file_to_pass(tmp_path):
    # before: "data/demo: unknown file type 'demo'. use .json, .jsonl, .csv or .parquet, or pass fmt="
    res = run_case(Case("folder", "x.txt", b(""), ("info", str(DEMO))), tmp_path)
    text = one_error(res)
    assert f"{DEMO}: is a folder, not a battles file. pass one file inside it, e.g. {DEMO / 'battles.jsonl'}" in text
    text = one_error(run(tmp_path, "battles.txt", "", "info", "{f}"))
    assert "unknown file type '.txt'" in text and "rename the file" in text


def test_excluding_a_model_not_in_the_data_is_an_error_with_did_you_mean(tmp_path):
    # before: exit 0, "exclude models: removed 0 of 1500 battles (...; not in the data: comet-slopy)", still ranked
    res = run_case(Case("exclude", "x.txt", b(""), ("rank", str(DEMO / "battles.jsonl"), "--bootstrap", "2",
                                                     "--filter", "exclude=comet-slopy")), tmp_path)
    text = one_error(res)
    assert "no model named 'comet-slopy' to exclude in the data (did you mean 'comet-sloppy'?)" in text
    assert "comet-sloppy" not in res.out  # no table printed


def test_export_votes_refuses_a_store_that_does_not_exist(tmp_path):
    # before: a typo created an empty dmeo.db and exported 0 votes
    url = f"sqlite:///{tmp_path / 'dmeo.db'}"
    res = run_case(Case("db", "x.txt", b(""), ("export-votes", "{d}/v.csv", "--as", "votes", "--db", url)), tmp_path)
    text = one_error(res)
    assert f"{url}: field '--db': no store there: the file {tmp_path / 'dmeo.db'} does not exist" in text
    assert not (tmp_path / "dmeo.db").exists() and not (tmp_path / "v.csv").exists()


@pytest.mark.parametrize("words", [
    ("rename the columns or pass layout=ColumnMap(columns={...})", "rename the columns or pass --columns "
     "FILE_COLUMN=model_a"),
    ("fix the line or load with on_error='skip'", "fix the line or pass --skip-bad-rows"),
    ("map with ColumnMap(winners={'tie (bothbad)x': 'tie'})", "map with --winner-map 'tie (bothbad)x=tie'"),
])
def test_cli_words_translates_library_arguments(words):
    from preflab_cli.common import cli_words

    assert cli_words(words[0]) == words[1]


def test_the_demo_battles_still_read(tmp_path):
    res = run(tmp_path, "battles.jsonl", jsonl(battles()), "info", "{f}")
    assert res.code == 0, res.err
