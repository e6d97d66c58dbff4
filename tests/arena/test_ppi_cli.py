"""``preflab rank HUMAN --judge-battles JUDGE``: battles or verdict files, the ess column and the footer."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from arena.simulation.simulate import uniform_pairs
from preflab_cli import app

runner = CliRunner()


def _human(rng, n=300):
    models = np.array(["alpha", "beta", "gamma", "delta"])
    s = np.array([1.0, 0.4, 0.0, -0.5])
    a, b = uniform_pairs(n, 4, rng)
    win = rng.random(n) < 1 / (1 + np.exp(-(s[a] - s[b])))
    return pd.DataFrame({"model_a": models[a], "model_b": models[b], "winner": np.where(win, "model_a", "model_b"),
                         "question_id": [f"q{t}" for t in range(n)]})


def test_rank_with_judge_battles(tmp_path):
    rng = np.random.default_rng(0)
    human = _human(rng)
    human.to_csv(tmp_path / "human.csv", index=False)
    extra = _human(rng, 3000).assign(question_id=lambda d: "u" + d["question_id"])
    pd.concat([human, extra]).to_csv(tmp_path / "judge.csv", index=False)  # a judge that copies the humans
    out = tmp_path / "ppi.json"
    res = runner.invoke(app, ["rank", str(tmp_path / "human.csv"), "--judge-battles", str(tmp_path / "judge.csv"),
                              "--ci", "both", "--bootstrap", "100", "--output", str(out)])
    assert res.exit_code == 0, res.output
    assert "PPI++ with judge judge.csv: lambda" in res.output and "ESS gain" in res.output
    body = json.loads(out.read_text())
    row = body["leaderboard"][0]
    assert {"model", "rating", "lower", "upper", "rank", "ess", "lower_sandwich", "lower_bootstrap"} <= set(row)
    assert body["meta"]["n_human_items"] == 300 and body["meta"]["n_judge_items"] == 3300
    assert body["meta"]["ess_gain"] > 1.5


def test_rank_with_verdict_file(tmp_path):
    rng = np.random.default_rng(1)
    human = _human(rng)
    human.to_csv(tmp_path / "human.csv", index=False)
    rows = []
    for r in human.itertuples():
        p = 0.8 if r.winner == "model_a" else 0.2
        for order in ("xy", "yx"):
            p_a = p if order == "xy" else 1 - p
            rows.append({"item_id": r.question_id, "order": order, "model_x": r.model_a, "model_y": r.model_b,
                         "verdict": "A" if p_a > 0.5 else "B", "p_a": p_a, "p_b": 1 - p_a, "p_tie": 0.0})
    (tmp_path / "verdicts.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    res = runner.invoke(app, ["rank", str(tmp_path / "human.csv"), "--judge-battles",
                              str(tmp_path / "verdicts.jsonl"), "--ci", "sandwich"])
    assert res.exit_code == 0, res.output
    assert "300 human items" in res.output and "ess" in res.output


def test_bad_judge_file_exits_2(tmp_path):
    rng = np.random.default_rng(2)
    _human(rng).to_csv(tmp_path / "human.csv", index=False)
    _human(rng).drop(columns="question_id").to_csv(tmp_path / "judge.csv", index=False)
    res = runner.invoke(app, ["rank", str(tmp_path / "human.csv"), "--judge-battles", str(tmp_path / "judge.csv"),
                              "--ci", "sandwich"])
    assert res.exit_code == 2 and "question_id" in res.output
