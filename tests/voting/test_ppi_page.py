"""Issue 15, app: "sharpen with a judge" on the Leaderboard page gives the numbers of
``preflab rank VOTES --judge-battles JUDGE`` on the same votes and judge file; admin-only; files only from the
data folder (or an upload); a bad judge file is one short message, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from tests.voting.test_vote_page import start
from voting.store import load_votes, open_store
from voting.votes import export_bytes


def _good_judge(battles: pd.DataFrame, path: Path, seed: int = 0) -> None:
    """A verdict file (both orders, probabilities) that mostly agrees with the votes on every voted item and
    also judges 300 items nobody voted on (labels from the pair's vote share)."""
    rng = np.random.default_rng(seed)
    b = battles.assign(score=battles["winner"].map({"model_a": 1.0, "model_b": 0.0}).fillna(0.5))
    items = b.groupby(["question_id", "model_a", "model_b"], as_index=False)["score"].mean()
    share = items.groupby(["model_a", "model_b"])["score"].mean()
    extra = share.sample(300, replace=True, random_state=seed).reset_index()
    extra["question_id"] = [f"extra-{t}" for t in range(len(extra))]
    rows = []
    for r in pd.concat([items, extra], ignore_index=True).itertuples():
        p = float(np.clip(0.15 + 0.7 * r.score + rng.normal(0, 0.05), 0.02, 0.98))
        for order, p_a in (("xy", p), ("yx", 1 - p)):
            rows.append({"item_id": str(r.question_id), "model_x": r.model_a, "model_y": r.model_b, "order": order,
                         "verdict": "A" if p_a > 0.5 else "B", "p_a": p_a, "p_b": 1 - p_a, "p_tie": 0.0})
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_sharpen_with_a_judge_matches_the_cli(monkeypatch, tmp_path):
    from preflab_cli import app as cli

    url = f"sqlite:///{tmp_path / 'demo.db'}"
    assert CliRunner().invoke(cli, ["demo-seed", "--db", url]).exit_code == 0
    data = tmp_path / "data"
    data.mkdir()
    votes_file = tmp_path / "votes-battles.json"
    votes_file.write_bytes(export_bytes(load_votes(open_store(url)), "battles"))
    judge = data / "good-verdicts.jsonl"
    _good_judge(pd.read_json(votes_file), judge)
    (data / "broken-verdicts.jsonl").write_text('{"item_id": "demo-001", "order": "xy", "verdict": 7}\n')
    (data / "other-battles.csv").write_text("model_a,model_b,winner,question_id\nx,y,model_a,q1\n")
    (tmp_path / "outside-verdicts.jsonl").write_text(judge.read_text())

    at = start(monkeypatch, url, admin_passcode="boss", data_dir=str(data))
    at.switch_page("voting/pages/leaderboard.py").run(timeout=300)
    assert not any(w.key == "lb_ppi_pick" for w in at.selectbox)  # locked: nothing of the page shows
    at.text_input[0].input("boss")
    at.button[0].click().run(timeout=300)
    at.select_slider(key="lb_boot").set_value(100).run(timeout=300)
    assert not at.exception
    pick = at.selectbox(key="lb_ppi_pick")
    assert set(pick.options[1:]) == {str(data / n) for n in ("broken-verdicts.jsonl", "good-verdicts.jsonl",
                                                             "other-battles.csv")}
    at.text_input(key="lb_ppi_path").input(str(tmp_path / "outside-verdicts.jsonl")).run(timeout=300)
    assert not at.exception and any("outside the data folder" in e.value for e in at.error)
    at.text_input(key="lb_ppi_path").input("")
    for bad, words in (("broken-verdicts.jsonl", "verdict"), ("other-battles.csv", "at least 2 items")):
        at.selectbox(key="lb_ppi_pick").set_value(str(data / bad)).run(timeout=300)
        errors = [e.value for e in at.error if e.value.startswith("Could not use that judge file")]
        assert not at.exception and len(errors) == 1 and words in errors[0] and "Traceback" not in errors[0]
        assert len(errors[0]) < 400
    at.selectbox(key="lb_ppi_pick").set_value(str(judge)).run(timeout=300)
    assert not at.exception and not [e.value for e in at.error], [e.value for e in at.error]
    metrics = {m.label: m.value for m in at.metric}
    assert "**Human + judge** (PPI++; sandwich intervals)" in [m.value for m in at.markdown]  # was **)**
    human_table, app_table = at.dataframe[-2].value, at.dataframe[-1].value  # side by side, in that order

    out = tmp_path / "ppi.csv"
    res = CliRunner().invoke(cli, ["rank", str(votes_file), "--judge-battles", str(judge), "--ci", "sandwich",
                                   "--output", str(out)])
    assert res.exit_code == 0, res.output
    cli_table = pd.read_csv(out)
    both = app_table.merge(cli_table, on="model", suffixes=("_app", ""))
    assert len(both) == len(cli_table) == 5
    for col in ("rating", "lower", "upper", "ess"):
        assert np.allclose(both[f"{col}_app"], both[col].round(1), atol=0.051), col
    assert (both["rank_app"] == both["rank"]).all()
    hum = human_table.merge(cli_table, on="model", suffixes=("_app", ""))
    assert np.allclose(hum["rating_app"], hum["rating_human"].round(1), atol=0.051)
    assert np.allclose(hum["upper_app"], hum["upper_human"].round(1), atol=0.051)
    footer = " ".join(res.output.split())
    assert f"lambda {metrics['lambda']};" in footer and f"ESS gain {metrics['ESS gain']}" in footer
    assert f"{metrics['Human items']} human items" in footer and f"{metrics['Judge items']} judge items" in footer
    gain = float(metrics["ESS gain"].lstrip("x"))
    assert gain > 1.2 and float(metrics["lambda"]) > 0.2  # a judge that mostly copies the votes helps
    assert ((hum["upper_human"] - hum["lower_human"]) > (hum["upper"] - hum["lower"])).all()
