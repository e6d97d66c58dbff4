"""The leaderboard page reads a bounded number of rows at 1k and 100k stored votes, with every filter, and
shows the fit on every vote; bulk loads leave the counts the triggers would have kept; the voters and date
range of the filters come from the indexes and equal the votes'."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from arena.simulation.simulate import uniform_pairs
from tests.voting.conftest import MODELS, tiny_items
from tests.voting.test_vote_page import APP
from tests.voting.test_vote_perf import RowCounter
from voting import reads
from voting.bulk import bulk_insert_votes
from voting.items import load_items
from voting.store import (
    DuplicateVote,
    Vote,
    count_rows,
    import_items,
    load_votes,
    open_store,
    record_vote,
    vote_summary,
    vote_tallies,
)

DAY = 86_400.0
T0 = 1.7e9


def votes_frame(n: int, dataset: str = "tiny", start: int = 0, voters: int | None = None) -> pd.DataFrame:
    """``n`` votes on the tiny dataset's 4 items over 10 days; one voter per vote unless ``voters`` is given
    (then voter k mod ``voters``, a new round per pass over the items, so the unique key holds)."""
    k = np.arange(start, start + n)
    rng = np.random.default_rng(start + n)
    models = np.array(MODELS)
    a, b = uniform_pairs(n, 3, rng)
    who = k if voters is None else k % voters
    turn = np.zeros(n, int) if voters is None else k // voters
    outcome = rng.choice(["win", "win", "win", "tie", "tie (bothbad)"], n)
    winner = np.where(rng.random(n) < 0.6, models[a], models[b])
    return pd.DataFrame({
        "voter": np.char.add("v", who.astype(str)), "dataset": dataset,
        "item_id": np.char.add("q00", (turn % 4).astype(str)) if voters else np.char.add("q00", (k % 4).astype(str)),
        "round": turn // 4 + 1, "model_left": models[a], "model_right": models[b],
        "shown_order": np.where(models[a] < models[b], "xy", "yx"), "outcome": outcome,
        "winner_model": np.where(outcome == "win", winner, None), "voted_at": T0 + 10 * DAY * (k - start) / n,
        "source": "test"})


def two_category_store(url: str, n_votes: int) -> None:
    items = tiny_items()
    items["category"] = np.where(items["item_id"].isin(["q000", "q001"]), "poetry", "test")
    engine = open_store(url)
    import_items(engine, load_items(items), "tiny")
    bulk_insert_votes(engine, votes_frame(n_votes))
    engine.dispose()


def cells(engine) -> dict:  # noqa: ANN001
    t = vote_tallies(engine, "tiny").fillna({"winner_model": ""})
    return t.set_index(["item_id", "model_left", "model_right", "outcome", "winner_model"])["n"].to_dict()


def row_cells(votes: pd.DataFrame) -> dict:
    v = votes.fillna({"winner_model": ""})
    return v.groupby(["item_id", "model_left", "model_right", "outcome", "winner_model"]).size().to_dict()


@pytest.fixture(params=["sqlite", "postgresql"])
def any_url(request, sqlite_url):  # noqa: ANN001
    if request.param == "sqlite":
        return sqlite_url
    return request.getfixturevalue("pg_clean_url")


def test_bulk_load_counts_equal_the_trigger_counts_and_the_triggers_keep_counting(any_url):
    engine = open_store(any_url)
    import_items(engine, load_items(tiny_items()), "tiny")
    bulk_insert_votes(engine, votes_frame(300, voters=7))
    bulk_insert_votes(engine, votes_frame(200, start=300))  # onto existing votes: added, not replaced
    record_vote(engine, Vote("late", "tiny", "q001", MODELS[0], MODELS[1], "B"))  # the trigger is back
    assert count_rows(engine) == 501
    assert cells(engine) == row_cells(load_votes(engine, "tiny"))
    with pytest.raises(Exception, match="(?i)unique|duplicate"):  # a clash fails the whole load
        bulk_insert_votes(engine, votes_frame(10, start=300))
    assert count_rows(engine) == 501 and sum(cells(engine).values()) == 501
    with pytest.raises(DuplicateVote):
        record_vote(engine, Vote("late", "tiny", "q001", MODELS[0], MODELS[1], "A"))
    engine.dispose()


def test_vote_summary_from_the_indexes_equals_the_votes(any_url):
    engine = open_store(any_url)
    import_items(engine, load_items(tiny_items()), "tiny")
    import_items(engine, load_items(tiny_items()), "other")
    bulk_insert_votes(engine, votes_frame(400, voters=30))
    late = votes_frame(50, dataset="other", start=10_000, voters=5).assign(voted_at=lambda d: d["voted_at"] + 99 * DAY)
    bulk_insert_votes(engine, late.assign(voter=lambda d: "w" + d["voter"]))
    votes = load_votes(engine)
    for dataset in (None, "tiny", "other"):
        mine = votes if dataset is None else votes[votes["dataset"] == dataset]
        got = vote_summary(engine, dataset)
        assert got == {"voters": sorted(mine["voter"].unique()), "more_voters": False,
                       "first": mine["voted_at"].min(), "last": mine["voted_at"].max()}
        capped = vote_summary(engine, dataset, max_voters=4)
        assert capped["voters"] == got["voters"][:4] and capped["more_voters"] is (len(got["voters"]) > 4)
    empty = vote_summary(engine, "nothing-here")
    assert empty == {"voters": [], "more_voters": False, "first": None, "last": None}
    engine.dispose()


def test_an_old_store_gets_the_time_index(sqlite_url):
    engine = open_store(sqlite_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP INDEX ix_votes_dataset_time")
    engine.dispose()
    import sqlalchemy as sa

    names = {i["name"] for i in sa.inspect(open_store(sqlite_url)).get_indexes("votes")}
    assert "ix_votes_dataset_time" in names


def _page(monkeypatch, url: str) -> AppTest:
    monkeypatch.setenv("PREFLAB_DB", url)
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.switch_page("voting/pages/leaderboard.py").run()
    at.select_slider(key="lb_boot").set_value(100).run()
    assert not at.exception
    return at


FILTERS = ("none", "category", "voters", "dates", "exclude")


def _voters(n_votes: int) -> list[str]:
    """500 voters spread over the whole time range (one vote each)."""
    return [f"v{k}" for k in range(0, n_votes, n_votes // 500)]


def _filtered_reruns(monkeypatch, url: str, n_votes: int) -> tuple[list[list[int]], AppTest]:
    """Rows fetched by each query of one rerun per filter (added one after another), and the page."""
    at, out = _page(monkeypatch, url), []
    steps = {
        "none": lambda: at.run(),
        "category": lambda: at.multiselect(key="lb_categories").set_value(["poetry"]).run(),
        # over MAX_VOTER_OPTIONS voters: typed ids
        "voters": lambda: at.text_input(key="lb_voter_ids").input(", ".join(_voters(n_votes))).run(),
        "dates": lambda: at.date_input(key="lb_dates").set_value(
            (dt.date.fromtimestamp(T0 + 2 * DAY), dt.date.fromtimestamp(T0 + 6 * DAY))).run(),
        "exclude": lambda: at.multiselect(key="lb_exclude").set_value([MODELS[2]]).run(),
    }
    for name in FILTERS:
        with RowCounter() as counter:
            steps[name]()
        assert not at.exception, (name, at.exception)
        out.append(counter.rows(url))
    return out, at


def test_leaderboard_page_rows_do_not_grow_with_stored_votes_and_equal_the_fit_on_every_vote(monkeypatch, tmp_path):
    """Old code: the voter filter listed every distinct voter (one per vote here), 1k rows then 100k."""
    from arena.leaderboard import fit_leaderboard
    from arena.leaderboard_options import IntervalOptions
    from voting.pages.leaderboard import keep
    from voting.votes import votes_to_battles

    monkeypatch.setattr(reads, "MAX_VOTER_OPTIONS", 50)
    small, big = f"sqlite:///{tmp_path / 'small.db'}", f"sqlite:///{tmp_path / 'big.db'}"
    two_category_store(small, 1_000)
    two_category_store(big, 100_000)
    small_rows, _ = _filtered_reruns(monkeypatch, small, 1_000)
    big_rows, at = _filtered_reruns(monkeypatch, big, 100_000)
    for name, s, b in zip(FILTERS, small_rows, big_rows, strict=True):
        assert len(s) == len(b), (name, "the number of queries depends on the stored votes")
        assert max(b) <= 100 and sum(b) <= sum(s) + 20, (name, s, b)
    # the page's table after all filters = the fit on the same votes loaded row by row
    engine = open_store(big)
    since = dt.datetime.combine(dt.date.fromtimestamp(T0 + 2 * DAY), dt.time()).timestamp()
    until = dt.datetime.combine(dt.date.fromtimestamp(T0 + 7 * DAY), dt.time()).timestamp()
    votes = keep(load_votes(engine, "tiny", _voters(100_000), since, until), ("poetry",),
                 (MODELS[2],))
    assert 20 < len(votes) < 500
    # the page counts votes per model pair, so its unit is the battle (its caption says so)
    expect = fit_leaderboard(votes_to_battles(votes), IntervalOptions(n_bootstrap=100, unit="battle"))
    expect = expect.table.set_index("model")
    shown = at.dataframe[0].value.set_index("model")
    assert sorted(shown.index) == sorted(expect.index) == sorted(MODELS[:2])
    for col in ("rating", "lower", "upper"):
        np.testing.assert_allclose(shown[col], expect.loc[shown.index, col], atol=0.051)
    for col in ("battles", "wins", "ties"):
        np.testing.assert_array_equal(shown[col], expect.loc[shown.index, col])


def test_the_date_range_follows_new_votes_until_the_voter_narrows_it(monkeypatch, seeded_url):
    """Old code: the widget kept the first render's range, so a later day's votes fell outside it (left out of
    the leaderboard) and the page counted every vote row by row."""
    engine = open_store(seeded_url)
    bulk_insert_votes(engine, votes_frame(200, voters=20))  # 10 days from T0
    at = _page(monkeypatch, seeded_url)
    assert "200 votes" in at.caption[0].value
    late = votes_frame(30, start=500, voters=3).assign(voter=lambda d: "late-" + d["voter"],
                                                       voted_at=lambda d: d["voted_at"] + 20 * DAY)
    bulk_insert_votes(engine, late)
    at.run()
    assert not at.exception and "230 votes" in at.caption[0].value
    assert at.date_input(key="lb_dates").value[1] == dt.date.fromtimestamp(late["voted_at"].max())
    narrowed = (dt.date.fromtimestamp(T0), dt.date.fromtimestamp(T0 + 4 * DAY))
    at.date_input(key="lb_dates").set_value(narrowed).run()
    n_narrow = int(at.caption[0].value.split()[0])
    assert 0 < n_narrow < 200
    bulk_insert_votes(engine, late.assign(voter=lambda d: "later-" + d["voter"],
                                          voted_at=lambda d: d["voted_at"] + 5 * DAY))
    at.run()  # a narrowed range stays as chosen
    assert at.date_input(key="lb_dates").value == narrowed and int(at.caption[0].value.split()[0]) == n_narrow
    engine.dispose()
