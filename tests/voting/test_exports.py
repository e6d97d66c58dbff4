"""One exporter per format: ``preflab export-votes`` and the Data page's downloads hand out the same bytes
(:func:`voting.exports.export_votes`), live battles' conversations included; preference pairs in TRL's layout."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from tests.voting.test_vote_page import APP
from voting.exports import export_votes
from voting.store import Vote, open_store, record_vote

FILES = {("battles", ""): "b.json", ("votes", ""): "v.csv", ("labels", ""): "l.csv",
         ("pairs", "jsonl"): "p.jsonl", ("pairs", "parquet"): "p.parquet"}


def _votes(url: str) -> None:
    """On ``tiny``: a win each way, a tie, a both-bad; and a live battle of two turns won by B."""
    from llm.providers.generation import Generation
    from voting.battles import save_turn, start_battle, vote_battle

    engine = open_store(url)
    for i, choice in enumerate(("A", "B", "tie", "bothbad")):
        record_vote(engine, Vote("ann", "tiny", f"q{i:03d}", "zephyrine-7b", "quokka-13b", choice, reason="=1+1"))
    bid = start_battle(engine, "ann", "zephyrine-7b", "quokka-13b")
    turn = {s: Generation(t, 3, 2, "stop", 0.1) for s, t in (("a", "Leaves."), ("b", "Snow."))}
    q1, q2 = {"role": "user", "content": "A haiku?"}, {"role": "user", "content": "Shorter?"}
    assert save_turn(engine, bid, [q1, {"role": "assistant", "content": "Leaves."}],
                     [q1, {"role": "assistant", "content": "Snow."}], turn)
    from answering.model_specs import ModelSpec
    from voting.arena_guard import ArenaSettings, claim_turn
    from voting.battles import load_battle

    specs = {s: ModelSpec(n, f"local:http://127.0.0.1:9/v1#{n}") for s, n in (("a", "zephyrine-7b"),
                                                                                ("b", "quokka-13b"))}
    assert claim_turn(engine, "ann", None, "Shorter?", specs, ArenaSettings(), load_battle(engine, bid))  # turn 2
    assert save_turn(engine, bid, [q1, {"role": "assistant", "content": "Leaves."}, q2,
                                   {"role": "assistant", "content": "Leaf."}],
                     [q1, {"role": "assistant", "content": "Snow."}, q2, {"role": "assistant", "content": "Sn."}],
                     turn)
    vote_battle(engine, bid, "ann", "B")


def _cli(url: str, path, *args: str):  # noqa: ANN001, ANN202
    from preflab_cli import app as cli

    result = CliRunner().invoke(cli, ["export-votes", str(path), "--db", url, *args])
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.parametrize("dataset", ["tiny", "battle"])
def test_cli_and_data_page_hand_out_the_same_bytes(monkeypatch, seeded_url, tmp_path, downloads, dataset):
    _votes(seeded_url)
    monkeypatch.setenv("PREFLAB_DB", seeded_url)
    monkeypatch.setenv("PREFLAB_ADMIN_PASSCODE", "boss")
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("voting/pages/data.py").run()
    at.text_input[0].input("boss")
    at.button[0].click().run()
    at.selectbox(key="export_dataset").set_value(dataset).run()
    assert not at.exception
    for (kind, fmt), name in FILES.items():
        _cli(seeded_url, tmp_path / name, "--as", kind, "--dataset", dataset)
        page = downloads(at, f"export_{kind}" + (f"_{fmt}" if fmt else ""))
        assert page == (tmp_path / name).read_bytes(), (kind, fmt)  # before: the page's battles lacked the chats
    if dataset == "battle":
        battles = json.loads((tmp_path / "b.json").read_text())
        assert battles[0]["conversation_b"][-1] == {"role": "assistant", "content": "Sn."}


def test_preference_pairs_in_trls_standard_layout_ties_left_out_and_counted(seeded_url, tmp_path):
    _votes(seeded_url)
    out = tmp_path / "pairs.jsonl"
    result = _cli(seeded_url, out, "--as", "dpo", "--dataset", "tiny")
    assert "left out 1 tie and 1 both-bad vote" in result.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [list(r) for r in rows] == [["prompt", "chosen", "rejected", "vote_id", "dataset", "item_id",
                                        "chosen_model", "rejected_model", "voter", "category"]] * 2
    first, second = rows  # A (left, zephyrine) won on q000, B (right, quokka) on q001
    assert (first["item_id"], first["chosen_model"], first["rejected_model"]) == ("q000", "zephyrine-7b",
                                                                                  "quokka-13b")
    assert first["prompt"] == "Prompt number 0?" and first["chosen"].endswith("(side 0)\n\nCode:\n\n```python\n"
                                                                             "print('<b>not bold</b>')\n```\n")
    assert (second["chosen"], second["rejected"]) == ("Answer 1 from side 1: **bold** text.",
                                                      "Answer 1 from side 0: **bold** text.")
    assert {r["voter"] for r in rows} == {"ann"} and {r["category"] for r in rows} == {"test"}
    parquet = tmp_path / "pairs.parquet"
    _cli(seeded_url, parquet, "--as", "pairs", "--dataset", "tiny")
    pd.testing.assert_frame_equal(pd.read_parquet(parquet), pd.DataFrame(rows))


def test_battles_become_conversational_pairs_with_the_shared_turns_as_prompt(seeded_url):
    _votes(seeded_url)
    pairs = export_votes(open_store(seeded_url), "pairs", "battle")
    (row,) = [json.loads(line) for line in pairs.data.decode().splitlines()]
    assert row["prompt"] == [{"role": "user", "content": "A haiku?"}]  # the shared prefix: TRL's explicit prompt
    assert row["chosen"] == [{"role": "assistant", "content": "Snow."}, {"role": "user", "content": "Shorter?"},
                             {"role": "assistant", "content": "Sn."}]
    assert row["rejected"][-1] == {"role": "assistant", "content": "Leaf."}
    assert (row["chosen_model"], row["rejected_model"]) == ("quokka-13b", "zephyrine-7b")
    table = pd.read_parquet(io.BytesIO(export_votes(open_store(seeded_url), "pairs", "battle", "parquet").data))
    assert list(table["chosen"][0][0]) == ["role", "content"]  # a list of {role, content} structs


def test_pairs_refuse_a_tabular_suffix_and_unknown_kinds_name_the_choices(seeded_url, tmp_path):
    from preflab_cli import app as cli

    bad = CliRunner().invoke(cli, ["export-votes", str(tmp_path / "p.csv"), "--db", seeded_url, "--as", "pairs"])
    assert bad.exit_code == 2 and "--as pairs writes .jsonl or .parquet" in bad.output
    assert not (tmp_path / "p.csv").exists()
    bad = CliRunner().invoke(cli, ["export-votes", str(tmp_path / "x"), "--db", seeded_url, "--as", "prefs"])
    assert bad.exit_code == 2 and "pairs (or dpo)" in bad.output
