"""An open Battle page under attack: turns claimed in one transaction (concurrent Sends cannot pass one count
together, on SQLite and PostgreSQL), follow-ups counted, a conversation's length capped, limits per client
address that survive new guest ids, guest ids rationed per address, the spend reserved before the calls, and
battle votes bound to their battle and turn, rate-counted and held to the minimum time. Models answer from the
stdlib fake server on loopback (tests.judge.api_fakes)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import sqlalchemy as sa
from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1 import AppTest

from answering.model_specs import ModelSpec
from llm.prices import Price
from llm.providers.generation import Generation
from tests.judge.api_fakes import ApiFake
from tests.voting.conftest import settle
from tests.voting.test_vote_page import login
from voting.access import GuestLimit, issue_guest
from voting.arena_guard import (
    ArenaRefused,
    ArenaSettings,
    arena_settings,
    claim_turn,
    settle_turn,
    spend_lines,
    spend_summary,
)
from voting.battles import BATTLE_DATASET, ArenaLimits, battles_t, load_battle, open_battles, save_turn
from voting.store import VoteChecks, VoteRefused, events_t, load_votes, open_store
from voting.tables import spend_t

PAGE = str(Path(__file__).resolve().parents[2] / "voting" / "pages" / "battle.py")
SEND = "FormSubmitter:battle_prompt-Send"
SPECS = {"a": ModelSpec("zephyrine-7b", "local:http://127.0.0.1:9/v1#z", max_tokens=100),
         "b": ModelSpec("quokka-13b", "local:http://127.0.0.1:9/v1#q", max_tokens=100)}


def _claims(engine, n: int, settings: ArenaSettings, voter=lambda k: "ann", address=lambda k: "10.0.0.1"):  # noqa: ANN001, ANN202
    """``n`` threads pressing Send at once (one engine each when ``engine`` is a URL: as app processes);
    returns (battles started, refusal reasons)."""
    started, refused, gate = [], [], threading.Barrier(n)

    def press(k: int) -> None:
        eng = open_battles(open_store(engine)) if isinstance(engine, str) else engine
        gate.wait()
        try:
            started.append(claim_turn(eng, voter(k), address(k), "prompt 0", SPECS, settings)["id"])
        except ArenaRefused as e:
            refused.append(e.reason)

    threads = [threading.Thread(target=press, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return started, refused


def _stored(engine) -> int:  # noqa: ANN001
    with engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(battles_t)).scalar_one()


def test_sixteen_sends_at_once_start_exactly_the_limit_on_sqlite(sqlite_url):
    """Today 10-16 tabs pressing Send together started 9 where the limit is 6 a minute (count, then insert)."""
    engine = open_battles(open_store(sqlite_url))
    started, refused = _claims(sqlite_url, 16, ArenaSettings(ArenaLimits(battles_per_minute=6)))
    assert len(started) == 6 and _stored(engine) == 6 and refused == ["voter"] * 10


@pytest.mark.postgres
def test_sixteen_sends_at_once_start_exactly_the_limit_on_postgresql(pg_clean_url):
    engine = sa.create_engine(pg_clean_url)
    for table in ("arena_spend", "battles"):
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {table}")
    engine = open_battles(open_store(pg_clean_url))
    started, refused = _claims(pg_clean_url, 16, ArenaSettings(ArenaLimits(battles_per_minute=6)))
    assert len(started) == 6 and _stored(engine) == 6 and refused == ["voter"] * 10
    engine.dispose()


def _answer(engine, battle: dict, text: str = "an answer", prompt: str | None = None) -> dict:  # noqa: ANN001
    """Store the claimed turn of ``battle`` as answered (``prompt``: what was asked, by default a short one)."""
    convs = {s: battle[f"conversation_{s}"] for s in "ab"}
    prompt = prompt or f"prompt {battle['turns']}"
    done = {s: [*convs[s], {"role": "user", "content": prompt}, {"role": "assistant", "content": text}] for s in "ab"}
    gen = Generation(text, 5, 3, "stop", 0.1)
    assert save_turn(engine, battle["id"], done["a"], done["b"], {"a": gen, "b": gen})
    return load_battle(engine, battle["id"])


def test_follow_up_turns_count_and_a_conversation_stops_at_its_caps(sqlite_url):
    """Today one battle took 101 turns in 60 s (202 calls, the last request 409,382 characters)."""
    engine = open_battles(open_store(sqlite_url))
    limits = ArenaLimits(battles_per_minute=6, max_turns=100, max_conversation_chars=10**9)
    battle = claim_turn(engine, "ann", "10.0.0.1", "prompt 0", SPECS, ArenaSettings(limits))
    for _ in range(5):  # five follow-ups: six prompts this minute
        battle = claim_turn(engine, "ann", "10.0.0.1", "more", SPECS, ArenaSettings(limits), _answer(engine, battle))
    with pytest.raises(ArenaRefused) as e:
        claim_turn(engine, "ann", "10.0.0.1", "more", SPECS, ArenaSettings(limits), _answer(engine, battle))
    assert e.value.reason == "voter"
    many = ArenaSettings(ArenaLimits(battles_per_minute=1000, per_address_per_minute=1000, max_turns=4,
                                     max_conversation_chars=10**9))
    battle = claim_turn(engine, "bob", "10.0.0.2", "prompt 0", SPECS, many)
    for _ in range(3):
        battle = claim_turn(engine, "bob", "10.0.0.2", "more", SPECS, many, _answer(engine, battle))
    with pytest.raises(ArenaRefused) as e:
        claim_turn(engine, "bob", "10.0.0.2", "more", SPECS, many, _answer(engine, battle))
    assert e.value.reason == "turns" and load_battle(engine, battle["id"])["turns"] == 4
    short = ArenaSettings(ArenaLimits(battles_per_minute=1000, per_address_per_minute=1000, max_conversation_chars=300))
    battle = claim_turn(engine, "cy", "10.0.0.3", "x" * 100, SPECS, short)
    with pytest.raises(ArenaRefused) as e:  # a side's request: 100 asked + 100 answered + 101 more > 300
        claim_turn(engine, "cy", "10.0.0.3", "y" * 101, SPECS, short, _answer(engine, battle, "z" * 100, "x" * 100))
    assert e.value.reason == "length"


def test_one_address_is_limited_whatever_its_guest_ids(sqlite_url):
    """Today three browsers (three guest ids) started 90 battles, 180 model calls, in 57 s."""
    engine = open_battles(open_store(sqlite_url))
    settings = ArenaSettings(ArenaLimits(battles_per_minute=6, per_address_per_minute=20))
    started, refused = _claims(sqlite_url, 30, settings, voter=lambda k: f"guest-{k:010d}")
    assert len(started) == 20 and sorted(set(refused)) == ["address"] and len(refused) == 10
    other = claim_turn(engine, "guest-x", "192.0.2.9", "hello", SPECS, settings)  # another address is not held
    assert other["status"] == "answering"


def test_guest_ids_are_rationed_per_address(monkeypatch, tmp_path, sqlite_url):
    """Today new browser contexts minted guest ids freely."""
    engine = open_store(sqlite_url)
    for _ in range(3):
        issue_guest(engine, "198.51.100.7", per_hour=3)
    with pytest.raises(GuestLimit):
        issue_guest(engine, "198.51.100.7", per_hour=3)
    assert issue_guest(engine, "203.0.113.1", per_hour=3)  # another address
    monkeypatch.setenv("PREFLAB_DB", sqlite_url)
    monkeypatch.setenv("PREFLAB_GUESTS_PER_ADDRESS", "2")
    from tests.voting.test_vote_page import APP as VOTE_PAGE

    shown = []
    for _ in range(3):  # three browser contexts from one address ("local" under AppTest)
        at = AppTest.from_file(VOTE_PAGE, default_timeout=60).run()
        login(at, None)
        shown.append("\n".join(e.value for e in at.error))
    assert shown[:2] == ["", ""] and "Many anonymous voters have started from your network" in shown[2]


def _priced(usd_per_day: float | None = None, tokens_per_day: int | None = None) -> ArenaSettings:
    prices = {"zephyrine-7b": Price(1000.0, 2000.0, "test"), "quokka-13b": Price(1000.0, 2000.0, "test")}
    return ArenaSettings(ArenaLimits(battles_per_minute=100, per_address_per_minute=100, max_tokens=1024,
                                     usd_per_day=usd_per_day, tokens_per_day=tokens_per_day), prices)


def test_spend_is_reserved_before_the_calls_so_concurrent_battles_stay_under_the_cap(sqlite_url):
    """A turn reserves its most: per side (8 UTF-8 bytes + 4) input tokens and 100 output tokens at $1000 in /
    $2000 out per 1M tokens = $0.212, so $0.424 a turn; a $2.00 daily cap lets exactly 4 of 16 concurrent
    battles start, then settling at the reported tokens (5 in, 3 out a side: $0.022) frees the rest."""
    engine = open_battles(open_store(sqlite_url))
    settings = _priced(usd_per_day=2.0)
    started, refused = _claims(sqlite_url, 16, settings, voter=lambda k: f"v{k}")
    assert len(started) == 4 and refused == ["day"] * 12
    assert spend_summary(engine)["usd_today"] == pytest.approx(4 * 0.424)
    gen = Generation("an answer", 5, 3, "stop", 0.1)
    convs = {s: [{"role": "user", "content": "prompt 0"}] for s in "ab"}
    for bid in started:
        settle_turn(engine, bid, 1, SPECS, convs, {"a": gen, "b": gen}, settings)
    assert spend_summary(engine)["usd_today"] == pytest.approx(4 * 0.022)
    assert claim_turn(engine, "w", "10.0.0.1", "prompt 0", SPECS, settings)  # room again after settling
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(spend_t).where(spend_t.c.settled)).scalar_one() == 4


def test_unknown_prices_are_stated_and_held_by_the_token_cap(tmp_path, sqlite_url):
    roster = tmp_path / "roster.toml"
    roster.write_text('[arena]\ntokens_per_day = 500\nusd_per_day = 5\nidentity_words = ["Blackbeard"]\n\n'
                      '[arena.prices]\n"cheap" = {in = 0.1, out = 0.2}\n\n'
                      '[[model]]\nname = "cheap"\nspec = "openai:gpt-99"\nmax_tokens = 100\n\n'
                      '[[model]]\nname = "mystery"\nspec = "openai:gpt-98"\nmax_tokens = 100\n')
    from voting.battles import load_arena

    models = load_arena(str(roster))
    settings = arena_settings(str(roster), models, env={})
    assert settings.prices["mystery"] is None and settings.identity_words == ("Blackbeard",)
    assert settings.limits.tokens_per_day == 500 and settings.limits.usd_per_day == 5.0
    engine = open_battles(open_store(sqlite_url))
    specs = {"a": models[0], "b": models[1]}
    claim_turn(engine, "ann", None, "hi", specs, settings)  # 2 x (2 + 4) in + 100 + 100 out = 212 tokens
    claim_turn(engine, "bob", None, "hi", specs, settings)
    with pytest.raises(ArenaRefused) as e:
        claim_turn(engine, "cy", None, "hi", specs, settings)
    assert e.value.reason == "tokens"
    lines = spend_lines(engine, settings)
    assert "424 tokens today of 500" in lines[0] and "No known price for mystery: their 2 turns" in lines[1]
    assert arena_settings(str(roster), models, env={"PREFLAB_ARENA_TOKENS_PER_DAY": "9"}).limits.tokens_per_day == 9


def _page(monkeypatch, tmp_path: Path, url: str, api_url: str, guest: bool = False, **env: str) -> AppTest:
    (tmp_path / "roster.toml").write_text("".join(
        f'[[model]]\nname = "{n}"\nspec = "local:{api_url}#{n}"\nmax_tokens = 24\n\n' for n in ("zephyrine-7b",
                                                                                                 "quokka-13b")))
    monkeypatch.setenv("PREFLAB_LOCAL_API_KEY", "sk-local-battle-0123456789")
    monkeypatch.setenv("PREFLAB_DB", url)
    monkeypatch.setenv("PREFLAB_ARENA", str(tmp_path / "roster.toml"))
    monkeypatch.setenv("PREFLAB_ACCESS", "open" if guest else "invite")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    return login(at, None if guest else "ann")


def _ask(at: AppTest, text: str) -> AppTest:
    at.text_area(key="battle_text").input(text)
    return settle(at.button(key=SEND).click().run())


def vote_button(at: AppTest, choice: str):  # noqa: ANN201
    """The battle's vote button for ``choice``; its key carries the battle and turn (``battle_A_<id>_<n>``)."""
    found = [b for b in at.button if (b.key or "").startswith(f"battle_{choice}_")]
    assert len(found) == 1, [b.key for b in at.button]
    return found[0]


