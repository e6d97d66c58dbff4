"""The Battle page when things go wrong, and its round controls (AppTest, models on a dead port: no model is
needed to fail): a failure keeps the typed prompt in the box, writes its cause to the server log (no key) and
to the Data page's failed battles (admin only), never to the voter; Regenerate is a new battle with the same
models and sides (the old one abandoned, never counted); New round leaves the battle; ``preflab app --arena``
refuses a roster whose models do not answer."""

from __future__ import annotations

import logging

import pytest
import sqlalchemy as sa

from answering.model_specs import ModelSpec
from tests.voting.conftest import settle
from tests.voting.test_battle import NAMES, SEND, _everything, _page, _roster, gen
from tests.voting.test_vote_page import start
from voting.arena_guard import ArenaRefused, ArenaSettings, claim_turn, turn_cost
from voting.battles import (
    ArenaLimits,
    battles_t,
    failed_battles,
    load_arena,
    load_battle,
    open_battles,
    save_turn,
    start_battle,
)
from voting.pages.battle import vote_key
from voting.store import load_votes, open_store
from voting.tables import spend_t

DEAD = "http://127.0.0.1:9/v1"  # the discard port: connection refused at once
KEY = "sk-test-0123456789abcdefSECRET"


def rows(url: str) -> list[dict]:
    with open_store(url).connect() as conn:
        return [dict(r) for r in conn.execute(battles_t.select().order_by(battles_t.c.created_at)).mappings()]


def test_a_failure_keeps_the_prompt_and_logs_its_cause_for_the_admin_only(monkeypatch, tmp_path, sqlite_url,
                                                                          caplog):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    at = _page(monkeypatch, tmp_path, sqlite_url, _roster(DEAD, DEAD))
    with caplog.at_level(logging.WARNING, logger="preflab.app"):
        at.text_area(key="battle_text").input("Keep this prompt, please.")
        settle(at.button(key=SEND).click().run())
    page = _everything(at)
    assert "One answer failed; this battle will not count" in page
    assert at.text_area(key="battle_text").value == "Keep this prompt, please."  # before: an empty box
    assert not any(s in page for s in (*NAMES, DEAD, "connection", "ConnectError"))
    (row,) = rows(sqlite_url)
    assert row["status"] == "failed" and row["error"]
    logged = [r.getMessage() for r in caplog.records if row["id"] in r.getMessage()]
    assert len(logged) == 1 and all(f"({n})" in logged[0] for n in NAMES) and "connection" in logged[0]
    assert KEY not in caplog.text
    failed = failed_battles(open_store(sqlite_url))
    assert failed["id"].tolist() == [row["id"]] and failed["error"].iat[0] == row["error"]
    admin = start(monkeypatch, sqlite_url)  # no admin passcode set: the Data page is open (with a banner)
    admin.switch_page("voting/pages/data.py").run()
    shown = [d.value for d in admin.dataframe if "error" in d.value.columns]
    assert len(shown) == 1 and shown[0]["id"].tolist() == [row["id"]] and NAMES[0] in set(shown[0]["model_a"]) | set(
        shown[0]["model_b"])


def _answered(sqlite_url: str, long: int = 0) -> str:
    """A stored battle of two turns ("first", "second"); ``long``: characters of each side's first answer."""
    engine = open_battles(open_store(sqlite_url))
    bid = start_battle(engine, "ann", *NAMES)
    conv = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "one" + "x" * long},
            {"role": "user", "content": "second"}, {"role": "assistant", "content": "two"}]
    assert save_turn(engine, bid, conv[:2], conv[:2], {"a": gen("one"), "b": gen("one")})
    with engine.begin() as c:
        c.execute(battles_t.update().where(battles_t.c.id == bid).values(status="answering"))
    assert save_turn(engine, bid, conv, conv, {"a": gen("two"), "b": gen("two")})
    return bid


def test_regenerate_is_a_new_battle_with_the_same_models_and_the_old_one_never_counts(monkeypatch, tmp_path,
                                                                                      sqlite_url):
    bid = _answered(sqlite_url)
    at = _page(monkeypatch, tmp_path, sqlite_url, _roster(DEAD, DEAD))
    at.session_state["battle"] = {"id": bid}
    at.run()
    at.button(key="battle_regenerate").click().run()
    settle(at)
    old, new = rows(sqlite_url)
    assert old["id"] == bid and old["status"] == "abandoned" and old["vote_id"] is None
    assert (new["model_a"], new["model_b"]) == (old["model_a"], old["model_b"])  # same models, same sides
    convs = load_battle(open_store(sqlite_url), new["id"])["conversation_a"]
    assert [m["content"] for m in convs if m["role"] == "user"] == ["first", "second"]  # the last prompt again
    assert load_votes(open_store(sqlite_url), "battle").empty


def _regenerate_refused(monkeypatch, tmp_path, sqlite_url, bid: int) -> str:  # noqa: ANN001
    """Press Regenerate on the answered battle ``bid`` (models that would not answer); the page's warnings, once
    the old battle is shown to stay as it was."""
    at = _page(monkeypatch, tmp_path, sqlite_url, _roster(DEAD, DEAD))
    at.session_state["battle"] = {"id": bid}
    at.run()
    at.button(key="battle_regenerate").click().run()
    (row,) = rows(sqlite_url)
    assert row["id"] == bid and row["status"] == "answered"
    return "\n".join(w.value for w in at.warning)


