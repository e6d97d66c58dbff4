"""Dataset validation, storage transactions and exports (real SQLite files)."""

from __future__ import annotations

import json
import time

import pandas as pd
import pytest
import sqlalchemy as sa

from arena.io.battles import load_battles
from tests.app.conftest import MODELS, tiny_items
from voting.items import ItemDataError, ItemSet, load_items
from voting.store import (
    DuplicateVote,
    Vote,
    count_rows,
    import_items,
    load_votes,
    open_store,
    record_skip,
    record_vote,
    seen_items,
    undo_vote,
)
from voting.votes import agreement, judge_labels, seed_demo, votes_to_battles


def write_jsonl(path, rows):  # noqa: ANN001, ANN201
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_long_and_pairs_layouts_load_to_the_same_items(tmp_path):
    df = tiny_items(2)
    long = load_items(write_jsonl(tmp_path / "long.jsonl", df.to_dict("records")))
    pairs = [{"item_id": r.item_id, "prompt": r.prompt, "model_x": x, "answer_x": ax, "model_y": y, "answer_y": ay}
             for r in df.drop_duplicates("item_id").itertuples()
             for (x, ax), (y, ay) in [((MODELS[0], "a0"), (MODELS[1], "a1")), ((MODELS[0], "a0"), (MODELS[2], "a2"))]]
    pairset = load_items(write_jsonl(tmp_path / "pairs.jsonl", pairs))
    assert long.n_items == pairset.n_items == 2
    assert sorted(long.models) == sorted(pairset.models) == sorted(MODELS)
    assert len(pairset.answers) == 6  # model_x repeated in two pairs, stored once


@pytest.mark.parametrize(("rows", "line", "field", "words"), [
    ([{"item_id": "a", "prompt": "p", "answer": "x"}], None, "model", "missing column"),
    ([{"item_id": "a", "prompt": "p", "model": "m1", "answer": "x"},
      {"item_id": "a", "prompt": "p", "model": "m2", "answer": "y"},
      {"item_id": "a", "prompt": "other", "model": "m3", "answer": "z"}], 3, "item_id", "duplicate item id"),
    ([{"item_id": "a", "prompt": "p", "model": "m1", "answer": "x"},
      {"item_id": "a", "prompt": "p", "model": "m1", "answer": "y"}], 2, "item_id", "duplicate item id"),
    ([{"item_id": "a", "prompt": "p", "model": "m1", "answer": "x"},
      {"item_id": "a", "prompt": "p", "model": "m2", "answer": "y"},
      {"item_id": "b", "prompt": "q", "model": "m1", "answer": "z"}], 3, "model", "only one answer"),
    ([{"item_id": "a", "prompt": "p", "model": "m1", "answer": " "},
      {"item_id": "a", "prompt": "p", "model": "m2", "answer": "y"}], 1, "answer", "empty value"),
])
def test_bad_datasets_name_file_line_and_field(tmp_path, rows, line, field, words):
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(ItemDataError) as e:
        load_items(path)
    assert (e.value.line, e.value.field) == (line, field)
    assert words in str(e.value) and str(path) in str(e.value)


def test_csv_errors_count_the_header_line(tmp_path):
    path = tmp_path / "items.csv"
    path.write_text("item_id,prompt,model,answer\na,p,m1,x\nb,q,m1,y\nb,q,m2,z\n")
    with pytest.raises(ItemDataError, match=r"line 2.*'a' has only one answer"):
        load_items(path)


def test_import_is_one_transaction(sqlite_url):
    engine = open_store(sqlite_url)
    good = load_items(tiny_items(3))
    # An answer for an item that is not in the items table violates the foreign key at the very end.
    broken = ItemSet(good.items, pd.concat([good.answers, pd.DataFrame(
        [{"item_id": "ghost", "model": "m", "answer": "x"}])], ignore_index=True))
    with pytest.raises(sa.exc.IntegrityError):
        import_items(engine, broken, "d")
    assert count_rows(engine, "items") == count_rows(engine, "answers") == 0
    assert import_items(engine, good, "d") == 3
    with pytest.raises(ItemDataError, match="already has item id"):
        import_items(engine, good, "d")
    assert count_rows(engine, "items") == 3 and count_rows(engine, "answers") == 9


def test_vote_row_stores_identity_order_and_version(seeded_url):
    engine = open_store(seeded_url)
    t0 = time.time()
    vid = record_vote(engine, Vote("ann", "tiny", "q001", "quokka-13b", "marmoset-70b", "B", t0, "clearer"))
    row = load_votes(engine).set_index("id").loc[vid]
    assert (row.model_left, row.model_right, row.winner_model, row.outcome) == (
        "quokka-13b", "marmoset-70b", "marmoset-70b", "win")
    assert row.shown_order == "yx"  # the alphabetically first model (marmoset) was on the right
    assert row.reason == "clearer" and row.app_version and row.shown_at == pytest.approx(t0)
    assert row.voted_at >= t0
    with pytest.raises(DuplicateVote):  # a double click, or the same voter in a second tab
        record_vote(engine, Vote("ann", "tiny", "q001", "zephyrine-7b", "quokka-13b", "A"))
    assert count_rows(engine) == 1
    record_skip(engine, "ann", "tiny", "q002")
    assert seen_items(engine, "ann", "tiny") == {"q001", "q002"}
    assert seen_items(engine, "bob", "tiny") == set()