def test_the_page_says_when_a_conversation_reaches_its_cap(monkeypatch, tmp_path, sqlite_url):
    with ApiFake() as api:
        at = _page(monkeypatch, tmp_path, sqlite_url, api.url, PREFLAB_ARENA_MAX_TURNS="2")
        for text in ("First?", "Second?"):
            _ask(at, text)
        at.text_area(key="battle_text").input("Third?")
        at.button(key=SEND).click().run()  # refused before any call: nothing to settle, and a rerun drops the note
        warned = "\n".join(w.value for w in at.warning)
        assert "This battle has reached 2 turns: vote on it" in warned
        assert len(api.log) == 4  # two turns, two calls each: the third was refused before any call
        bid = at.session_state["battle"]["id"]
        assert load_battle(open_store(sqlite_url), bid)["turns"] == 2
        vote_button(at, "A").click().run()
        assert "Vote saved" in "\n".join(s.value for s in at.success)


def test_guest_battle_votes_are_rate_counted_and_held_to_the_minimum_time(monkeypatch, tmp_path, sqlite_url):
    """Today guest battle votes wrote no rate events and landed 0.27-0.34 s after the answers."""
    with ApiFake() as api:
        at = _page(monkeypatch, tmp_path, sqlite_url, api.url, guest=True, PREFLAB_MIN_SECONDS="30")
        _ask(at, "Hello there?")
        vote_button(at, "A").click().run()
        assert "That was fast: read both answers, then vote." in "\n".join(i.value for i in at.info)
        engine = open_store(sqlite_url)
        assert load_votes(engine, BATTLE_DATASET).empty
        monkeypatch.setenv("PREFLAB_MIN_SECONDS", "0")
        vote_button(at, "B").click().run()
        assert "Vote saved: B is better" in "\n".join(s.value for s in at.success)
    with engine.connect() as conn:
        keys = sorted(k for (k,) in conn.execute(sa.select(events_t.c.key)))
    voter = at.session_state["voter"]
    assert keys.count(f"guest:{voter}") == 1 and sum(k.startswith("votes:") for k in keys) == 1  # the vote's
    assert keys.count(f"battle-voter:{voter}") == 1 and sum(k.startswith("battle-address:") for k in keys) == 1


