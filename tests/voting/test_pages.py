"""The data and calibration pages' library halves: import errors, exports others can read, the judge join."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from arena.io.battles import load_battles
from preflab.outcomes import Outcome
from tests.voting.conftest import MODELS, tiny_items
from voting.items import ItemDataError
from voting.pages.calibration import judged_pairs
from voting.pages.data import import_file
from voting.store import Vote, count_rows, load_votes, open_store, record_vote
from voting.votes import export_bytes


def jsonl(rows) -> bytes:  # noqa: ANN001
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


@pytest.mark.parametrize(("rows", "words"), [
    ([{"item_id": "a", "prompt": "p", "answer": "x"}], "missing column(s) ['model']"),
    ([{"item_id": "a", "prompt": "p", "model": "m1", "answer": "x"},
      {"item_id": "a", "prompt": "p", "model": "m1", "answer": "y"}], "line 2: field 'item_id': duplicate item id"),
    ([{"item_id": "a", "prompt": "p", "model": "m1", "answer": "x"},
      {"item_id": "a", "prompt": "p", "model": "m2", "answer": "y"},
      {"item_id": "b", "prompt": "q", "model": "m1", "answer": "z"}], "line 3: field 'model': item 'b' has only one"),
])
def test_bad_upload_names_the_upload_and_imports_nothing(sqlite_url, rows, words):
    engine = open_store(sqlite_url)
    with pytest.raises(ItemDataError) as e:
        import_file(engine, "my-items.jsonl", jsonl(rows), "mine")
    assert str(e.value).startswith("my-items.jsonl") and words in str(e.value)
    assert count_rows(engine, "items") == count_rows(engine, "answers") == 0


def test_upload_csv_and_refuse_reimport(sqlite_url):
    engine = open_store(sqlite_url)
    payload = tiny_items(2).to_csv(index=False).encode()
    assert "Imported 2 items (6 answers from 3 models)" in import_file(engine, "t.csv", payload, "t")
    with pytest.raises(ItemDataError, match="already has item id"):
        import_file(engine, "t.csv", payload, "t")
    with pytest.raises(ItemDataError, match="unknown file type"):
        import_file(engine, "t.txt", payload, "t2")
    assert count_rows(engine, "items") == 2


def test_exports_are_readable_by_the_arena_and_the_judge_module(seeded_url, tmp_path):
    engine = open_store(seeded_url)
    x, y, _ = sorted(MODELS)
    record_vote(engine, Vote("v1", "tiny", "q000", y, x, "A"))  # y shown left and chosen
    record_vote(engine, Vote("v2", "tiny", "q000", x, y, "B"))
    votes = load_votes(engine)
    (tmp_path / "b.json").write_bytes(export_bytes(votes, "battles"))
    battles = load_battles(tmp_path / "b.json")
    assert battles.df["winner"].astype(str).tolist() == ["model_a", "model_b"]
    assert len(pd.read_csv(io.BytesIO(export_bytes(votes, "votes")))) == 2
    (tmp_path / "labels.csv").write_bytes(export_bytes(votes, "labels"))
    from judge.metrics.adapters import load_judge_labels

    labels = load_judge_labels(tmp_path / "labels.csv")
    assert labels["human"].tolist() == [Outcome.SECOND]  # both votes chose y = model_b of the sorted pair


def test_judged_pairs_orient_human_votes_to_the_judges_x(seeded_url, tmp_path):
    engine = open_store(seeded_url)
    x, y, z = sorted(MODELS)
    for voter, choice in [("v1", "A"), ("v2", "A"), ("v3", "B")]:  # x on the left: x wins 2-1
        record_vote(engine, Vote(voter, "tiny", "q001", x, y, choice))
    record_vote(engine, Vote("v1", "tiny", "q002", x, z, "tie"))
    rows = [  # the judge's x/y follow its own order: q001 lists y first
        {"item_id": "q001", "model_x": y, "model_y": x, "order": "xy", "verdict": "B", "p_a": 0.2, "p_b": 0.7},
        {"item_id": "q002", "model_x": x, "model_y": z, "order": "xy", "verdict": "tie"},
        {"item_id": "q003", "model_x": x, "model_y": z, "order": "xy", "verdict": "A"},
    ]
    path = tmp_path / "verdicts.jsonl"
    path.write_bytes(jsonl(rows))
    pairs = judged_pairs(engine, "tiny", path).set_index("item_id")
    assert pairs.loc["q001", "human"] == Outcome.SECOND  # the majority chose x, which is this row's model_y
    humans = pairs.loc["q001", ["human_1", "human_2", "human_3"]].tolist()
    assert sorted(humans) == [Outcome.FIRST, Outcome.SECOND, Outcome.SECOND]
    assert pairs.loc["q002", "human"] == Outcome.TIE and np.isnan(pairs.loc["q003", "human"])
    assert pairs.loc["q001", "len_x"] == len(f"Answer 1 from side {MODELS.index(y)}: **bold** text.")
    assert "1 judged pairs have no human label" in pairs.attrs["notes"]
