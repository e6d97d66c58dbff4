"""Build a vote store with the code of the last released version (run by ``test_store_upgrade.py`` with that
release's ``voting``, ``preflab``, ``arena`` and ``judge`` first on ``PYTHONPATH``, from ``git archive``).

Usage: ``python release_store.py SQLALCHEMY_URL``. It fills every table a voter or an admin writes: items and
answers (two datasets), votes (wins, a tie, a both-bad), an undone vote, a skip, rounds, invites (one
revoked), an open-voting guest, judging criteria, a live battle voted on (two turns), and a deleted dataset
whose votes went to the archive. Only the release's public functions are used, as the app calls them.
"""

from __future__ import annotations

import sys

import pandas as pd

import voting

MODELS = ("zephyrine-7b", "quokka-13b", "marmoset-70b")


def items(prefix: str) -> pd.DataFrame:
    return pd.DataFrame([{"item_id": f"{prefix}{i}", "prompt": f"Prompt {i} of {prefix}?", "category": "poetry",
                          "model": m, "answer": f"Answer {i} by {m}."} for i in range(4) for m in MODELS])


def votes(engine, dataset: str, voter: str) -> list[int]:  # noqa: ANN001
    from voting.store import Vote, VoteChecks, issue_round, record_vote

    ids = []
    for i, choice in enumerate(("A", "B", "tie", "bothbad")):
        left, right = MODELS[i % 3], MODELS[(i + 1) % 3]
        round_id, shown = issue_round(engine, voter, dataset, f"{dataset[0]}{i}", left, right)
        ids.append(record_vote(engine, Vote(voter, dataset, f"{dataset[0]}{i}", left, right, choice, shown,
                                            f"reason {i}"), VoteChecks(round_id=round_id)))
    return ids


def battle(engine) -> None:  # noqa: ANN001
    from judge.providers.generation import Generation  # the release's module path (today: llm.providers)

    from voting.battles import open_battles, save_turn, start_battle, vote_battle

    open_battles(engine)  # the release created this table on first use
    bid = start_battle(engine, "ann", MODELS[0], MODELS[1])
    conv_a = [{"role": "user", "content": "Write a haiku."}, {"role": "assistant", "content": "Leaves fall."}]
    conv_b = [{"role": "user", "content": "Write a haiku."}, {"role": "assistant", "content": "Snow melts."}]
    done = {side: Generation(text, 5, 3, "stop", 0.5) for side, text in (("a", "Leaves fall."), ("b", "Snow melts."))}
    assert save_turn(engine, bid, conv_a, conv_b, done)
    vote_battle(engine, bid, "ann", "B")
    start_battle(engine, "bob", MODELS[1], MODELS[2])  # still answering: never counted


def main(url: str) -> None:
    from voting.access import issue_guest, issue_invite, revoke_invites
    from voting.archive import archive_dataset
    from voting.items import load_items
    from voting.store import import_items, open_store, record_skip, set_criteria, undo_vote

    engine = open_store(url)
    import_items(engine, load_items(items("p")), "poems")
    import_items(engine, load_items(items("o")), "old")
    votes(engine, "poems", "ann")
    votes(engine, "poems", "bob")
    undone = votes(engine, "poems", "cy")[0]
    assert undo_vote(engine, undone, "cy")
    record_skip(engine, "cy", "poems", "p3", round=2)
    votes(engine, "old", "ann")
    archive_dataset(engine, "old", by="admin")
    set_criteria(engine, "poems", "Prefer **short** poems.")
    issue_invite(engine, "ann")
    issue_invite(engine, "dan")
    revoke_invites(engine, "dan")
    issue_guest(engine)
    battle(engine)
    engine.dispose()
    print(voting.__file__)  # the caller checks that the release's code wrote the store


if __name__ == "__main__":
    main(sys.argv[1])