def test_a_battle_vote_checks_the_turn_rate_and_time_in_its_transaction(sqlite_url):
    engine = open_battles(open_store(sqlite_url))
    from voting.battles import vote_battle

    battle = _answer(engine, claim_turn(engine, "ann", None, "prompt 0", SPECS, ArenaSettings()))
    with pytest.raises(VoteRefused) as e:
        vote_battle(engine, battle["id"], "ann", "A", turns=battle["turns"], checks=VoteChecks(min_seconds=30))
    assert e.value.reason == "fast"
    with pytest.raises(VoteRefused) as e:
        vote_battle(engine, battle["id"], "ann", "A", turns=battle["turns"] - 1)
    assert e.value.reason == "stale"
    with pytest.raises(VoteRefused) as e:
        vote_battle(engine, battle["id"], "ann", "A", checks=VoteChecks(rate=(("guest:ann", 0),)))
    assert e.value.reason == "rate" and load_votes(engine, BATTLE_DATASET).empty
    vote_battle(engine, battle["id"], "ann", "A", turns=battle["turns"], checks=VoteChecks(rate=(("guest:ann", 5),)))
    assert len(load_votes(engine, BATTLE_DATASET)) == 1


def test_a_replayed_vote_message_for_an_earlier_battle_votes_nothing(monkeypatch, tmp_path, sqlite_url):
    """Today battle 1's vote message, replayed after battle 2 finished, voted battle 2: the buttons' keys
    were fixed (``battle_A``) and the battle rode in callback args rebound on every render."""
    with ApiFake() as api:
        at = _page(monkeypatch, tmp_path, sqlite_url, api.url)
        _ask(at, "First battle?")
        first = at.session_state["battle"]["id"]
        replay = WidgetState()
        replay.CopyFrom(vote_button(at, "A").click()._widget_state)  # the message the click sends
        at.run()
        _ask(at, "Second battle?")
        second = at.session_state["battle"]["id"]
        assert second != first and load_battle(open_store(sqlite_url), second)["status"] == "answered"
        states = at._tree.get_widget_states()
        states.widgets.append(replay)
        at._run(states)  # the replayed message, as a client would send it again
    engine = open_store(sqlite_url)
    assert load_battle(engine, second)["status"] == "answered"
    votes = load_votes(engine, BATTLE_DATASET)
    assert votes["item_id"].tolist() == [first]


