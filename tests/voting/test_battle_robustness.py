"""The Battle page when things go wrong, and its round controls (AppTest, models on a dead port: no model is
needed to fail): a failure keeps the typed prompt in the box, writes its cause to the server log (no key) and
to the Data page's failed battles (admin only), never to the voter; Regenerate is a new battle with the same
models and sides (the old one abandoned, never counted); New round leaves the battle; ``preflab app --arena``
refuses a roster whose models do not answer."""

from __future__ import annotations

import logging

import pytest

from tests.voting.conftest import settle
from tests.voting.test_battle import NAMES, SEND, _everything, _page, _roster, gen
from tests.voting.test_vote_page import start
from voting.battles import battles_t, failed_battles, load_battle, open_battles, save_turn, start_battle
from voting.pages.battle import vote_key
from voting.store import load_votes, open_store

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


def _answered(sqlite_url: str) -> str:
    engine = open_battles(open_store(sqlite_url))
    bid = start_battle(engine, "ann", *NAMES)
    conv = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "one"},
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
