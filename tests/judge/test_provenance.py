"""Provenance on every verdict row (through the real openai SDK against the fault server), and refusing
to pool verdicts of different judges, served model versions or rubric texts."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from judge.metrics.adapters import load_any, load_verdicts_jsonl
from judge.runner.run import RunConfig, run_judge
from judge.verdicts.pairs import Pair
from judge.verdicts.provenance import preflab_version, rubric_text_hash
from judge.verdicts.rubrics import BUILTIN, Rubric
from preflab.errors import InputError
from preflab_cli.judge_cmds import app
from tests.judge.fault_server import Faults, FaultServer

PAIRS = [Pair(f"q{i}", f"prompt {i}", "mx", f"x{i}", "my", f"y{i}") for i in range(4)]


def _run(tmp_path, rubric, suffix="", name="v.jsonl", db="c.sqlite"):
    with FaultServer(Faults(served_suffix=suffix)) as srv:
        res = run_judge(PAIRS, f"openai:{srv.url}#gpt-4.1-mini", RunConfig(rubric), tmp_path / db)
    out = tmp_path / name
    res.write_jsonl(out)
    return res, out


def test_every_row_records_what_served_it_and_the_cache_keeps_it(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-provenance")
    res, _ = _run(tmp_path, BUILTIN["abt"], suffix="-2025-04-14")
    df = res.verdicts
    assert set(df["judge"]) == {"openai:gpt-4.1-mini"}
    assert set(df["model_version"]) == {"gpt-4.1-mini-2025-04-14"}  # the API's `model`, not what we asked
    assert set(df["system_fingerprint"]) == {"fp_fault"}
    assert set(df["rubric"]) == {"abt@1"} and set(df["rubric_hash"]) == {rubric_text_hash(BUILTIN["abt"])}
    assert set(df["method"]) == {"logprob-first-token"} and set(df["preflab_version"]) == {preflab_version()}
    assert json.loads(df["sampling"].iloc[0]) == {"max_tokens": 3, "top_logprobs": 20, "seed": 0}
    again, out = _run(tmp_path, BUILTIN["abt"], name="again.jsonl")  # all from the cache
    assert again.stats.cache_hits == 8 and again.stats.calls == 0
    assert set(again.verdicts["model_version"]) == {"gpt-4.1-mini-2025-04-14"}
    assert set(again.verdicts["system_fingerprint"]) == {"fp_fault"}
    settings = load_verdicts_jsonl(out).attrs["settings"]
    assert settings["model version"] == "gpt-4.1-mini-2025-04-14"
    assert settings["rubric hash"] == rubric_text_hash(BUILTIN["abt"])


def test_two_rubric_texts_are_refused_naming_the_hashes(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-provenance")
    abt = BUILTIN["abt"]
    edited = Rubric(abt.name, abt.version, abt.system, abt.instruction + " Be strict.", abt.labels,
                    abt.text_labels, abt.case_sensitive, abt.answer_prefix)  # same name and version, new text
    _, a = _run(tmp_path, abt, name="a.jsonl")
    _, b = _run(tmp_path, edited, name="b.jsonl")
    both = tmp_path / "both.jsonl"
    both.write_text(a.read_text() + b.read_text())
    res = CliRunner().invoke(app, ["calibrate", str(both), "--bootstrap", "50"])
    assert res.exit_code == 2
    text = " ".join(res.output.split())
    assert "rubric hash" in text and rubric_text_hash(abt) in text and rubric_text_hash(edited) in text
    assert "line 9" in text and "--allow-mixed" in text  # the first row of the second rubric
    card = tmp_path / "card.html"
    res = CliRunner().invoke(app, ["calibrate", str(both), "--bootstrap", "50", "--allow-mixed", "--report", str(card)])
    assert res.exit_code == 0, res.output
    assert "pooled with --allow-mixed; mixed rubric hashes: " + rubric_text_hash(abt) in card.read_text()


def test_a_changed_model_version_is_refused_by_rank_and_the_app_loader(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-provenance")
    _, a = _run(tmp_path, BUILTIN["abt"], suffix="-2025-04-14", name="a.jsonl", db="a.sqlite")
    _, b = _run(tmp_path, BUILTIN["abt"], suffix="-2026-01-01", name="b.jsonl", db="b.sqlite")
    both = tmp_path / "both.jsonl"
    both.write_text(a.read_text() + b.read_text())
    from judge_arena.assist import verdict_frame

    with pytest.raises(InputError, match="model version.*2025-04-14.*2026-01-01"):
        verdict_frame(both)  # what `rank --judge-battles` and the Leaderboard page read
    rows = verdict_frame(both, allow_mixed=True)
    assert any("mixed model versions" in n for n in rows.attrs["notes"])
    battles = tmp_path / "human.jsonl"
    battles.write_text("".join(json.dumps({"model_a": "mx", "model_b": "my", "winner": w, "question_id": f"q{i}"})
                               + "\n" for i, w in enumerate(["model_a", "model_b", "model_a", "tie"] * 3)))
    from preflab_cli import app as root

    res = CliRunner().invoke(root, ["rank", str(battles), "--judge-battles", str(both), "--bootstrap", "20"])
    assert res.exit_code == 2 and "model version" in res.output


def test_old_files_without_provenance_still_load():
    pairs = load_any("data/demo/verdicts-smollm2.jsonl")
    assert pairs.attrs["settings"]["judge model"] == "local:smollm2" and "model version" not in pairs.attrs["settings"]


def test_alpaca_eval_provenance_as_published(shared_data):
    pairs = load_any(shared_data / "alpaca_eval" / "annotations", layout="alpaca")
    s = pairs.attrs["settings"]
    assert s["judge model"] == "weighted_alpaca_eval_gpt4_turbo"  # the `annotator` field
    assert "model version" not in s  # raw_completion carries no `model`: the card says "not recorded"
    from judge.cards.card import render_card
    from judge.metrics.calibrate import calibrate

    html = render_card(calibrate(pairs.iloc[:200], n_bootstrap=20), None, s)
    assert "model version: not recorded" in html and "weighted_alpaca_eval_gpt4_turbo" in html
    assert isinstance(pairs, pd.DataFrame)


def test_failed_calls_have_no_served_version_and_do_not_make_a_file_mixed(tmp_path, monkeypatch):
    # A call that got no answer records no model version; that is not a second judge, so the file loads.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-provenance")
    pairs = [Pair(f"q{i}", f"prompt {i}", "mx", f"x{i}", "my", f"y{i}") for i in range(10)]
    with FaultServer(Faults(rate_401=0.3, seed=3)) as srv:
        res = run_judge(pairs, f"openai:{srv.url}#gpt-4.1-mini", RunConfig(BUILTIN["abt"]), None)
    failed = res.verdicts["error"].notna()
    assert 0 < failed.sum() < len(failed) and res.verdicts.loc[failed, "model_version"].isna().all()
    res.write_jsonl(tmp_path / "v.jsonl")
    pairs_table = load_verdicts_jsonl(tmp_path / "v.jsonl")
    served = set(res.verdicts.loc[~failed, "model_version"])
    assert len(served) == 1 and pairs_table.attrs["settings"]["model version"] == served.pop()
    assert not pairs_table.attrs["notes"]