def test_a_store_from_before_gets_the_identity_column_and_the_spend_table(sqlite_url):
    engine = sa.create_engine(sqlite_url)
    old = sa.MetaData()
    sa.Table("battles", old, *[sa.Column(c.name, c.type, primary_key=c.primary_key, nullable=c.nullable)
                               for c in battles_t.columns if c.name != "identity_leak"])
    old.create_all(engine)
    engine.dispose()
    inspector = sa.inspect(open_store(sqlite_url))
    assert "identity_leak" in {c["name"] for c in inspector.get_columns("battles")}
    assert inspector.has_table("arena_spend")


def test_preflab_app_states_the_limits_and_names_models_without_a_price(tmp_path, capsys, monkeypatch):
    """Today nothing said that a model's cost could not be counted."""
    import os

    from preflab_cli import main

    roster = tmp_path / "roster.toml"
    roster.write_text('[arena]\nusd_per_day = 5\n\n[[model]]\nname = "known"\nspec = "openai:gpt-4o-mini"\n\n'
                      '[[model]]\nname = "mystery"\nspec = "openai:gpt-98"\n')
    started: list = []
    monkeypatch.setattr(os, "execve", lambda *a: started.append(a))  # the server would replace this process
    with pytest.raises(SystemExit) as e:
        main(["app", "--db", f"sqlite:///{tmp_path / 'v.db'}", "--arena", str(roster), "--no-arena-check"])
    out, err = capsys.readouterr()
    assert e.value.code == 0
    assert started and "Battle limits: 6 prompts a minute per voter, 20 per client address" in out
    assert "spend $5 a day, no cap in all" in out
    assert "warning: no known price for mystery: their cost is not counted in dollars; give [arena.prices]" in err


