"""Running a round from the Data page: per-voter statistics (checked against hand-counted truth), the vote
browser, the import preview (nothing written; no temp path in a message) and deleting a dataset with its
votes archived (AppTest drives the page; the library functions are checked directly)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from tests.voting.conftest import MODELS, tiny_items
from tests.voting.test_vote_page import start
from voting.archive import archive_dataset, archived_votes
from voting.import_preview import NOTHING, nothing_imported, preview_upload, read_upload
from voting.items import ItemDataError
from voting.pages.data import import_file
from voting.store import (
    Vote,
    count_rows,
    list_datasets,
    load_votes,
    open_store,
    record_skip,
    record_vote,
    vote_tallies,
)
from voting.voter_stats import filter_votes, load_skips, voter_stats

X, Y, Z = sorted(MODELS)


def frame(at, column: str) -> pd.DataFrame:  # noqa: ANN001
    """The page's table holding ``column`` (AppTest does not expose a dataframe's key)."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert len(found) == 1, [list(d.value.columns) for d in at.dataframe]
    return found[0]


def cast(engine, voter: str, item: str, left: str, right: str, choice: str, seconds: float,  # noqa: ANN001
         reason: str = "") -> None:
    record_vote(engine, Vote(voter, "tiny", item, left, right, choice, shown_at=1000.0, reason=reason))
    with engine.begin() as conn:  # the time the voter took: voted_at is stamped at insert
        conn.exec_driver_sql("UPDATE votes SET voted_at = ? WHERE voter = ? AND item_id = ?",
                             (1000.0 + seconds, voter, item))


@pytest.fixture()
def round_url(seeded_url):
    """Three voters on ``tiny``: ann and bob agree on q000 and q001, cy goes against them; cy votes fast."""
    engine = open_store(seeded_url)
    cast(engine, "ann", "q000", X, Y, "A", 20.0, reason="x is right")  # x wins (identity A)
    cast(engine, "bob", "q000", Y, X, "B", 30.0)  # x wins, shown on the right
    cast(engine, "cy", "q000", X, Y, "B", 1.0)  # y wins
    cast(engine, "ann", "q001", X, Y, "tie", 10.0)
    cast(engine, "bob", "q001", X, Y, "tie", 12.0)
    cast(engine, "cy", "q001", X, Y, "bothbad", 2.0)  # a tie too, by identity: agrees
    cast(engine, "ann", "q002", X, Z, "A", 40.0)  # nobody else: no shared unit
    cast(engine, "cy", "q003", Y, Z, "A", 3.0)
    record_skip(engine, "cy", "tiny", "q002")
    engine.dispose()
    return seeded_url


def test_voter_statistics_match_a_hand_count(round_url):
    engine = open_store(round_url)
    stats = voter_stats(load_votes(engine, "tiny"), load_skips(engine, "tiny")).set_index("voter")
    assert list(stats.index) == ["ann", "cy", "bob"]  # by votes, most first (ann 3, cy 3, bob 2; then by name)
    assert stats.loc["ann"].votes == 3 and stats.loc["ann"].median_s == 20.0 and stats.loc["ann"].fast_votes == 0
    assert stats.loc["cy"].median_s == 2.0 and stats.loc["cy"].fast_votes == 3
    assert stats.loc["bob"].median_s == 21.0
    assert stats.loc["ann"].tie_rate == pytest.approx(1 / 3) and stats.loc["cy"].bothbad_rate == pytest.approx(1 / 3)
    assert stats.loc["cy"].skips == 1 and stats.loc["cy"].skip_rate == pytest.approx(1 / 4)
    assert stats.loc["ann"].skip_rate == 0.0
    # q000: ann's others split (bob x, cy y): no majority, likewise bob's; cy's others say x 2 to 0 and cy
    # said y: a disagreement. q001: everyone's label is a tie. q002 and q003 have no other voter.
    assert stats.loc["ann"].agree_with_others == 1.0 and stats.loc["ann"].shared_units == 1
    assert stats.loc["bob"].agree_with_others == 1.0 and stats.loc["bob"].shared_units == 1
    assert stats.loc["cy"].agree_with_others == 0.5 and stats.loc["cy"].shared_units == 2


def test_majority_needs_a_strict_winner_among_the_others():
    votes = pd.DataFrame({"voter": ["a", "b", "c"], "item_id": ["i"] * 3, "model_left": ["m", "m", "m"],
                          "model_right": ["n", "n", "n"], "winner_model": ["m", "n", None],
                          "outcome": ["win", "win", "tie"], "shown_at": [0.0] * 3, "voted_at": [9.0] * 3})
    stats = voter_stats(votes).set_index("voter")
    assert stats["shared_units"].tolist() == [0, 0, 0]  # each voter's others split 1 to 1: no majority
    assert stats["agree_with_others"].isna().all() and stats["median_s"].tolist() == [9.0] * 3


def test_filter_votes_by_voter_item_model_and_click(round_url):
    votes = load_votes(open_store(round_url), "tiny")
    assert filter_votes(votes, voter="cy")["item_id"].tolist() == ["q000", "q001", "q003"]
    assert filter_votes(votes, item_id="q000", choice="B")["voter"].tolist() == ["bob", "cy"]
    assert filter_votes(votes, model=Z)["item_id"].tolist() == ["q002", "q003"]
    assert filter_votes(votes, choice="bothbad")["voter"].tolist() == ["cy"]


