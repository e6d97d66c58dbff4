"""The judge card's PPI gain, what a judge would give a BT leaderboard
(:func:`judge_arena.assist.judge_ppi_gain`), against known truth: the control-variate factor
1 / (1 - rho^2) on one model pair, unbounded for a judge that reproduces the votes, about 1 for a random
judge and for one that only knows which model is better."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from arena.simulation.simulate import uniform_pairs
from judge_arena.assist import judge_ppi_gain


def judged(judge, n: int = 800, k: int = 6, seed: int = 0) -> pd.DataFrame:
    """A judged-pairs table: one human vote per pair (BT truth, strengths linspace(-1, 1)); the judge copies
    the vote (``perfect``), flips a coin (``random``), draws its own outcome from the truth (``model``: it
    knows which model is better, not which answer) or agrees with the vote with probability ``judge``."""
    rng = np.random.default_rng(seed)
    s = np.linspace(-1, 1, k)
    x, y = uniform_pairs(n, k, rng)
    p = 1 / (1 + np.exp(-(s[x] - s[y])))
    human = np.where(rng.random(n) < p, 0.0, 1.0)
    if judge == "perfect":
        code = human
    elif judge == "random":
        code = rng.integers(0, 2, n).astype(float)
    elif judge == "model":
        code = np.where(rng.random(n) < p, 0.0, 1.0)
    else:
        code = np.where(rng.random(n) < judge, human, 1 - human)
    names = np.array([f"m{i}" for i in range(k)])
    return pd.DataFrame({"item_id": [f"q{i}" for i in range(n)], "model_x": names[x], "model_y": names[y],
                         "human": human, "judge_xy": code, "judge_yx": code})


def test_one_pair_gain_is_the_control_variate_factor():
    pairs = judged(0.8, n=600, k=2, seed=3)
    flip = pairs["model_x"] != "m0"  # BT scores are oriented: 1 when m0 wins, whichever was x
    rho = np.corrcoef(np.abs(flip - pairs["human"]), np.abs(flip - pairs["judge_xy"]))[0, 1]
    res = judge_ppi_gain(pairs)
    assert res["gain"] == pytest.approx(1 / (1 - rho**2), rel=1e-6)
    assert res["n_items"] == 600 and res["n_votes"] == 600


def test_perfect_judge_is_unbounded_random_and_model_only_judges_give_nothing():
    perfect = judge_ppi_gain(judged("perfect"))
    assert perfect["unbounded"] and perfect["lambda"] == 1.0
    good = judge_ppi_gain(judged(0.9))
    assert 2.0 < good["gain"] < 1 / (1 - 0.8**2) * 1.1  # the scalar factor for a 90% judge is 2.78
    assert judge_ppi_gain(judged(0.75))["gain"] < good["gain"]
    for kind in ("random", "model"):
        gains = [judge_ppi_gain(judged(kind, seed=s))["gain"] for s in range(4)]
        assert all(1.0 <= g < 1.03 for g in gains), (kind, gains)


def test_calibrate_card_shows_the_ppi_gain(tmp_path):
    from preflab_cli import app

    pairs = judged(0.9, n=300)
    rows = []
    for r in pairs.itertuples():
        for order in ("xy", "yx"):
            x_wins = r.judge_xy == 0.0
            rows.append({"item_id": r.item_id, "model_x": r.model_x, "model_y": r.model_y, "order": order,
                         "verdict": "A" if x_wins == (order == "xy") else "B"})
    (tmp_path / "verdicts.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    human = pd.DataFrame({"item_id": pairs["item_id"], "human": np.where(pairs["human"] == 0, "A", "B"),
                          "model_a": pairs["model_x"], "model_b": pairs["model_y"]})
    human.to_csv(tmp_path / "human.csv", index=False)
    res = CliRunner().invoke(app, ["judge", "calibrate", str(tmp_path / "verdicts.jsonl"), "--human",
                                   str(tmp_path / "human.csv"), "--bootstrap", "20", "--json", str(tmp_path / "r.json"),
                                   "--report", str(tmp_path / "card.html")])
    assert res.exit_code == 0, res.output
    assert "PPI gain for a BT leaderboard" in " ".join(res.output.split())
    gain = json.loads((tmp_path / "r.json").read_text())["ppi_gain"]
    assert gain["gain"] == pytest.approx(judge_ppi_gain(pairs)["gain"]) and gain["gain"] > 2
    assert "PPI gain for a BT leaderboard" in (tmp_path / "card.html").read_text()