@pytest.mark.parametrize(("env", "said", "started"), [
    ({"PREFLAB_ARENA_PER_ADDRESS": "2"}, "Many prompts are coming from your network right now", 2),
    # a turn reserves (11 bytes + 4) + 24 tokens a side = 78; the fake reports at least 8 answer tokens a side
    ({"PREFLAB_ARENA_TOKENS_PER_DAY": "80"}, "The arena has reached today's spending limit", 1),
])
def test_new_guests_from_one_address_meet_its_limits_in_the_apps_words(monkeypatch, tmp_path, sqlite_url, env, said,
                                                                        started):
    """Three browser contexts (three guest ids, one address): the address's limit and the arena's spend cap
    hold across them, and the page says which in its own words; a refused prompt calls no model."""
    with ApiFake() as api:
        pages = [_page(monkeypatch, tmp_path, sqlite_url, api.url, guest=True, **env) for _ in range(3)]
        assert len({p.session_state["voter"] for p in pages}) == 3
        for k, at in enumerate(pages):
            _ask(at, f"Question {k}?")
        warned = ["\n".join(w.value for w in at.warning) for at in pages]
        assert [said in w for w in warned] == [False] * started + [True] * (3 - started), warned
        assert len(api.log) == 2 * started


PRESS = """
import sys, time
from pathlib import Path
from tests.voting.test_battle_limits import SPECS
from voting.arena_guard import ArenaRefused, ArenaSettings, claim_turn
from voting.battles import ArenaLimits, open_battles
from voting.store import open_store
url, folder, k = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
engine = open_battles(open_store(url))
(folder / f"ready-{k}").touch()
while not (folder / "go").exists():
    time.sleep(0.005)
for _ in range(2):
    try:
        claim_turn(engine, "ann", "10.0.0.1", "hi", SPECS, ArenaSettings(ArenaLimits(battles_per_minute=6)))
        print("started")
    except ArenaRefused as e:
        print(e.reason)
"""


@pytest.mark.parametrize("store", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_six_app_processes_pressing_send_at_once_start_exactly_the_limit(store, request, tmp_path):
    """Six processes (as six app servers on one store) press Send twice each at once: 6 of 12 start."""
    import os
    import subprocess
    import sys

    from tests.voting.conftest import wait_for

    if store == "sqlite":
        url = f"sqlite:///{tmp_path / 'votes.db'}"
    else:
        url = request.getfixturevalue("pg_clean_url")
        with sa.create_engine(url).begin() as conn:
            conn.exec_driver_sql("DROP TABLE IF EXISTS arena_spend; DROP TABLE IF EXISTS battles")
    engine = open_battles(open_store(url))
    root = Path(__file__).resolve().parents[2]
    procs = [subprocess.Popen([sys.executable, "-c", PRESS, url, str(tmp_path), str(k)], cwd=root,
                              env={**os.environ, "PYTHONPATH": str(root)}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for k in range(6)]
    wait_for(lambda: len(list(tmp_path.glob("ready-*"))) == 6 or any(p.poll() is not None for p in procs), 300)
    (tmp_path / "go").touch()
    said = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
        said += out.split()
    assert sorted(said) == ["started"] * 6 + ["voter"] * 6 and _stored(engine) == 6