def test_undo_only_own_recent_vote(seeded_url):
    engine = open_store(seeded_url)
    vid = record_vote(engine, Vote("ann", "tiny", "q001", "quokka-13b", "marmoset-70b", "tie"))
    assert not undo_vote(engine, vid, "bob")  # someone else's vote
    assert not undo_vote(engine, vid, "ann", window_s=-1)  # outside the window
    assert undo_vote(engine, vid, "ann")
    assert count_rows(engine) == 0 and count_rows(engine, "undone_votes") == 1  # kept for the audit trail
    assert not undo_vote(engine, vid, "ann")  # taken back once only
    assert count_rows(engine, "undone_votes") == 1


def test_schema_migration_adds_missing_columns(sqlite_url):
    raw = sa.create_engine(sqlite_url)
    with raw.begin() as conn:  # an older schema without "reason" and "app_version"
        conn.exec_driver_sql("CREATE TABLE votes (id INTEGER PRIMARY KEY, voter VARCHAR(200) NOT NULL, "
                             "dataset VARCHAR(200) NOT NULL, item_id VARCHAR(200) NOT NULL, round INTEGER NOT NULL, "
                             "model_left VARCHAR(200) NOT NULL, model_right VARCHAR(200) NOT NULL, "
                             "shown_order VARCHAR(2) NOT NULL, outcome VARCHAR(16) NOT NULL, "
                             "winner_model VARCHAR(200), shown_at FLOAT, voted_at FLOAT NOT NULL, source VARCHAR(200))")
    engine = open_store(sqlite_url)
    assert {"reason", "app_version"} <= {c["name"] for c in sa.inspect(engine).get_columns("votes")}
    record_vote(engine, Vote("ann", "tiny", "q1", "a", "b", "A", reason="ok"))
    assert load_votes(engine)["reason"].tolist() == ["ok"]


def test_exports_battles_labels_and_agreement(seeded_url, tmp_path):
    engine = open_store(seeded_url)
    x, y, z = sorted(MODELS)  # marmoset < quokka < zephyrine
    for voter, left, right, choice in [("v1", x, y, "A"), ("v2", y, x, "B"), ("v3", y, x, "A")]:
        record_vote(engine, Vote(voter, "tiny", "q000", left, right, choice))
    record_vote(engine, Vote("v1", "tiny", "q001", z, x, "bothbad"))
    votes = load_votes(engine)
    battles = votes_to_battles(votes)
    assert battles.df["winner"].astype(str).tolist() == ["model_a", "model_b", "model_a", "tie (bothbad)"]
    assert battles.df["judge"].tolist() == ["v1", "v2", "v3", "v1"]
    # Round trip through the Chatbot Arena JSON the rest of preflab reads.
    from arena.io.battles import write_battles

    back = load_battles(write_battles(battles, tmp_path / "battles.json"))
    assert back.df["model_a"].astype(str).tolist() == [x, y, y, z]
    labels = judge_labels(votes).set_index("item_id")
    # q000: x won twice (v1: A=x; v2: B=x), y once -> majority "A" (model_a = x), agreement 2/3.
    assert labels.loc["q000", ["human", "model_a", "model_b", "n_votes"]].tolist() == ["A", x, y, 3]
    assert labels.loc["q000", "agreement"] == pytest.approx(2 / 3, abs=1e-3)
    assert labels.loc["q001", "human"] == "tie"
    ag = agreement(votes)
    assert ag["units"] == 1 and ag["percent_agreement"] == pytest.approx(1 / 3)  # 1 agreeing pair of 3


def test_agreement_matches_the_krippendorff_package(seeded_url):
    krippendorff = pytest.importorskip("krippendorff")
    engine = open_store(seeded_url)
    x, y, z = sorted(MODELS)
    plan = {"q000": "AAB", "q001": "ABt", "q002": "BBB", "q003": "tAt"}
    for item, labels in plan.items():
        for k, lab in enumerate(labels):
            choice = {"A": "A", "B": "B", "t": "tie"}[lab]
            record_vote(engine, Vote(f"v{k}", "tiny", item, x, y, choice))
    ag = agreement(load_votes(engine))
    codes = {"A": 0, "B": 1, "t": 2}
    reliability = [[codes[plan[i][k]] for i in sorted(plan)] for k in range(3)]
    want = krippendorff.alpha(reliability_data=reliability, level_of_measurement="nominal")
    assert ag["units"] == 4 and ag["krippendorff_alpha"] == pytest.approx(want, abs=1e-9)


def test_demo_seed_is_idempotent(sqlite_url, tmp_path):
    items = write_jsonl(tmp_path / "items.jsonl", tiny_items(3).to_dict("records"))
    battles = write_jsonl(tmp_path / "battles.jsonl", [
        {"model_a": MODELS[0], "model_b": MODELS[1], "winner": "model_a", "judge": "sim-1", "question_id": "q000",
         "tstamp": 1.7e9},
        {"model_a": MODELS[1], "model_b": MODELS[2], "winner": "tie", "judge": "sim-1", "question_id": "q000",
         "tstamp": 1.7e9 + 1},
    ])
    engine = open_store(sqlite_url)
    assert seed_demo(engine, items, battles) == (3, 2)
    assert seed_demo(engine, items, battles) == (0, 0)
    votes = load_votes(engine)
    assert votes["round"].tolist() == [1, 2]  # the same voter on the same item twice: two rounds
    assert votes["source"].unique().tolist() == ["seed:battles.jsonl"]
