"""Votes tied to the round they were drawn for, in the store: a one-time round id checked and used in the
vote's transaction, a minimum time on the pair, "seen" as a fact of the store whatever the tab, and the
open-voting rate limits per guest and per client address."""

from __future__ import annotations

import time

import pytest

from tests.voting.conftest import round_button
from tests.voting.test_vote_page import current, login, shown_text, start
from voting.rounds import reissue
from voting.store import (
    DuplicateVote,
    Vote,
    VoteChecks,
    VoteRefused,
    issue_round,
    load_votes,
    open_store,
    record_skip,
    record_vote,
    undo_vote,
)

PAIR = ("quokka-13b", "marmoset-70b")


def _vote(item: str = "q001", voter: str = "ann", choice: str = "A") -> Vote:
    return Vote(voter, "tiny", item, *PAIR, choice)  # type: ignore[arg-type]


def test_a_round_votes_once_on_its_own_pair_only(seeded_url):
    engine = open_store(seeded_url)
    rid, _ = issue_round(engine, "ann", "tiny", "q001", *PAIR)
    for wrong in (_vote("q002"), _vote(voter="bob"), Vote("ann", "tiny", "q001", *PAIR[::-1], "A")):
        with pytest.raises(VoteRefused) as e:  # another item, voter or pair than the round was drawn for
            record_vote(engine, wrong, VoteChecks(rid))
        assert e.value.reason == "stale"
    with pytest.raises(VoteRefused, match="not 'ann'"):
        record_vote(engine, _vote(), VoteChecks("made-up"))
    record_vote(engine, _vote(), VoteChecks(rid))
    rid2, _ = issue_round(engine, "ann", "tiny", "q002", *PAIR)
    record_skip(engine, "ann", "tiny", "q002", round_id=rid2)
    for used in (rid, rid2):  # a replayed message: the round was used
        with pytest.raises(VoteRefused) as e:
            record_vote(engine, _vote("q002" if used == rid2 else "q001"), VoteChecks(used))
        assert e.value.reason == "stale"
    assert load_votes(engine)["item_id"].tolist() == ["q001"]


def test_no_vote_sooner_than_the_minimum_time_and_the_time_is_stored(seeded_url):
    engine = open_store(seeded_url)
    rid, shown = issue_round(engine, "ann", "tiny", "q001", *PAIR)
    with pytest.raises(VoteRefused) as e:
        record_vote(engine, _vote(), VoteChecks(rid, min_seconds=30))
    assert e.value.reason == "fast" and 29 < e.value.wait <= 30
    time.sleep(0.2)
    record_vote(engine, _vote(), VoteChecks(rid, min_seconds=0.2))  # the refusal left the round open
    stored = load_votes(engine).iloc[0]
    assert 0.2 <= stored["seconds_on_pair"] <= stored["voted_at"] - shown + 1e-6


def test_seen_is_a_fact_of_the_store(seeded_url):
    """After a revealed undo or a skip the item is seen, for every tab; after an undo with nothing revealed
    the voter may vote again."""
    engine = open_store(seeded_url)
    assert undo_vote(engine, record_vote(engine, _vote("q001")), "ann", revealed=True)
    record_skip(engine, "ann", "tiny", "q002")
    for item in ("q001", "q002"):
        with pytest.raises(DuplicateVote):
            record_vote(engine, _vote(item))
    assert undo_vote(engine, record_vote(engine, _vote("q003")), "ann", revealed=False)
    record_vote(engine, _vote("q003", choice="B"))
    record_vote(engine, _vote("q001", voter="bob"))  # another voter is not affected
    assert sorted(load_votes(engine)["item_id"]) == ["q001", "q003"]


def test_rate_limits_per_key_in_the_store(seeded_url):
    engine = open_store(seeded_url)
    rate = (("guest:g1", 2), ("addr:x", 3))
    for item in ("q000", "q001"):
        record_vote(engine, _vote(item, voter="guest-1"), VoteChecks(rate=rate))
    with pytest.raises(VoteRefused) as e:
        record_vote(engine, _vote("q002", voter="guest-1"), VoteChecks(rate=rate))
    assert e.value.reason == "rate"
    other = (("guest:g2", 2), ("addr:x", 3))  # a new guest id behind the same address
    record_vote(engine, _vote("q000", voter="guest-2"), VoteChecks(rate=other))
    with pytest.raises(VoteRefused, match="addr:x"):
        record_vote(engine, _vote("q001", voter="guest-2"), VoteChecks(rate=other))
    assert load_votes(engine)["voter"].str.startswith("guest-").sum() == 3


