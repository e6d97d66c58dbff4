"""The live Battle page and its store: pairs drawn least-compared first, votes stored as app votes that the
leaderboard and exports count, failed battles never counted, and nothing naming a model on the page before
the vote (AppTest against a real llama.cpp server)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from answering.model_specs import ModelSpec
from llm.providers.generation import Generation
from tests.judge.conftest import llama_url  # noqa: F401  (the real llama.cpp server fixture)
from tests.voting.conftest import settle
from tests.voting.test_battle_limits import vote_button
from tests.voting.test_vote_page import login
from voting.battles import (
    BATTLE_DATASET,
    draw_pair,
    load_battle,
    open_battles,
    pair_counts,
    save_turn,
    start_battle,
    vote_battle,
)
from voting.store import DuplicateVote, load_votes, open_store


@pytest.fixture(scope="module")
def second_llama_url(llama_url, tmp_path_factory):  # noqa: F811
    """Another llama.cpp server with the same GGUF: llama-cpp-python's server interrupts a running stream when
    a second request arrives, so the two sides of a battle need a server each (as two checkpoints would)."""
    from llm.local_server import llama_server, smollm2_gguf

    with llama_server(smollm2_gguf(), n_ctx=2048, n_threads=1,
                      log=tmp_path_factory.mktemp("llama2") / "server.log") as url:
        yield url


PAGE = str(Path(__file__).resolve().parents[2] / "voting" / "pages" / "battle.py")
NAMES = ("zephyrine-7b", "quokka-13b")
# the roster's system prompts, each with a marker only it has: the page must never send a system prompt
SYSTEMS = ("Answer briefly. [sys-8f3a1c]", "You are a pirate. [sys-5d72e9]")
MARKERS = ("sys-8f3a1c", "sys-5d72e9")


def sent_secrets(sent: str, secrets: tuple[str, ...], battle: dict) -> list[str]:
    """The ``secrets`` (names, endpoints, system-prompt markers, metadata keys) in what the app ``sent``,
    leaving out any a model itself wrote in its stored answers: a test asserts what the app sends, never what
    a real model happens to write (SmolLM2's words change with CPU features and builds)."""
    written = " ".join(m["content"] for side in ("conversation_a", "conversation_b") for m in battle[side]
                       if m["role"] == "assistant")
    return [s for s in secrets if s in sent and s not in written]
SEND = "FormSubmitter:battle_prompt-Send"


def gen(text: str, reason: str = "stop") -> Generation:
    return Generation(text, 5, len(text.split()), reason, 0.2, 0.05)


def test_least_compared_pair_first_and_random_sides():
    roster = [ModelSpec(n, f"local:http://h:1/v1#{n}") for n in ("a", "b", "c")]
    rng = np.random.default_rng(0)
    counts = {frozenset(("a", "b")): 3, frozenset(("a", "c")): 3, frozenset(("b", "c")): 1}
    drawn = [draw_pair(roster, counts, rng) for _ in range(200)]
    assert {frozenset((x.name, y.name)) for x, y in drawn} == {frozenset(("b", "c"))}
    left_b = sum(x.name == "b" for x, _ in drawn)
    assert 70 < left_b < 130  # sides at random (binomial(200, 0.5): 5 sigma band)


def test_a_voted_battle_is_an_app_vote_with_style_counts_and_cannot_be_voted_twice(sqlite_url):
    engine = open_battles(open_store(sqlite_url))
    bid = start_battle(engine, "ann", "m1", "m2")
    conv_a = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "# Hello\n\n- one\n- two"}]
    conv_b = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello **there**"}]
    assert save_turn(engine, bid, conv_a, conv_b, {"a": gen("x"), "b": gen("y", "length")})
    with pytest.raises(ValueError):
        vote_battle(engine, bid, "bob", "A")  # not this voter's battle
    vote_id = vote_battle(engine, bid, "ann", "B")
    with pytest.raises(DuplicateVote):
        vote_battle(engine, bid, "ann", "A")  # no second vote after the reveal
    votes = load_votes(engine, BATTLE_DATASET)
    assert len(votes) == 1 and int(votes["id"].iat[0]) == vote_id
    row = votes.iloc[0]
    assert (row["model_left"], row["model_right"], row["winner_model"], row["source"]) == ("m1", "m2", "m2", "battle")
    meta = json.loads(row["conv_metadata"])
    assert meta["header_count_a"] == 1 and meta["list_count_a"] == 2 and meta["bold_count_b"] == 1
    battle = load_battle(engine, bid)
    assert battle["status"] == "voted" and battle["answer_meta"][0]["b"]["finish_reason"] == "length"
    assert pair_counts(engine) == {frozenset(("m1", "m2")): 1}


