"""`preflab lc` and `preflab arena-hard`: thin shells that print tables, write outputs and fail clearly."""

from __future__ import annotations

import json

import pandas as pd
from typer.testing import CliRunner

from preflab_cli import app
from tests.arena.test_arenahard import simulate_judgments
from tests.arena.test_lc_data import annotations, write

runner = CliRunner()


def alpaca_files(tmp_path, n=30):
    files = []
    for model, shift in (("alpha", 0), ("beta", 1), ("gamma", 2)):
        recs = annotations(model, n=n)
        for i, r in enumerate(recs):
            r["output_2"] = "m" * (20 + 7 * ((i * (shift + 3)) % 11))
            r["preference"] = 1.0 + ((i + shift) % 5) / 4
        files.append(write(tmp_path / f"{model}.json", recs))
    return files


def test_lc_command_prints_and_writes(tmp_path):
    out = tmp_path / "lc.csv"
    res = runner.invoke(app, ["lc", *map(str, alpaca_files(tmp_path)), "--bootstrap", "50", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "3 models vs baseline 'gpt4_1106_preview', 30 instructions" in res.output
    table = pd.read_csv(out)
    assert set(table["model"]) == {"alpha", "beta", "gamma"}
    assert {"raw_win_rate", "lc_win_rate", "lc_lower", "lc_upper", "avg_length"} <= set(table.columns)


def test_lc_command_baseline_naming_a_model_adds_reference_column(tmp_path):
    res = runner.invoke(app, ["lc", *map(str, alpaca_files(tmp_path)), "--bootstrap", "0", "--baseline", "beta"])
    assert res.exit_code == 0, res.output
    assert "LC_vs_ref" in res.output


def test_lc_command_bad_input_exits_2_naming_file_and_record(tmp_path):
    files = alpaca_files(tmp_path)
    recs = json.loads(files[1].read_text())
    recs[4]["preference"] = 3
    files[1].write_text(json.dumps(recs))
    res = runner.invoke(app, ["lc", *map(str, files), "--bootstrap", "0"])
    assert res.exit_code == 2
    assert "beta.json, record 5: field 'preference'" in res.output


def test_arena_hard_command(tmp_path):
    path = simulate_judgments(tmp_path / "j.jsonl", {"good": 0.8, "bad": -0.8}, n_uid=80)
    out = tmp_path / "ah.json"
    res = runner.invoke(app, ["arena-hard", str(path), "--bootstrap", "100", "--compare-weights", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "2 models vs baseline 'base' (detected: named in the files), 80 prompts" in res.output
    assert "CI width (win-rate points) by strong-verdict weight" in res.output
    rows = {r["model"]: r for r in json.loads(out.read_text())}
    assert rows["good"]["win_rate"] > 50 > rows["bad"]["win_rate"]
    assert rows["base"]["rating"] == 1000


def test_arena_hard_command_bad_label(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text(json.dumps({"uid": "1", "model": "m", "baseline": "b", "games": [{"score": "A>B"},
                                                                                    {"score": "A>?B"}]}) + "\n")
    res = runner.invoke(app, ["arena-hard", str(path), "--bootstrap", "0"])
    assert res.exit_code == 2
    assert "j.jsonl, line 1: field 'games[1].score': unknown verdict 'A>?B'" in res.output


def test_lc_command_saves_and_reuses_difficulty(tmp_path):
    files = list(map(str, alpaca_files(tmp_path)))
    diff = tmp_path / "difficulty.csv"
    first = runner.invoke(app, ["lc", *files, "--bootstrap", "0", "--save-difficulty", str(diff), "-o",
                                str(tmp_path / "a.csv")])
    assert first.exit_code == 0, first.output
    saved = pd.read_csv(diff)
    assert list(saved.columns) == ["instruction", "difficulty"] and len(saved) == 30
    again = runner.invoke(app, ["lc", *files, "--bootstrap", "0", "--difficulty", str(diff), "-o",
                                str(tmp_path / "b.csv")])
    assert again.exit_code == 0, again.output
    a, b = pd.read_csv(tmp_path / "a.csv"), pd.read_csv(tmp_path / "b.csv")
    pd.testing.assert_series_equal(a["lc_win_rate"], b["lc_win_rate"], atol=1e-6)  # same gamma, same fit
    saved["difficulty"] = saved["difficulty"].astype(object)
    saved.loc[3, "difficulty"] = "high"
    saved.to_csv(diff, index=False)
    bad = runner.invoke(app, ["lc", *files, "--bootstrap", "0", "--difficulty", str(diff)])
    assert bad.exit_code == 2 and "difficulty.csv, record 4: field 'difficulty': not a number" in bad.output


def test_lc_reads_a_published_results_folder_with_the_baselines_own_file(tmp_path):
    """AlpacaEval's results/ folder includes the baseline judged against itself (preference 1.5 throughout);
    before, `preflab lc results/*/.../annotations.json` exited 2 on it. Now: listed at 50% by definition, noted."""
    files = []
    for model in ("alpha", "beta", "gamma", "gpt4_1106_preview"):
        folder = tmp_path / "results" / model / "weighted_alpaca_eval_gpt4_turbo"
        folder.mkdir(parents=True)
        src = [f for f in alpaca_files(tmp_path) if f.stem == model]
        recs = json.loads(src[0].read_text()) if src else [
            {**r, "generator_2": model, "output_2": r["output_1"], "preference": 1.5}
            for r in json.loads(alpaca_files(tmp_path)[0].read_text())]
        files.append(write(folder / "annotations.json", recs))
    out = tmp_path / "lc.csv"
    res = runner.invoke(app, ["lc", *map(str, files), "--bootstrap", "50", "-o", str(out)])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "is the baseline 'gpt4_1106_preview' judged against itself: listed at 50% by definition" in text
    assert "3 models vs baseline" in text  # the fit: the three others
    table = pd.read_csv(out).set_index("model")
    base = table.loc["gpt4_1106_preview"]
    assert base["raw_win_rate"] == base["lc_win_rate"] == 50.0 and bool(base["by_definition"])
    assert not table.drop(index="gpt4_1106_preview")["by_definition"].any()
    alone = runner.invoke(app, ["lc", str(files[-1])])
    assert alone.exit_code == 2 and "only the baseline 'gpt4_1106_preview' judged against itself" in alone.output


def test_results_layout_names_the_model_by_its_folder(tmp_path):
    """AlpacaEval's NullModel annotations say generator_2 "example": the leaderboard's name is the folder's
    (before, it was fitted as "example", missing from the comparison with the official leaderboard)."""
    from arena.lc.data import load_alpaca_table

    files = []
    for model, stored in (("NullModel", "example"), ("beta", "beta")):
        folder = tmp_path / "results" / model / "weighted_alpaca_eval_gpt4_turbo"
        folder.mkdir(parents=True)
        files.append(write(folder / "annotations.json", annotations(stored, n=6)))
    assert set(load_alpaca_table(files)["model"]) == {"NullModel", "beta"}