def test_the_page_refuses_a_vote_sooner_than_the_minimum_time(monkeypatch, seeded_url):
    at = login(start(monkeypatch, seeded_url, min_seconds="60"))  # the settings are read on every run
    first = current(at)
    round_button(at, "vote_A").click().run()
    assert "That was fast" in at.toast[0].value and load_votes(open_store(seeded_url)).empty
    assert current(at).item_id == first.item_id  # the same pair stays
    monkeypatch.setenv("PREFLAB_MIN_SECONDS", "0.5")
    time.sleep(max(0.0, first.shown_at + 0.6 - time.time()))
    round_button(at, "vote_A").click().run()
    vote = load_votes(open_store(seeded_url)).iloc[0]
    assert vote["item_id"] == first.item_id and vote["seconds_on_pair"] >= 0.6
    assert "Vote saved" in shown_text(at)


def test_undo_in_one_tab_then_a_vote_in_another_is_refused(monkeypatch, seeded_url):
    """Two tabs of one voter on the same item: vote in the first, see the names, Undo; the second tab's vote
    on that item must not land (the voter has seen which models answered)."""
    tabs = [login(start(monkeypatch, seeded_url)) for _ in range(2)]
    rnd = current(tabs[0])
    same = reissue(open_store(seeded_url), "ann", rnd)  # the second tab drew the same item (its own round)
    tabs[1].session_state["round"] = same
    tabs[1].run()
    round_button(tabs[0], "vote_A").click().run()
    assert f"`{rnd.left}`" in shown_text(tabs[0])  # the names are shown
    tabs[0].button(key="undo").click().run()
    round_button(tabs[1], "vote_B").click().run()
    assert load_votes(open_store(seeded_url)).empty
    assert "already voted" in tabs[1].toast[0].value
    assert current(tabs[1]).item_id != rnd.item_id


@pytest.mark.postgres
def test_the_store_rules_hold_on_postgresql(pg_clean_url):
    """The same transactions on PostgreSQL (several app processes share one): rounds, seen, rate limits."""
    from tests.voting.conftest import tiny_items
    from voting.items import load_items
    from voting.store import import_items

    import_items(open_store(pg_clean_url), load_items(tiny_items()), "tiny")
    test_a_round_votes_once_on_its_own_pair_only(pg_clean_url)
    with open_store(pg_clean_url).begin() as conn:
        conn.exec_driver_sql("DELETE FROM votes")
        conn.exec_driver_sql("DELETE FROM skips")
    test_seen_is_a_fact_of_the_store(pg_clean_url)
    test_rate_limits_per_key_in_the_store(pg_clean_url)


def test_the_next_pair_is_drawn_and_issued_by_the_library(seeded_url):
    """The vote page's next pair (voting.rounds.draw_round, typed ShownRound): an item the voter has not seen,
    issued as a round the vote's transaction accepts once; None when every item is done."""
    import numpy as np

    from voting.rounds import ShownRound, draw_round
    from voting.store import load_items_frame, vote_tallies

    engine = open_store(seeded_url)
    items = load_items_frame(engine, "tiny")
    prompts = dict(zip(items["item_id"], items["prompt"], strict=True))
    rng, done = np.random.default_rng(0), []
    while (shown := draw_round(engine, "ann", "tiny", items, prompts, vote_tallies(engine, "tiny"), rng)) is not None:
        assert isinstance(shown, ShownRound) and shown.item_id not in done and shown.prompt == prompts[shown.item_id]
        vote = Vote("ann", "tiny", shown.item_id, shown.left, shown.right, "A")
        record_vote(engine, vote, VoteChecks(shown.round_id))
        done.append(shown.item_id)
    assert sorted(done) == sorted(items["item_id"])


def test_the_pair_on_screen_stays_until_it_is_answered_and_another_dataset_draws_anew(seeded_url):
    """voting.rounds.pair_to_show, the one call the vote page makes: the round on screen is kept (no new round is
    issued on a rerun), a round of another dataset is replaced by a new one of this dataset, None when done."""
    import numpy as np

    from voting.rounds import ShownRound, pair_to_show
    from voting.store import load_items_frame, vote_tallies

    engine = open_store(seeded_url)
    items = load_items_frame(engine, "tiny")
    prompts = dict(zip(items["item_id"], items["prompt"], strict=True))
    rng = np.random.default_rng(1)

    def show(shown: ShownRound | None) -> ShownRound | None:
        return pair_to_show(engine, "ann", "tiny", shown, items, prompts, vote_tallies(engine, "tiny"), rng)

    first = show(None)
    assert first is not None and first.dataset == "tiny" and show(first) is first
    elsewhere = ShownRound("other", "x1", "m1", "m2", "Other prompt?", "not-a-round", 0.0)
    drawn = show(elsewhere)
    assert drawn is not None and drawn.dataset == "tiny" and drawn.round_id not in (first.round_id, "not-a-round")
    record_vote(engine, Vote("ann", "tiny", first.item_id, first.left, first.right, "A"), VoteChecks(first.round_id))
    while (shown := show(None)) is not None:
        vote = Vote("ann", "tiny", shown.item_id, shown.left, shown.right, "B")
        record_vote(engine, vote, VoteChecks(shown.round_id))
    assert sorted(load_votes(engine)["item_id"]) == sorted(items["item_id"])
