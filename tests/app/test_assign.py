"""Which pair comes next: no repeats, overlap, balanced coverage, randomised sides, the arena's active pick."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from voting.assign import eligible_items, next_round, tally_counts

MODELS = ["m0", "m1", "m2"]


def items(n: int = 5, models: list[str] = MODELS) -> pd.DataFrame:
    return pd.DataFrame({"item_id": [f"i{k}" for k in range(n)], "models": [list(models)] * n})


def tallies(rows: list[tuple[str, str, str, str | None]]) -> pd.DataFrame:
    """(item, left, right, winner or None for a tie)."""
    return pd.DataFrame([{"item_id": i, "model_left": a, "model_right": b, "winner_model": w,
                          "outcome": "win" if w else "tie", "voter": "v"} for i, a, b, w in rows],
                        columns=["item_id", "model_left", "model_right", "winner_model", "outcome", "voter"])


def test_seen_and_full_items_are_not_offered():
    t = tallies([("i0", "m0", "m1", "m0"), ("i1", "m0", "m1", "m1"), ("i1", "m1", "m2", None)])
    assert eligible_items(items(3), {"i2"}, t, overlap=0)["item_id"].tolist() == ["i0", "i1"]
    assert eligible_items(items(3), set(), t, overlap=2)["item_id"].tolist() == ["i0", "i2"]
    rng = np.random.default_rng(0)
    assert next_round(items(3), {"i0", "i1", "i2"}, t, rng) is None


def test_balanced_takes_the_least_voted_item_and_pair():
    t = tallies([("i0", "m0", "m1", "m0"), ("i1", "m0", "m1", "m0"), ("i1", "m0", "m2", "m0"),
                 ("i1", "m0", "m1", "m0"), ("i1", "m0", "m1", "m0"), ("i2", "m1", "m2", None)])
    rnd = next_round(items(3), set(), t, np.random.default_rng(1), "balanced", explore=0.0)
    # i0 and i2 have one vote each (i1 five); pairs (m0,m1)=4, (m0,m2)=1, (m1,m2)=1 -> never (m0, m1)
    assert rnd.item_id in ("i0", "i2") and {rnd.model_left, rnd.model_right} != {"m0", "m1"}


def test_sides_are_randomised():
    rng = np.random.default_rng(7)
    lefts = [next_round(items(1, ["a", "b"]), set(), tallies([]), rng, "uniform").model_left for _ in range(400)]
    n_a = lefts.count("a")
    assert 160 < n_a < 240  # Binomial(400, 1/2): 4 standard deviations each side


def test_active_picks_the_pair_with_the_largest_gain_among_showable_ones():
    from arena.simulation.sampling import estimate_ratings, pair_gains, votes_per_pair

    models = ["m0", "m1", "m2", "m3"]
    rows = [("i0", "m0", "m1", "m0")] * 30 + [("i0", "m1", "m2", "m1")] * 3 + [("i0", "m2", "m3", None)] * 2
    t = tallies(rows)
    pool = pd.DataFrame({"item_id": ["x", "y"], "models": [["m0", "m1", "m2"], ["m1", "m3"]]})
    showable = {("m0", "m1"), ("m0", "m2"), ("m1", "m2"), ("m1", "m3")}
    counts = tally_counts(t, models)
    gains = pair_gains(votes_per_pair(counts), estimate_ratings(counts))
    best = max(showable, key=lambda p: gains[models.index(p[0]), models.index(p[1])])
    rnd = next_round(pool, set(), t, np.random.default_rng(3), "active", explore=0.0)
    assert tuple(sorted((rnd.model_left, rnd.model_right))) == best
    assert rnd.item_id == ("y" if best == ("m1", "m3") else "x")
    assert best != ("m0", "m1")  # the pair with 30 votes is the least informative


def test_active_without_votes_falls_back_to_balanced():
    rnd = next_round(items(2), set(), tallies([]), np.random.default_rng(0), "active")
    assert rnd.item_id in ("i0", "i1") and rnd.model_left != rnd.model_right


@pytest.mark.parametrize("strategy", ["uniform", "balanced", "active"])
def test_a_voter_sees_each_item_once(strategy):
    rng = np.random.default_rng(5)
    seen, rows = set(), []
    while (rnd := next_round(items(6), seen, tallies(rows), rng, strategy)) is not None:
        assert rnd.item_id not in seen
        seen.add(rnd.item_id)
        rows.append((rnd.item_id, rnd.model_left, rnd.model_right, rnd.model_left))
    assert len(seen) == 6 and all(a != b and {a, b} <= set(MODELS) for _, a, b, _ in rows)
