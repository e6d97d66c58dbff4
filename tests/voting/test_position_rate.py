"""The human first-position rate (voters' preference for the left answer): known truth and the Data page."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tests.voting.test_vote_page import start
from voting.position import human_first_position_rate
from voting.store import load_votes, open_store
from voting.votes import seed_demo

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo"


def _votes(rng, n_voters=30, per_voter=40, mean_left=0.6, spread=0.1, tie_rate=0.1) -> pd.DataFrame:
    """Voters whose own left-preference varies around ``mean_left`` (so votes cluster by voter)."""
    rows = []
    for v in range(n_voters):
        p = np.clip(rng.normal(mean_left, spread), 0, 1)
        for _ in range(per_voter):
            tie, left = rng.random() < tie_rate, rng.random() < p
            rows.append({"voter": f"v{v}", "model_left": "a", "model_right": "b",
                         "winner_model": None if tie else ("a" if left else "b"), "outcome": "tie" if tie else "x"})
    return pd.DataFrame(rows)


def test_interval_over_voters_covers_the_true_left_preference():
    rng = np.random.default_rng(0)
    covered = 0
    for _ in range(200):
        r = human_first_position_rate(_votes(rng))
        covered += r["lower"] <= 0.6 <= r["upper"]
    # nominal 0.95; 200 replications give a Monte Carlo error of 0.015
    assert covered / 200 >= 0.95 - 3 * 0.015
    r = human_first_position_rate(_votes(rng))
    assert r["voters"] == 30 and r["decisive"] + r["ties"] == 1200


def test_no_decisive_votes_is_none():
    tie = pd.DataFrame({"voter": ["a"], "model_left": ["x"], "model_right": ["y"], "winner_model": [None],
                        "outcome": ["tie"]})
    assert human_first_position_rate(tie) is None and human_first_position_rate(tie.iloc[:0]) is None


def test_data_page_shows_the_rate_with_its_interval(monkeypatch, sqlite_url):
    engine = open_store(sqlite_url)
    seed_demo(engine, DEMO / "items.jsonl", DEMO / "battles.jsonl")
    expected = human_first_position_rate(load_votes(engine, "demo"))
    engine.dispose()
    at = start(monkeypatch, sqlite_url)
    at.switch_page("voting/pages/data.py").run()
    assert not at.exception
    metric = next(m for m in at.metric if m.label.startswith("Human first-position rate"))
    assert metric.value == f"{expected['value']:.1%}"
    assert any(f"95% interval {expected['lower']:.1%} – {expected['upper']:.1%}" in c.value for c in at.caption)