def test_data_page_shows_sortable_voter_stats_and_the_vote_browser(monkeypatch, round_url):
    at = start(monkeypatch, round_url)
    at.switch_page("voting/pages/data.py").run()
    stats = frame(at, "fast votes")
    assert stats["voter"].tolist() == ["ann", "cy", "bob"] and stats.set_index("voter").loc["cy", "fast votes"] == 3
    table = frame(at, "reason")
    assert len(table) == 8
    at.selectbox(key="browse_voter").select("ann").run()
    at.selectbox(key="browse_choice").select("A").run()
    table = frame(at, "reason")
    assert table["item_id"].tolist() == ["q000", "q002"] and table["reason"].tolist()[0] == "x is right"
    at.selectbox(key="browse_vote").select(int(table["id"].iloc[0])).run()
    assert any("Why? x is right" in t.value for t in at.get("text"))
    body = next(h.proto.body for h in at.get("html") if "data-item=" in h.proto.body)
    assert 'data-item="q000"' in body and "Prompt number 0?" in body and "<script" not in body


def test_the_voters_table_shows_words_percentages_and_dashes(monkeypatch, round_url):
    """Before: snake_case headers, ``None`` for unknown, and ``32%`` beside ``32.17%`` (Streamlit's "percent")."""
    from tests.voting.test_leaderboard_page import shown

    at = start(monkeypatch, round_url)
    at.switch_page("voting/pages/data.py").run()
    element = next(d for d in at.dataframe if "fast votes" in d.value.columns)
    table = shown(element).set_index("voter")
    assert list(table.columns) == ["votes", "median s / vote", "tie rate", "both-bad rate", "skips", "skip rate",
                                   "agrees with others", "shared items", "fast votes"]
    assert table.loc["ann", "tie rate"] == "33.3%" and table.loc["ann", "median s / vote"] == "20.0"
    assert table.loc["cy", "both-bad rate"] == "33.3%" and table.loc["ann", "skip rate"] == "0.0%"
    rates = table[["tie rate", "both-bad rate", "skip rate", "agrees with others"]].stack()
    assert rates.str.fullmatch(r"[0-9]+\.[0-9]%|—").all(), rates.tolist()
    assert table.loc["ann", "votes"] == "3" and "None" not in table.to_numpy().ravel().tolist()


def test_delete_archives_every_vote_and_needs_the_name(monkeypatch, round_url):
    engine = open_store(round_url)
    before = load_votes(engine, "tiny")
    at = start(monkeypatch, round_url)
    at.switch_page("voting/pages/data.py").run()
    assert at.button(key="delete_go").disabled
    at.text_input(key="delete_confirm_tiny").input("tin").run()
    assert at.button(key="delete_go").disabled  # the name must be typed in full
    at.text_input(key="delete_confirm_tiny").input("tiny").run()
    at.button(key="delete_go").click().run()
    assert "8 votes moved to archived_votes" in at.success[0].value
    assert list_datasets(engine) == [] and count_rows(engine, "items") == count_rows(engine, "answers") == 0
    assert count_rows(engine, "votes") == 0 and load_skips(engine).empty and vote_tallies(engine, "tiny").empty
    kept = archived_votes(engine, "tiny")
    cols = ["id", "voter", "item_id", "model_left", "model_right", "outcome", "winner_model", "reason", "voted_at"]
    pd.testing.assert_frame_equal(kept[cols].reset_index(drop=True), before[cols].reset_index(drop=True),
                                  check_dtype=False)
    with pytest.raises(ItemDataError, match="no such dataset"):
        archive_dataset(engine, "tiny")
    assert len(archived_votes(engine)) == 8  # the failed second delete changed nothing


def test_import_preview_counts_rows_and_problems_and_writes_nothing(seeded_url):
    engine = open_store(seeded_url)
    frame = tiny_items(3)
    payload = frame.to_csv(index=False).encode()
    p = preview_upload(engine, "fresh.csv", payload, "fresh")
    assert (p.items, p.models, p.answers, p.answers_per_item, p.problems) == (3, sorted(MODELS), 9, (3, 3), [])
    assert p.rows["item_id"].tolist() == ["q000", "q001", "q002"] and p.rows["answers"].tolist() == [3, 3, 3]
    clash = preview_upload(engine, "again.csv", payload, "tiny")  # tiny holds q000..q003 already
    assert len(clash.problems) == 1 and "already has item id(s)" in clash.problems[0]
    lopsided = frame.drop(index=[7, 8])  # q002 keeps one answer
    bad = preview_upload(engine, "bad.csv", lopsided.to_csv(index=False).encode(), "bad")
    assert bad.items == 0 and "bad.csv" in bad.problems[0] and "only one answer" in bad.problems[0]
    assert list_datasets(engine) == ["tiny"] and count_rows(engine, "items") == 4  # nothing was written


def test_import_errors_never_show_the_temp_path_and_say_nothing_was_imported_once(seeded_url, tmp_path):
    buf = io.BytesIO()
    pd.DataFrame({"a": np.arange(3)}).to_parquet(buf)
    for name, payload in [("broken.parquet", b"PAR1 not parquet"), ("cut.parquet", buf.getvalue()[:-9]),
                          ("bad.jsonl", b'{"item_id": '), ("bad.csv", b'item_id,prompt\n"a,b\n')]:
        for read in (read_upload, lambda n, p: import_file(open_store(seeded_url), n, p, "d")):  # page and CLI
            with pytest.raises(ItemDataError) as e:
                read(name, payload)
            text = str(e.value)
            assert text.startswith(name) and "/tmp" not in text and "tmp" not in text.replace(name, ""), text
    engine = open_store(seeded_url)
    with pytest.raises(ItemDataError) as e:
        from voting.store import import_items

        import_items(engine, read_upload("t.csv", tiny_items(2).to_csv(index=False).encode()), "tiny")
    message = nothing_imported(e.value)
    assert message.startswith(NOTHING) and message.lower().count("nothing was imported") == 1, message
