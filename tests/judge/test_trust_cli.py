"""`preflab judge jury` and `preflab judge drift` end to end (CLI on files)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from preflab_cli.judge_cmds import app
from tests.judge.verdict_files import write_verdicts


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def test_drift_cli_flags_a_new_version_with_more_position_bias(tmp_path):
    rng = np.random.default_rng(0)
    q = rng.normal(0, 1.5, 300)
    old = write_verdicts(tmp_path / "old.jsonl", _sigmoid(q), _sigmoid(-q), judge="openai:gpt-4.1-mini")
    new = write_verdicts(tmp_path / "new.jsonl", _sigmoid(q + 0.8), _sigmoid(-q + 0.8), judge="openai:gpt-4.1")
    res = CliRunner().invoke(app, ["drift", str(old), str(new), "--bootstrap", "100",
                                   "--json", str(tmp_path / "d.json")])
    assert res.exit_code == 1, res.output
    assert "verdict (false-flag rate ≤ 0.05): changed" in res.output and "McNemar" in res.output
    rep = json.loads((tmp_path / "d.json").read_text())
    assert "first_slot_shift" in rep["changed_by"]
    res = CliRunner().invoke(app, ["drift", str(old), str(old), "--bootstrap", "100"])
    assert res.exit_code == 0 and ": same judge" in res.output


def test_jury_cli_on_three_verdict_files_with_human_labels(tmp_path):
    rng = np.random.default_rng(1)
    n = 400
    truth = rng.integers(0, 2, n)  # 0: x better, 1: y better
    files = []
    for j in range(3):
        right = rng.random(n) < 0.7
        x_wins = np.where(right, truth == 0, truth == 1)
        p = np.where(x_wins, 0.9, 0.1)  # the same verdict in both orders
        files.append(write_verdicts(tmp_path / f"j{j}.jsonl", p, 1 - p, judge=f"local:judge{j}"))
    labels = tmp_path / "human.csv"
    labels.write_text("item_id,human\n" + "".join(f"q{i},{'A' if t == 0 else 'B'}\n" for i, t in enumerate(truth)))
    res = CliRunner().invoke(app, ["jury", *map(str, files), "--human", str(labels), "--bootstrap", "100",
                                   "--output", str(tmp_path / "panel.jsonl"), "--report", str(tmp_path / "j.html")])
    assert res.exit_code == 0, res.output
    assert "member local:judge0" in res.output and "effective number of independent judges" in res.output
    panel = [json.loads(line) for line in (tmp_path / "panel.jsonl").read_text().splitlines()]
    assert len(panel) == n and {"winner", "member_1", "member_3"} <= set(panel[0])
    assert "Jury card" in (tmp_path / "j.html").read_text()


def test_jury_cli_refuses_one_member_and_an_unknown_rule(tmp_path):
    f = write_verdicts(tmp_path / "a.jsonl", [0.9], [0.1])
    assert CliRunner().invoke(app, ["jury", str(f)]).exit_code == 2
    assert CliRunner().invoke(app, ["jury", str(f), str(f), "--rule", "vote"]).exit_code == 2


def test_jury_cli_on_llmfao_gpt3_and_gpt4(shared_data):
    d = shared_data / "llmfao"
    res = CliRunner().invoke(app, ["jury", f"{d}#gpt3", f"{d}#gpt4", "--bootstrap", "100"])
    assert res.exit_code == 0, res.output
    assert "member gpt4: agreement / kappa vs humans: 0.435" in res.output
    assert "panel − human agreement" in res.output


def test_jury_and_drift_refuse_zero_bootstrap_resamples_with_exit_2(tmp_path):
    f = write_verdicts(tmp_path / "a.jsonl", [0.9, 0.2], [0.1, 0.7])
    for command in (["jury", str(f), str(f)], ["drift", str(f), str(f)]):
        res = CliRunner().invoke(app, [*command, "--bootstrap", "0"])
        assert res.exit_code == 2, res.output
        assert "--bootstrap must be at least 1" in res.output and "IndexError" not in res.output


def test_mixed_judges_are_refused_naming_them_and_pooled_with_allow_mixed(tmp_path, capsys):
    from tests.judge.test_compare import preflab

    a = write_verdicts(tmp_path / "a.jsonl", [0.9, 0.2, 0.7], [0.1, 0.7, 0.4], judge="local:small")
    b = write_verdicts(tmp_path / "b.jsonl", [0.9, 0.2, 0.7], [0.1, 0.7, 0.4], judge="local:small-q8")
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(a.read_text() + b.read_text())
    for command in (["judge", "drift", str(mixed), str(a)], ["judge", "jury", str(mixed), str(a)],
                    ["compare", "--base", "m2", "--candidate", "m1", "--verdicts", str(mixed)]):
        code, _, err = preflab(capsys, *command, "--bootstrap" if command[0] == "judge" else "--alpha",
                               "50" if command[0] == "judge" else "0.05")
        assert code == 2 and "line 7: field 'judge': mixed judges: local:small (6 rows), local:small-q8" in err, err
        code, out, err = preflab(capsys, *command, "--allow-mixed")
        assert code in (0, 1), err  # drift may exit 1 ("changed")
        assert "pooled with --allow-mixed; mixed judges" in out + err


def test_drift_and_jury_read_the_labels_layout_without_model_names(tmp_path, monkeypatch):
    # judge_labels.csv has no model_x / model_y; the same file twice is two runs (drift) or two members (jury)
    monkeypatch.chdir(tmp_path)
    labels = Path("judge_labels.csv")
    labels.write_text("item_id,verdict_ab,verdict_ba,human\n" + "".join(
        f"q{i},{'A' if i % 3 else 'B'},{'A' if i % 2 else 'B'},A\n" for i in range(30)))
    res = CliRunner().invoke(app, ["drift", str(labels), str(labels), "--bootstrap", "50"])
    assert res.exit_code == 0, res.output
    assert "pairs judged by both runs: 30 (only old 0, only new 0)" in res.output
    res = CliRunner().invoke(app, ["jury", str(labels), str(labels), "--bootstrap", "50"])
    assert res.exit_code == 0, res.output
    assert "member judge_labels.csv:" in res.output and "member 2:judge_labels.csv:" in res.output
