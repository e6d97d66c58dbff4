"""CLI conventions shared by every command: ``-`` is stdout, one name per option, clean failures.

Run through the console-script entry point (:func:`preflab_cli.main`) in a subprocess, as a user would.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from preflab_cli import canonical_args

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"


def preflab(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from preflab_cli import main; main()", *args],
                          capture_output=True, cwd=cwd, timeout=600)


def test_rank_output_dash_is_csv_on_stdout_and_the_report_goes_to_stderr(tmp_path) -> None:
    res = preflab("rank", str(DEMO / "battles.jsonl"), "--bootstrap", "20", "--output", "-", cwd=tmp_path)
    assert res.returncode == 0, res.stderr.decode()
    table = pd.read_csv(io.BytesIO(res.stdout))
    assert {"model", "rating", "lower", "upper", "rank"} <= set(table.columns) and len(table) == 5
    assert not (tmp_path / "-").exists()
    assert b"wrote stdout" in res.stderr


def test_convert_and_export_votes_to_stdout(tmp_path) -> None:
    res = preflab("convert", str(DEMO / "battles.jsonl"), "-", cwd=tmp_path)
    assert res.returncode == 0, res.stderr.decode()
    rows = [json.loads(line) for line in res.stdout.decode().splitlines()]
    assert len(rows) == 1500 and {"model_a", "model_b", "winner"} <= set(rows[0])
    db = f"sqlite:///{tmp_path / 'v.db'}"
    assert preflab("demo-seed", "--db", db, cwd=tmp_path).returncode == 0
    res = preflab("export-votes", "-", "--db", db, "--as", "votes", cwd=tmp_path)
    assert res.returncode == 0, res.stderr.decode()
    assert len(pd.read_csv(io.BytesIO(res.stdout))) == 1500 and not (tmp_path / "-").exists()


def test_judge_calibrate_json_dash(tmp_path) -> None:
    res = preflab("judge", "calibrate", str(DEMO / "verdicts-smollm2.jsonl"), "--bootstrap", "50", "--json", "-",
                  cwd=tmp_path)
    assert res.returncode == 0, res.stderr.decode()
    report = json.loads(res.stdout)
    assert report["n_pairs"] > 0 and "consistency" in report and not (tmp_path / "-").exists()


def test_simulate_to_stdout_writes_no_truth_file_unless_asked(tmp_path) -> None:
    res = preflab("simulate", "--battles", "50", "-o", "-", cwd=tmp_path)
    assert res.returncode == 0, res.stderr.decode()
    assert len(res.stdout.decode().splitlines()) == 50 and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("old", "new"), [
    (["study", "coverage", "--n-bootstrap", "5"], ["study", "coverage", "--bootstrap", "5"]),
    (["simulate", "--ties-model", "none"], ["simulate", "--ties", "half"]),
    (["power", "--ties-model=rao-kupper"], ["power", "--ties=rao-kupper"]),
    (["judge", "calibrate", "x", "--n-bootstrap=7"], ["judge", "calibrate", "x", "--bootstrap=7"]),
])
def test_old_option_spellings_still_work(old, new) -> None:
    assert canonical_args(old) == new


def test_old_spelling_through_the_entry_point(tmp_path) -> None:
    res = preflab("simulate", "--battles", "20", "--ties-model", "none", "-o", str(tmp_path / "b.jsonl"))
    assert res.returncode == 0, res.stderr.decode()
    assert b"--ties-model" not in preflab("simulate", "--help").stdout  # hidden: one name in --help


def test_unexpected_errors_are_one_line_and_debug_shows_the_traceback(tmp_path) -> None:
    bad = tmp_path / "t.jsonl"  # a directory where a file is expected makes the writer fail unexpectedly
    (tmp_path / "out.png").mkdir()
    bad.write_text((DEMO / "battles.jsonl").read_text())
    res = preflab("rank", str(bad), "--bootstrap", "0", "--ci", "sandwich", "--plot", str(tmp_path / "out.png"))
    assert res.returncode == 1
    err = res.stderr.decode()
    assert "Traceback" not in err and "run with --debug for the traceback" in err
    res = preflab("--debug", "rank", str(bad), "--bootstrap", "0", "--ci", "sandwich", "--plot",
                  str(tmp_path / "out.png"))
    assert res.returncode != 0 and "Traceback" in res.stderr.decode()


def test_json_tables_are_strict_json_with_unbounded_intervals_as_null(tmp_path) -> None:
    import numpy as np

    from preflab.io import write_table

    df = pd.DataFrame({"model": ["a", "b"], "lower": [-np.inf, 1.0], "upper": [np.inf, np.nan]})
    df.attrs["separation"] = {"gap": float("inf")}
    path = tmp_path / "t.json"
    write_table(df, path, meta_key="leaderboard")
    text = path.read_text()
    assert "Infinity" not in text and "NaN" not in text
    doc = json.loads(text)
    assert doc["leaderboard"][0]["lower"] is None and doc["leaderboard"][1]["lower"] == 1.0
    assert doc["meta"]["separation"]["gap"] is None
