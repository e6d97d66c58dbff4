"""Arena-Hard inputs: the published judgment files, baselines, models with no readable game, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from arena.arenahard import baseline_leaderboard
from arena.arenahard_files import load_answer_style, load_arena_hard
from preflab.errors import InputError

DATA = Path(__file__).parent / "data"


def fixture_files(version: str, kind: str = "model_judgment") -> list[Path]:
    return sorted((DATA / version / kind).rglob("*.jsonl"))


def test_published_v01_judgments_read_with_question_id():
    files = fixture_files("arena-hard-v0.1")
    # before: InputError "field 'uid': missing" on the first line
    with pytest.raises(InputError, match=r"field 'baseline'.*gpt-4-0314 for arena-hard-v0\.1"):
        load_arena_hard(files)  # v0.1 files do not name their baseline
    games = load_arena_hard(files, baseline="gpt-4-0314")
    assert len(games) == 2 * 2 * 12 - 1 and games.attrs["skipped"] == 1
    assert games["uid"].nunique() == 12 and set(games["opponent"]) == {"gpt-4-0314"}
    first = json.loads(files[0].read_text().splitlines()[0])
    g = games[(games["uid"] == first["question_id"]) & (games["model"] == first["model"])]
    assert g["label"].tolist() == [first["games"][0]["score"], first["games"][1]["score"]]
    lb = baseline_leaderboard(games, "gpt-4-0314", n_bootstrap=20)
    assert set(lb["model"]) == {"gpt-4-0314", "model-good", "model-weak"}
    style = load_answer_style(fixture_files("arena-hard-v0.1", "model_answer"))
    ans = json.loads(fixture_files("arena-hard-v0.1", "model_answer")[0].read_text().splitlines()[0])
    meta = ans["conv_metadata"]
    assert style.loc[(ans["question_id"], ans["model_id"])].tolist() == [
        meta["token_len"], sum(meta["header_count"].values()), sum(meta["list_count"].values()),
        sum(meta["bold_count"].values())]


def test_published_v2_judgments_with_a_null_game():
    games = load_arena_hard(fixture_files("arena-hard-v2.0"))
    assert games.attrs["baseline"] == "o3-mini-2025-01-31" and games.attrs["skipped"] == 1
    assert len(games) == 47 and games["category"].eq("hard_prompt").all()
    style = load_answer_style(fixture_files("arena-hard-v2.0", "model_answer"))
    assert len(style) == 36
    lb = baseline_leaderboard(games, "o3-mini-2025-01-31", n_bootstrap=20, style=style)
    assert lb.attrs["resampling_unit"] == "prompt" and lb["win_rate"].notna().all()


def judgment(uid, model, baseline, a="A>B", b="B>A"):
    return json.dumps({"uid": uid, "model": model, "baseline": baseline, "games": [{"score": a}, {"score": b}]})


def test_several_baselines_are_an_error_or_an_explicit_choice(tmp_path):
    p = tmp_path / "mixed.jsonl"
    p.write_text("\n".join([judgment(f"u{i}", "m1", "b1") for i in range(5)]
                           + [judgment(f"u{i}", "m2", "b2") for i in range(3)]) + "\n")
    # before: accepted silently; m2, judged only against b2, was reported against the CLI's mode() baseline
    with pytest.raises(InputError, match=r"judgments against 2 baselines: 'b1' \(5 records .*'b2' \(3 records"):
        load_arena_hard([p])
    games = load_arena_hard([p], baseline="b2")
    assert set(games["model"]) == {"m2"} and games.attrs["other_baselines"] == {"b1": 5}
    with pytest.raises(InputError, match=r"no record is judged against 'b3'"):
        load_arena_hard([p], baseline="b3")


def test_baseline_judged_against_itself_is_an_error(tmp_path):
    p = tmp_path / "self.jsonl"
    p.write_text(judgment("u1", "m", "b") + "\n" + judgment("u1", "b", "b") + "\n")
    with pytest.raises(InputError, match=r"self\.jsonl, line 2: field 'model': 'b' is judged against itself"):
        load_arena_hard([p])


def test_model_with_no_readable_game_is_listed_without_a_rating(tmp_path):
    p = tmp_path / "j.jsonl"
    p.write_text("\n".join([judgment(f"u{i}", "m", "b", "B>A" if i % 3 else "A>B") for i in range(20)]
                           + [json.dumps({"uid": "u0", "model": "mute", "baseline": "b",
                                          "games": [{"score": None}, None]})]) + "\n")
    lb = baseline_leaderboard(load_arena_hard([p]), "b", n_bootstrap=20).set_index("model")
    # before: 'mute' was not in the table at all
    assert lb.loc["mute", "games"] == 0 and np.isnan(lb.loc["mute", "win_rate"])
    assert "no readable games" in lb.loc["mute", "note"] and lb.index[-1] == "mute"
    from arena.arenahard import format_baseline_table

    assert "no readable games" in format_baseline_table(lb.reset_index())


def test_cli_reports_the_baseline_and_refuses_mixed_inputs(tmp_path):
    from typer.testing import CliRunner

    from preflab_cli import app

    runner = CliRunner()
    files = [str(p) for p in fixture_files("arena-hard-v0.1")]
    res = runner.invoke(app, ["arena-hard", *files, "--bootstrap", "0"])
    assert res.exit_code == 2 and "gpt-4-0314 for arena-hard-v0.1" in res.output
    res = runner.invoke(app, ["arena-hard", *files, "--baseline", "gpt-4-0314", "--bootstrap", "20"])
    assert res.exit_code == 0, res.output
    assert "2 models vs baseline 'gpt-4-0314' (given), 12 prompts, 47 games (1 unreadable skipped)" in res.output
    assert "CIs resample prompts" in res.output
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(judgment("u1", "m1", "b1") + "\n" + judgment("u1", "m2", "b2") + "\n")
    res = runner.invoke(app, ["arena-hard", str(mixed), "--bootstrap", "0"])
    assert res.exit_code == 2 and "judgments against 2 baselines" in res.output
    res = runner.invoke(app, ["arena-hard", str(mixed), "--baseline", "b1", "--bootstrap", "0"])
    assert res.exit_code == 0 and "1 records judged against baseline 'b2' left out" in res.output


def test_cli_verdicts_off_baseline_pairs_need_indirect(tmp_path):
    from typer.testing import CliRunner

    from preflab_cli import app

    rows = []
    for i in range(30):  # m1 judged against b1, m2 only against b2: "m2 vs b1" would be a BT extrapolation
        for x, y in (("m1", "b1"), ("m2", "b2"), ("b1", "b2")):
            for order, verdict in (("xy", "A" if i % 3 else "B"), ("yx", "B" if i % 4 else "A")):
                rows.append(json.dumps({"item_id": f"i{i}", "model_x": x, "model_y": y, "order": order,
                                        "p_a": None, "p_b": None, "p_tie": None, "verdict": verdict}))
    path = tmp_path / "verdicts.jsonl"
    path.write_text("\n".join(rows) + "\n")
    runner = CliRunner()
    res = runner.invoke(app, ["arena-hard", str(path), "--verdicts", "--bootstrap", "0"])
    assert res.exit_code == 2 and "cannot tell the baseline: no model plays in every game" in res.output
    res = runner.invoke(app, ["arena-hard", str(path), "--verdicts", "--baseline", "b1", "--bootstrap", "0"])
    # before: accepted, and m2 reported "vs b1" from games against b2 only
    assert res.exit_code == 2 and "games do not involve the baseline 'b1'" in res.output
    res = runner.invoke(app, ["arena-hard", str(path), "--verdicts", "--baseline", "b1", "--indirect",
                              "--bootstrap", "0"])
    assert res.exit_code == 0, res.output
    assert "not judged vs the baseline: BT inference" in res.output and "do not involve 'b1'" in res.output


def test_a_model_that_wins_every_game_has_an_unbounded_rating(tmp_path):
    p = tmp_path / "j.jsonl"
    p.write_text("\n".join([judgment(f"u{i}", "m", "b", "B>A" if i % 3 else "A>B") for i in range(30)]
                           + [judgment(f"u{i}", "champ", "b", "B>A", "A>B") for i in range(30)]) + "\n")
    lb = baseline_leaderboard(load_arena_hard([p]), "b", n_bootstrap=50).set_index("model")
    # before: champ's rating interval was a finite ridge artefact
    assert lb.loc["champ", "rating_upper"] == np.inf and lb.loc["champ", "rating_lower"] == -np.inf
    assert "rating unbounded" in lb.loc["champ", "note"] and lb.loc["champ", "win_rate"] > 99.9
    assert np.isfinite(lb.loc["m", ["rating_lower", "rating_upper"]].astype(float)).all()
    assert lb.attrs["separation"]["groups"][0] == ["champ"]