def test_a_failed_battle_is_stored_and_never_counted(sqlite_url):
    from llm.providers.base import ProviderError

    engine = open_battles(open_store(sqlite_url))
    bid = start_battle(engine, "ann", "m1", "m2")
    conv = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "half an ans"}]
    ok = save_turn(engine, bid, conv, conv, {"a": gen("x"), "b": ProviderError("connection lost", retryable=False,
                                                                              kind="connection")})
    assert not ok
    battle = load_battle(engine, bid)
    assert battle["status"] == "failed" and "b: connection" in battle["error"]
    with pytest.raises(ValueError):
        vote_battle(engine, bid, "ann", "A")
    assert load_votes(engine, BATTLE_DATASET).empty and pair_counts(engine) == {}


def _page(monkeypatch, tmp_path: Path, url: str, roster: str) -> AppTest:
    (tmp_path / "roster.toml").write_text(roster)
    monkeypatch.setenv("PREFLAB_DB", url)
    monkeypatch.setenv("PREFLAB_ARENA", str(tmp_path / "roster.toml"))
    monkeypatch.setenv("PREFLAB_ACCESS", "invite")
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    return login(at, "ann")




def _everything(at: AppTest) -> str:
    """Every element the page sent, as the browser receives it (HTML bodies unescaped, the rest as protobufs)."""
    parts = [h.proto.body for h in at.get("html")]
    parts += [str(e.proto) for kind in ("markdown", "button", "success", "info", "warning", "caption", "text",
                                        "title", "text_area") for e in at.get(kind)]
    return "\n".join(parts)


def _roster(url: str, url_2: str) -> str:
    return "".join(f'[[model]]\nname = "{n}"\nspec = "local:{u}#smollm2"\nsystem = "{s}"\ntemperature = 0.0\n'
                   f"max_tokens = 24\n\n"
                   for n, u, s in zip(NAMES, (url, url_2), SYSTEMS, strict=True))


@pytest.mark.llama
def test_battle_page_streams_votes_reveals_and_follows_up(monkeypatch, tmp_path, sqlite_url, llama_url,  # noqa: F811
                                                         second_llama_url):
    at = _page(monkeypatch, tmp_path, sqlite_url, _roster(llama_url, second_llama_url))
    at.text_area(key="battle_text").input("What is the capital of France?")
    settle(at.button(key=SEND).click().run())
    assert not at.exception
    state = at.session_state["battle"]
    page = _everything(at)
    assert 'data-side="A"' in page and 'data-side="B"' in page and "A is better" in page
    engine = open_store(sqlite_url)
    secrets = (*NAMES, llama_url, second_llama_url, "127.0.0.1", "smollm2", *MARKERS, "tokens_out", "finish_reason")
    assert sent_secrets(page, secrets, load_battle(engine, state["id"])) == []
    assert load_battle(engine, state["id"])["status"] == "answered"
    at.text_area(key="battle_text").input("And of Spain?")  # a follow-up: same two models, same sides
    settle(at.button(key=SEND).click().run())
    battle = load_battle(engine, state["id"])
    assert battle["turns"] == 2 and len(battle["conversation_a"]) == 4
    assert at.session_state["battle"]["id"] == state["id"]
    assert not any(s in _everything(at) for s in (*NAMES, llama_url, second_llama_url))
    vote_button(at, "A").click().run()
    shown = _everything(at)
    assert battle["model_a"] in shown and battle["model_b"] in shown  # the reveal
    votes = load_votes(engine, BATTLE_DATASET)
    assert len(votes) == 1 and votes["winner_model"].iat[0] == battle["model_a"]
    final = load_battle(engine, state["id"])
    assert final["status"] == "voted" and all(t["a"]["finish_reason"] in ("stop", "length")
                                              for t in final["answer_meta"])


