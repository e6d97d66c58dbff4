"""Battles whose answers say who wrote them, and prompts pasted over and over: the matcher (whole words,
any case, provider and family names from the roster's specs, the system prompt's persona, the roster's own
words), the battle marked in the store, and the Leaderboard leaving such votes out by default with a count
(:mod:`voting.battle_board`, by :mod:`arena.bt.hygiene`'s rules)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from answering.model_specs import ModelSpec
from arena.bt import hygiene
from arena.io.battles import load_battles
from tests.judge.api_fakes import ApiFake
from tests.voting.conftest import settle
from tests.voting.test_battle_limits import SEND, vote_button
from tests.voting.test_vote_page import login, start
from voting.battle_board import left_out_votes, minus_votes
from voting.battles import BATTLE_DATASET, battles_t
from voting.identity import family, identity_words, persona, said_identity
from voting.store import load_votes, open_store, pair_outcome_counts

ROSTER = [ModelSpec("zephyrine-7b", "local:http://127.0.0.1:9/v1#SmolLM2-360M", system="You are a pirate."),
          ModelSpec("quokka-13b", "openai:gpt-4o-mini"),
          ModelSpec("sonnet", "anthropic:claude-sonnet-4-5", system="You are a helpful assistant.")]


def test_the_roster_gives_names_providers_families_and_personas():
    words = identity_words(ROSTER, ["Blackbeard"])
    lower = {w.lower() for w in words}
    assert {"zephyrine-7b", "quokka-13b", "sonnet", "smollm2-360m", "gpt-4o-mini", "claude-sonnet-4-5"} <= lower
    assert {"openai", "chatgpt", "gpt", "anthropic", "claude", "smollm", "hugging face", "pirate",
            "blackbeard"} <= lower
    assert "helpful" not in lower and "assistant" not in lower  # "You are a helpful assistant." is no persona
    assert len(lower) == len(words)  # one spelling per word
    assert family("gpt-4o-mini") == "gpt" and family("org/SmolLM2-360M") == "smollm" and family("4o") == ""
    assert persona("You are a pirate.") == "pirate" and persona("You are Captain Nemo, who sails.") == "Captain Nemo"
    assert persona("Answer briefly.") is None


@pytest.mark.parametrize(("text", "said"), [
    ("I am ChatGPT, a model by OpenAI.", {"ChatGPT", "OpenAI"}),
    ("i was trained by OPENAI", {"OpenAI"}),
    ("As Claude3 I think", {"Claude"}),  # a family with a version after it
    ("Arr, pirates be here", {"pirate"}),  # a plural
    ("Zephyrine 7B here", {"zephyrine-7b"}),  # spaces for hyphens
    ("superpirate, gptx, claudette, anthropical, zephyrine-7bb", set()),  # inside longer words: not a match
    ("The capital of France is Paris.", set()),
])
def test_the_matcher_takes_whole_words_in_any_case(text, said):
    assert set(said_identity(text, identity_words(ROSTER))) == said


def test_repeated_prompts_keep_their_first_battles_up_to_the_cap():
    """Known truth: 10,000 prompts once and one prompt 50 times: the 99.99th percentile of the counts is 1, so
    the repeated prompt keeps its first battle and 49 are left out; a cap of 5 keeps 5."""
    prompts = [f"p{i}" for i in range(10_000)] + ["same"] * 50
    df = pd.DataFrame({"model_a": "a", "model_b": "b", "winner": "model_a", "prompt": prompts,
                       "tstamp": np.arange(len(prompts), dtype=float)[::-1]})
    battles = load_battles(df)
    assert hygiene.repeat_cap(pd.Series(prompts).value_counts().to_numpy()) == 1
    kept, line = hygiene.cap_repeated_prompts(battles)
    assert len(kept.df) == 10_001 and line == "repeated prompts: removed 49 of 10050 battles (cap 1 per prompt)"
    assert kept.df.loc[kept.df["prompt"] == "same", "tstamp"].item() == 0.0  # the earliest one
    kept, _ = hygiene.cap_repeated_prompts(battles, 5)
    assert (kept.df["prompt"] == "same").sum() == 5


def _answers(messages: list[dict], system: str | None = None) -> list[str]:
    """The fake server's answers: a prompt asking who it is gets the roster's names; others plain words."""
    asked = messages[-1]["content"]
    if "Who are you" in asked:
        return ["I", "am", "zephyrine-7b,", "made", "by", "OpenAI."]
    if "Story" in asked:
        return ["Arr,", "this", "pirate", "tells", "a", "tale."]
    return ["Paris", "is", "the", "capital", "of", "France."]


def test_battles_that_name_a_model_are_marked_and_left_out_of_the_leaderboard(monkeypatch, tmp_path, sqlite_url):
    """Today 4/4 battles whose answers named their model were counted like any other."""
    monkeypatch.setattr("tests.judge.fake_base.answer_words", _answers)
    roster = tmp_path / "roster.toml"
    with ApiFake() as api:
        roster.write_text("".join(f'[[model]]\nname = "{n}"\nspec = "local:{api.url}#{n}"\nmax_tokens = 24\n\n'
                                  for n in ("zephyrine-7b", "quokka-13b"))
                          + '[arena]\nidentity_words = ["pirate"]\n')
        env = {"PREFLAB_LOCAL_API_KEY": "sk-local-battle-0123456789", "PREFLAB_DB": sqlite_url,
               "PREFLAB_ARENA": str(roster), "PREFLAB_ACCESS": "invite", "PREFLAB_ARENA_PER_MINUTE": "20"}
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        at = login(AppTest.from_file(str(Path(__file__).resolve().parents[2] / "voting" / "pages" / "battle.py"),
                                     default_timeout=60).run(), "ann")
        for prompt in ("Who are you?", "Story time", "Who are you, really?", "A Story please", "Capital?",
                       "Capital of France?"):
            at.text_area(key="battle_text").input(prompt)
            settle(at.button(key=SEND).click().run())
            vote_button(at, "A").click().run()
            assert "Vote saved" in "\n".join(s.value for s in at.success)
    engine = open_store(sqlite_url)
    with engine.connect() as conn:
        marks = {r.id: r.identity_leak for r in conn.execute(battles_t.select())}
    assert sum(m is not None for m in marks.values()) == 4
    assert len(load_votes(engine, BATTLE_DATASET)) == 6  # every vote is stored
    out, notes = left_out_votes(engine)
    assert len(out) == 4 and notes[0].startswith("4 battle votes left out: an answer named a model")
    cells = minus_votes(pair_outcome_counts(engine, BATTLE_DATASET), out)
    assert int(cells["n"].sum()) == 2
    lb = start(monkeypatch, sqlite_url)
    lb.switch_page("voting/pages/leaderboard.py").run(timeout=300)
    lb.sidebar.selectbox(key="lb_dataset").set_value(BATTLE_DATASET).run(timeout=300)
    captions = "\n".join(c.value for c in lb.caption)
    assert "4 battle votes left out: an answer named a model, its maker or its persona" in captions
    assert "2 votes from all voters" in captions
    lb.sidebar.checkbox(key="lb_battle_all").check().run(timeout=300)
    assert "6 votes from all voters" in "\n".join(c.value for c in lb.caption)
    from typer.testing import CliRunner

    from preflab_cli import app as cli

    exported = tmp_path / "battles.json"  # the CLI leaves out the same votes: `rank --filter anony` on the export
    assert CliRunner().invoke(cli, ["export-votes", str(exported), "--db", sqlite_url]).exit_code == 0
    ranked = CliRunner().invoke(cli, ["rank", str(exported), "--filter", "anony", "--bootstrap", "20"])
    assert "anonymous only: removed 4 of 6 battles" in ranked.output, ranked.output


def test_a_prompt_sent_past_the_cap_is_left_out_of_the_leaderboard_with_a_count(monkeypatch, sqlite_url):
    import json
    import time

    from voting.battles import open_battles, vote_battle
    from voting.store import writing

    engine = open_battles(open_store(sqlite_url))
    now = time.time() - 100
    with writing(engine) as conn:
        for k in range(8):  # the same prompt 6 times (any case and spacing), and 2 others
            text = ["Tell me  a joke", "tell me a JOKE"][k % 2] if k < 6 else f"other {k}"
            conv = json.dumps([{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}])
            conn.execute(battles_t.insert().values(
                id=f"b{k}", voter="ann", model_a="m1", model_b="m2", status="answered", turns=1, conversation_a=conv,
                conversation_b=conv, answer_meta="[]", created_at=now + k, updated_at=now + k))
    for k in range(8):
        vote_battle(engine, f"b{k}", "ann", "A")
    monkeypatch.setenv("PREFLAB_ARENA_PROMPT_CAP", "2")
    out, notes = left_out_votes(engine)
    assert sorted(out["item_id"]) == ["b2", "b3", "b4", "b5"]
    assert notes == ["4 battle votes left out: their prompt was sent more often than the cap (2 battles per prompt)."]