def test_regenerate_is_held_by_the_spend_caps_on_what_it_sends(monkeypatch, tmp_path, sqlite_url):
    """Regenerate sends the earlier turns with the last prompt: its claim counts them against the caps (before:
    the prompt alone, "second", was checked, 2 x (6 + 4 + 24) = 68 tokens, under a 1,000-token day; what it
    sends carries a 5,000-character answer: over 10,000 tokens)."""
    monkeypatch.setenv("PREFLAB_ARENA_TOKENS_PER_DAY", "1000")
    bid = _answered(sqlite_url, long=5000)
    specs = dict(zip("ab", load_arena(_write_roster(tmp_path)), strict=True))
    sent = {s: load_battle(open_store(sqlite_url), bid)[f"conversation_{s}"][:-1] for s in "ab"}
    assert turn_cost(specs, sent, ArenaSettings(ArenaLimits()))[1] > 10_000  # what Regenerate would send
    assert "spending limit" in _regenerate_refused(monkeypatch, tmp_path, sqlite_url, bid)
    with open_store(sqlite_url).connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(spend_t)).scalar_one() == 0


def test_regenerate_meets_the_conversation_length_cap(monkeypatch, tmp_path, sqlite_url):
    """A battle carried past the cap (here: the cap lowered since) is not regenerated: the page says why and the
    old battle stays (before: a new battle sent all 5,000+ characters against a 2,000-character cap)."""
    monkeypatch.setenv("PREFLAB_ARENA_MAX_CONVERSATION", "2000")
    bid = _answered(sqlite_url, long=5000)
    assert "length limit (2,000 characters)" in _regenerate_refused(monkeypatch, tmp_path, sqlite_url, bid)


def test_a_regenerated_battle_counts_its_carried_turns(sqlite_url):
    """Regenerate resets no count: a new battle carrying two turns is at the two-turn cap (before: it was at
    turn 0 and could take max_turns more), and its stored ``turns`` counts the carried ones (before: from 0)."""
    engine = open_store(sqlite_url)
    carried = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "one"},
               {"role": "user", "content": "second"}, {"role": "assistant", "content": "two"}]
    specs = {s: ModelSpec(n, f"local:{DEAD}#{n}") for s, n in zip("ab", NAMES, strict=True)}
    settings = ArenaSettings(ArenaLimits(max_turns=2))
    with pytest.raises(ArenaRefused) as e:
        claim_turn(engine, "ann", None, "third", specs, settings, None, {"a": carried, "b": carried})
    assert e.value.reason == "turns"
    regenerated = claim_turn(engine, "ann", None, "second", specs, settings, None,
                             {"a": carried[:2], "b": carried[:2]})
    assert regenerated["turns"] == 1  # the turn it carries, stored as its own (before: 0, then 1 after its answer)
    assert save_turn(engine, regenerated["id"], carried, carried, {"a": gen("two"), "b": gen("two")})
    assert load_battle(engine, regenerated["id"])["turns"] == 2
    with pytest.raises(ArenaRefused) as e:  # its follow-up: the conversation has two turns, the battle one
        claim_turn(engine, "ann", None, "third", specs, settings, load_battle(engine, regenerated["id"]))
    assert e.value.reason == "turns"


def _write_roster(tmp_path) -> str:  # noqa: ANN001
    (tmp_path / "roster.toml").write_text(_roster(DEAD, DEAD))
    return str(tmp_path / "roster.toml")


@pytest.mark.parametrize("when", ["before the vote", "after the vote"])
def test_new_round_leaves_the_battle_and_clears_the_page(monkeypatch, tmp_path, sqlite_url, when):
    bid = _answered(sqlite_url)
    at = _page(monkeypatch, tmp_path, sqlite_url, _roster(DEAD, DEAD))
    at.session_state["battle"] = {"id": bid}
    at.run()
    if when == "after the vote":
        at.button(key=vote_key("A", load_battle(open_store(sqlite_url), bid))).click().run()
        at.button(key="battle_new_after_vote").click().run()
    else:
        at.button(key="battle_new_round").click().run()
    assert not at.get("html") and at.text_area(key="battle_text").value == ""
    assert at.text_area(key="battle_text").label == "Your prompt"
    (row,) = rows(sqlite_url)
    assert row["status"] == ("voted" if when == "after the vote" else "abandoned")


def test_app_refuses_a_roster_whose_models_do_not_answer(tmp_path, capsys):
    from preflab_cli import main

    roster = tmp_path / "roster.toml"
    roster.write_text(_roster(DEAD, DEAD))
    with pytest.raises(SystemExit) as e:
        main(["app", "--db", f"sqlite:///{tmp_path / 'v.db'}", "--arena", str(roster)])
    err = capsys.readouterr().err
    assert e.value.code == 2, err
    assert all(f"model {n!r} did not answer: refused: {DEAD}: connection refused" in err for n in NAMES)
    assert "--no-arena-check" in err
    assert "Traceback" not in err


def test_a_roster_model_without_its_api_key_is_named_by_the_check_not_a_traceback(tmp_path, capsys, monkeypatch):
    """The check made each provider outside its guard, so a missing key ended `preflab app` with exit 1."""
    from preflab_cli import main

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    roster = tmp_path / "roster.toml"
    roster.write_text('[[model]]\nname = "keyless"\nspec = "openai:gpt-4o-mini"\n\n'
                      '[[model]]\nname = "other"\nspec = "openai:gpt-4o"\n')
    with pytest.raises(SystemExit) as e:
        main(["app", "--db", f"sqlite:///{tmp_path / 'v.db'}", "--arena", str(roster)])
    err = capsys.readouterr().err
    assert e.value.code == 2, err
    assert "model 'keyless' did not answer" in err and "OPENAI_API_KEY" in err and "Traceback" not in err