@pytest.mark.llama
def test_a_dead_server_gives_the_neutral_message_and_an_uncounted_battle(monkeypatch, tmp_path, sqlite_url,
                                                                        llama_url):  # noqa: F811
    from llm.local_server import free_port

    dead = f"http://127.0.0.1:{free_port()}/v1"
    roster = _roster(llama_url, dead)
    at = _page(monkeypatch, tmp_path, sqlite_url, roster)
    at.text_area(key="battle_text").input("Hello?")
    settle(at.button(key=SEND).click().run())
    page = _everything(at)
    assert "One answer failed; this battle will not count" in page
    assert not any(s in page for s in (*NAMES, dead, "connection", "ConnectError"))
    engine = open_store(sqlite_url)
    from voting.battles import battles_t

    with engine.connect() as conn:
        rows = conn.execute(battles_t.select()).mappings().all()
    assert len(rows) == 1 and rows[0]["status"] == "failed" and rows[0]["vote_id"] is None
    assert load_votes(engine, BATTLE_DATASET).empty


@pytest.mark.slow
def test_battle_votes_rank_with_style_control_as_their_export_does(sqlite_url, tmp_path):
    """The Leaderboard's path (stored votes -> battles -> fit) equals `export-votes` then `rank` from the file;
    the export carries Chatbot Arena's conversation_a/b and conv_metadata."""
    import subprocess
    import sys

    import pandas as pd

    from arena.leaderboard import fit_leaderboard
    from arena.leaderboard_options import IntervalOptions
    from voting.votes import votes_to_battles

    engine = open_battles(open_store(sqlite_url))
    rng = np.random.default_rng(3)
    models = ["m1", "m2", "m3", "m4"]
    def answer() -> str:  # style varies by answer, not by model (else it is collinear with the models)
        h, li, bo, w = rng.integers(0, 3), rng.integers(0, 5), rng.integers(0, 3), rng.integers(1, 80)
        return "# Head\n\n" * h + "- item\n" * li + "**b** " * bo + "word " * w

    for k in range(240):
        a, b = rng.choice(models, 2, replace=False)
        bid = start_battle(engine, f"v{k % 7}", str(a), str(b))
        texts = {"a": answer(), "b": answer()}
        conv = {s: [{"role": "user", "content": f"q{k}"}, {"role": "assistant", "content": texts[s]}] for s in "ab"}
        save_turn(engine, bid, conv["a"], conv["b"], {s: gen(texts[s]) for s in "ab"})
        p_a = 0.75 if models.index(a) < models.index(b) else 0.3
        vote_battle(engine, bid, f"v{k % 7}", str(rng.choice(["A", "B", "tie"], p=[p_a * 0.9, (1 - p_a) * 0.9, 0.1])))
    store_fit = fit_leaderboard(votes_to_battles(load_votes(engine, BATTLE_DATASET)), IntervalOptions(ci="sandwich"),
                                style_control=True).table.set_index("model")
    out, table = tmp_path / "battles.json", tmp_path / "lb.csv"
    cli = [sys.executable, "-c", "from preflab_cli import main; main()"]
    done = subprocess.run([*cli, "export-votes", str(out), "--db", sqlite_url], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    records = json.loads(out.read_text())
    assert len(records) == 240 and records[0]["conversation_a"][1]["role"] == "assistant"
    assert {"sum_assistant_a_tokens", "header_count_a", "bold_count_b"} <= set(records[0]["conv_metadata"])
    done = subprocess.run([*cli, "rank", str(out), "--style-control", "--ci", "sandwich", "--output", str(table)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    file_fit = pd.read_csv(table).set_index("model")
    assert sorted(file_fit.index) == models
    np.testing.assert_allclose(file_fit.loc[models, "rating"], store_fit.loc[models, "rating"], rtol=0, atol=1e-6)


@pytest.mark.parametrize(("env", "said"), [
    ({"PREFLAB_ARENA_MAX_PROMPT": "10"}, "the limit is 10"),
    ({"PREFLAB_ARENA_PER_MINUTE": "0"}, "You can send 0 prompts a minute"),
])
def test_prompt_cap_and_rate_limit_refuse_before_any_call(monkeypatch, tmp_path, sqlite_url, env, said):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    at = _page(monkeypatch, tmp_path, sqlite_url, _roster("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1"))
    at.text_area(key="battle_text").input("A prompt longer than ten characters")
    at.button(key=SEND).click().run()
    assert said in "\n".join(w.value for w in at.warning)
    with open_store(sqlite_url).connect() as conn:
        from voting.battles import battles_t

        assert conn.execute(battles_t.select()).first() is None  # no battle started, no server called


def test_a_side_past_its_timeout_fails_and_the_other_finishes(monkeypatch):
    import asyncio

    from tests.judge.api_fakes import ApiFake
    from voting.battles import ArenaLimits, stream_pair

    monkeypatch.setenv("PREFLAB_LOCAL_API_KEY", "sk-local-battle-0123456789")
    with ApiFake(delay=1.5) as slow, ApiFake() as fast:
        specs = {"a": ModelSpec("slow", f"local:{slow.url}#s", timeout=0.3),
                 "b": ModelSpec("fast", f"local:{fast.url}#f", timeout=10)}
        convs = {s: [{"role": "user", "content": "hi"}] for s in "ab"}
        seen: list[str] = []
        res = asyncio.run(stream_pair(specs, convs, ArenaLimits(), lambda side, text: seen.append(side)))
    assert getattr(res["a"], "kind", None) == "timeout"
    assert isinstance(res["b"], Generation) and res["b"].text and set(seen) == {"b"}


@pytest.mark.postgres
def test_two_app_processes_on_postgresql_vote_a_battle_once(pg_clean_url):
    """Two engines (as two app processes) race to vote the same answered battle: one vote lands."""
    import threading

    import sqlalchemy as sa

    from voting.battles import battles_t

    raw = sa.create_engine(pg_clean_url)
    battles_t.drop(raw, checkfirst=True)
    raw.dispose()
    engines = [open_battles(open_store(pg_clean_url)) for _ in range(2)]
    conv = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    bids = []
    for _ in range(20):
        bid = start_battle(engines[0], "ann", "m1", "m2")
        save_turn(engines[1], bid, conv, conv, {"a": gen("hello"), "b": gen("hello")})
        bids.append(bid)
    outcomes: list[str] = []

    def voter(engine, choice: str) -> None:  # noqa: ANN001
        for bid in bids:
            try:
                vote_battle(engine, bid, "ann", choice)
                outcomes.append("voted")
            except DuplicateVote:
                outcomes.append("duplicate")

    threads = [threading.Thread(target=voter, args=(e, c)) for e, c in zip(engines, ("A", "B"), strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    votes = load_votes(engines[0], BATTLE_DATASET)
    assert outcomes.count("voted") == 20 == len(votes) and outcomes.count("duplicate") == 20
    assert votes["item_id"].nunique() == 20 and pair_counts(engines[1]) == {frozenset(("m1", "m2")): 20}


def test_app_refuses_a_bad_roster_with_exit_2(tmp_path, capsys):
    from preflab_cli import main

    roster = tmp_path / "roster.toml"
    roster.write_text('[[model]]\nspec = "local:http://h:1/v1#only"\n')
    with pytest.raises(SystemExit) as e:
        main(["app", "--db", f"sqlite:///{tmp_path / 'v.db'}", "--arena", str(roster)])
    assert e.value.code == 2
    assert "roster.toml: field 'model': a battle needs at least two models" in capsys.readouterr().err


def test_make_demo_starts_the_battle_page_only_with_a_roster():
    import subprocess

    root = Path(__file__).resolve().parents[2]
    plain = subprocess.run(["make", "-n", "demo"], cwd=root, capture_output=True, text=True, timeout=60).stdout
    arena = subprocess.run(["make", "-n", "demo", "ARENA=roster.toml"], cwd=root, capture_output=True, text=True,
                           timeout=60).stdout
    app_line = [ln for ln in plain.splitlines() if "preflab app" in ln]
    assert app_line and "--arena" not in app_line[0]
    assert any("preflab app" in ln and '--arena "roster.toml"' in ln for ln in arena.splitlines())


def test_a_voter_can_draw_a_prompt_from_the_prompt_set(monkeypatch, tmp_path, sqlite_url):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"item_id": "1", "prompt": "Name a bird."}\n{"item_id": "2", "prompt": "Name a tree."}\n')
    monkeypatch.setenv("PREFLAB_ARENA_PROMPTS", str(prompts))
    at = _page(monkeypatch, tmp_path, sqlite_url, _roster("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1"))
    drawn = set()
    for _ in range(12):
        at.button(key="battle_draw").click().run()
        drawn.add(at.text_area(key="battle_text").value)
    assert drawn == {"Name a bird.", "Name a tree."}


def test_active_draws_the_arena_samplers_pair_from_battle_votes(sqlite_url):
    from arena.simulation.sampling import next_pair
    from voting.battles import battle_outcomes

    roster = [ModelSpec(n, f"local:http://h:1/v1#{n}") for n in ("a", "b", "c", "d")]
    engine = open_battles(open_store(sqlite_url))
    names = [m.name for m in roster]
    assert draw_pair(roster, {}, np.random.default_rng(0), "active", battle_outcomes(engine, names))  # no votes yet
    conv = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "x"}]
    for left, right, choice in [("a", "b", "A")] * 6 + [("c", "d", "tie")] * 3 + [("b", "c", "B")]:
        bid = start_battle(engine, "ann", left, right)
        save_turn(engine, bid, conv, conv, {"a": gen("x"), "b": gen("x")})
        vote_battle(engine, bid, "ann", choice)
    tensor = battle_outcomes(engine, names)
    assert tensor[0, 1, 0] == 6 and tensor[2, 3, 2] == 3 and tensor[1, 2, 1] == 1 and tensor.sum() == 10
    for seed in range(5):
        x, y = draw_pair(roster, pair_counts(engine), np.random.default_rng(seed), "active", tensor)
        i, j = next_pair(tensor, seed=np.random.default_rng(seed))
        assert (x.name, y.name) == (names[i], names[j])


def test_a_battle_vote_stores_its_time_on_the_pair_and_a_second_tab_cannot_recast_it(monkeypatch, tmp_path,
                                                                                    sqlite_url):
    """Two tabs of one voter hold the same answered battle (the second as a replay would): the first tab's
    vote stands, the second tab's later click is not applied, and the vote carries ``seconds_on_pair``."""
    import time

    engine = open_battles(open_store(sqlite_url))
    bid = start_battle(engine, "ann", *NAMES)
    conv = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert save_turn(engine, bid, conv, conv, {"a": gen("hello"), "b": gen("hello")})
    roster = _roster("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1")
    tabs = [_page(monkeypatch, tmp_path, sqlite_url, roster) for _ in range(2)]
    for tab in tabs:
        tab.session_state["battle"] = {"id": bid}
        tab.run()
        assert vote_button(tab, "A").value is False  # both tabs show the vote bar
    time.sleep(0.3)
    vote_button(tabs[0], "B").click().run()
    assert "Vote saved: B is better" in "\n".join(s.value for s in tabs[0].success)
    vote_button(tabs[1], "A").click().run()  # after the reveal in the other tab
    assert "already voted" in "\n".join(i.value for i in tabs[1].info)
    votes = load_votes(engine, BATTLE_DATASET)
    assert len(votes) == 1 and votes["winner_model"].iat[0] == NAMES[1]
    assert 0.3 <= votes["seconds_on_pair"].iat[0] < 30
    assert load_battle(engine, bid)["choice"] == "B"
