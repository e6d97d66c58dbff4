"""The Battle page for real: ``streamlit run app.py`` with an arena roster of two llama.cpp servers, driven by
Debian's Chromium. The answers grow while they stream, the vote (key 1) reveals the names, a follow-up goes
to the same pair, no websocket frame before the vote names a model or an endpoint, and a server killed
mid-answer gives the neutral message and a stored, uncounted battle."""

from __future__ import annotations

import os
import signal
import time

import pytest
from playwright.sync_api import Error as PlaywrightError

from tests.judge.conftest import llama_url  # noqa: F401  (fixture)
from tests.voting.browser_app import ENGINES, browser, invite_link, new_page, shot, streamlit_server  # noqa: F401
from tests.voting.conftest import wait_for
from tests.voting.test_battle import MARKERS, NAMES, SYSTEMS, second_llama_url, sent_secrets  # noqa: F401  (fixture)
from voting.battles import BATTLE_DATASET, battles_t, load_battle
from voting.store import load_votes, open_store

pytestmark = [pytest.mark.browser, pytest.mark.llama]
FLAGS = ["--server.headless", "true", "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
BOX = ".pf-battle[data-side='%s']"


def roster(urls: tuple[str, str], max_tokens: int = 48) -> str:
    """Two SmolLM2 servers; a 600 s answer timeout, so a loaded machine slows a battle down but never fails it
    (the 60 s default failed a follow-up when another job shared the cores)."""
    return "".join(f'[[model]]\nname = "{n}"\nspec = "local:{u}#smollm2"\nsystem = "{s}"\ntemperature = 0.0\n'
                   f"max_tokens = {max_tokens}\ntimeout = 600\n\n"
                   for n, u, s in zip(NAMES, urls, SYSTEMS, strict=True))


def arena_server(tmp_path, roster_text: str):  # noqa: ANN001, ANN201
    (tmp_path / "roster.toml").write_text(roster_text)
    url = f"sqlite:///{tmp_path / 'votes.db'}"
    engine = open_store(url)
    env = {"PREFLAB_DB": url, "PREFLAB_ARENA": str(tmp_path / "roster.toml"), "PREFLAB_ACCESS": "invite",
           "PREFLAB_ARENA_MAX_TOKENS": "400"}
    return engine, streamlit_server(tmp_path, env, FLAGS)


def open_battle(chromium, base: str, voter: str):  # noqa: ANN001, ANN201
    page = new_page(chromium)
    frames: list[bytes] = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda f: frames.append(f if isinstance(f, bytes)
                                                                                else f.encode())))
    page.goto(invite_link(base, voter).replace("/?", "/battle?"))
    page.get_by_text(f"Voting as {voter}").wait_for()
    page.get_by_text("Your prompt").wait_for()
    return page, frames


def send(page, text: str) -> None:  # noqa: ANN001
    page.locator("textarea").fill(text)
    page.get_by_role("button", name="Send").click()


def test_stream_vote_by_key_reveal_and_follow_up(tmp_path, browser, llama_url, second_llama_url):  # noqa: F811
    urls = (llama_url, second_llama_url)
    engine, server = arena_server(tmp_path, roster(urls))
    with server as base:
        ENGINES[base] = engine
        page, frames = open_battle(browser, base, "ann")
        send(page, "Write a short story about a lighthouse keeper.")
        lengths = []  # the A box's text while it streams (data-done="0")
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and not page.locator("[class*=st-key-battle_A_] button").count():
            streaming = page.locator(BOX % "A" + "[data-done='0']")
            if streaming.count():
                try:
                    lengths.append(len(streaming.first.inner_text(timeout=500)))
                except PlaywrightError:  # it finished between the count and the read
                    pass
            time.sleep(0.05)
        assert len(set(lengths)) >= 3 and lengths == sorted(lengths), lengths  # it grew, piece by piece
        page.get_by_text("A is better").wait_for()
        shot(page, "battle-answered")
        send(page, "Now make it rhyme.")  # follow-up: the same two models, the same sides
        page.get_by_text("Now make it rhyme.").first.wait_for()
        def answered_twice() -> bool:
            with engine.connect() as conn:
                row = conn.execute(battles_t.select()).mappings().one()
            return row["turns"] == 2 and row["status"] == "answered"

        wait_for(answered_twice, timeout=600)
        page.wait_for_function("""() => { const b = document.querySelector('[class*=st-key-battle_A_] button');
            return document.querySelectorAll(".pf-battle[data-side='A'][data-done='1']").length >= 2
                && b && !b.closest("[data-stale='true']"); }""")
        before = b"".join(frames).decode(errors="replace")
        with engine.connect() as conn:
            battle = load_battle(engine, conn.execute(battles_t.select()).mappings().one()["id"])
        assert sent_secrets(before, (*NAMES, *urls, "smollm2", *MARKERS, "tokens_out", "finish_reason"), battle) == []
        page.evaluate("() => document.activeElement && document.activeElement.blur()")  # keys go to the page
        page.locator("body").press("1")  # A is better
        page.get_by_text("Vote saved: A is better").wait_for()
        wait_for(lambda: len(load_votes(engine, BATTLE_DATASET)) > 0)
        votes = load_votes(engine, BATTLE_DATASET)
        winner = votes["winner_model"].iat[0]
        page.get_by_text(winner).first.wait_for()  # names after the vote
        assert winner.encode() in b"".join(frames)  # the frame check above can see a name when one is sent
        assert winner == votes["model_left"].iat[0] and winner in NAMES
        with engine.connect() as conn:
            row = conn.execute(battles_t.select()).mappings().one()
        assert row["status"] == "voted" and row["turns"] == 2 and row["vote_id"] == int(votes["id"].iat[0])
        shot(page, "battle-revealed")
        page.reload()  # a reload after the vote loses nothing and offers no second vote on that battle
        page.get_by_text("Your prompt").wait_for()
        assert len(load_votes(engine, BATTLE_DATASET)) == 1
        assert not page.locator("[class*=st-key-battle_A_] button").count()


def test_a_server_killed_mid_answer_gives_the_neutral_message(tmp_path, browser, llama_url):  # noqa: F811
    from llm.local_server import llama_process, smollm2_gguf

    with llama_process(smollm2_gguf(), n_threads=1, log=tmp_path / "doomed.log") as (doomed, proc):
        engine, server = arena_server(tmp_path, roster((llama_url, doomed), max_tokens=400))
        with server as base:
            ENGINES[base] = engine
            page, frames = open_battle(browser, base, "bob")
            send(page, "Write a very long story about a dragon and a knight, with many chapters.")
            page.wait_for_function("() => [...document.querySelectorAll('.pf-battle[data-done=\"0\"]')]"
                                   ".some(b => b.innerText.length > 40)", timeout=600_000)
            os.kill(proc.pid, signal.SIGKILL)
            page.get_by_text("One answer failed; this battle will not count").wait_for(timeout=600_000)
            seen = b"".join(frames) + page.content().encode()
            for secret in (*NAMES, doomed, "lost mid-answer", "RemoteProtocolError", "ReadError", "without a finish"):
                assert secret.encode() not in seen, secret
            with engine.connect() as conn:
                row = conn.execute(battles_t.select()).mappings().one()
            assert row["status"] == "failed" and row["vote_id"] is None and row["error"]
            assert load_votes(engine, BATTLE_DATASET).empty
            shot(page, "battle-failed")


def test_a_vote_key_or_click_while_a_follow_up_streams_loses_nothing(tmp_path, browser, llama_url,  # noqa: F811
                                                                      second_llama_url):  # noqa: F811
    """Streamlit stops a running script when a click or key arrives; the answers stream on regardless, no
    vote is taken before both finished, and the battle is answered, not abandoned."""
    engine, server = arena_server(tmp_path, roster((llama_url, second_llama_url), max_tokens=160))
    with server as base:
        ENGINES[base] = engine
        page, _ = open_battle(browser, base, "cy")
        send(page, "Say hello.")
        page.get_by_text("A is better").wait_for(timeout=600_000)
        send(page, "Now write a long story about a lighthouse keeper and the sea.")
        page.wait_for_function("() => [...document.querySelectorAll('.pf-battle[data-done=\"0\"]')]"
                               ".some(b => b.innerText.length > 20)", timeout=600_000)
        page.evaluate("() => document.activeElement && document.activeElement.blur()")
        page.locator("body").press("1")  # the vote key mid-answer
        bar = page.locator("[class*=st-key-battle_B_] button")
        if bar.count():
            bar.first.click(timeout=2000)  # and a click on whatever vote bar is on screen

        def settled() -> bool:
            with engine.connect() as conn:
                return conn.execute(battles_t.select()).mappings().one()["status"] != "answering"

        wait_for(settled, timeout=600)
        with engine.connect() as conn:
            row = conn.execute(battles_t.select()).mappings().one()
        assert (row["status"], row["turns"], row["vote_id"]) == ("answered", 2, None), row["error"]
        assert load_votes(engine, BATTLE_DATASET).empty  # nothing counted before both answers finished
        page.wait_for_function("() => document.querySelectorAll(\".pf-battle[data-side='A'][data-done='1']\")"
                               ".length >= 2 && document.querySelector('[class*=st-key-battle_A_] button')")
        page.evaluate("() => document.activeElement && document.activeElement.blur()")
        page.locator("body").press("2")  # now the vote counts
        page.get_by_text("Vote saved: B is better").wait_for()
        assert len(load_votes(engine, BATTLE_DATASET)) == 1


STOPPER = """() => { window.__stops = 0; window.__stopper = setInterval(() => {
  for (const b of document.querySelectorAll('[data-testid="stStatusWidget"] button')) {
    if (b.innerText.includes("Stop")) { b.click(); window.__stops += 1; }
  } }, 20); }"""


def test_streamlits_stop_while_answers_stream_freezes_nothing(tmp_path, browser, llama_url,  # noqa: F811
                                                              second_llama_url):  # noqa: F811
    """The header's Stop (pressed whenever it shows, while both answers stream) stops a page run, never the
    answers: they finish, the page draws them and the vote bar, and Send works again (before: the first Stop
    froze the page: the answer cut, Send disabled, no vote bar)."""
    engine, server = arena_server(tmp_path, roster((llama_url, second_llama_url), max_tokens=160))
    with server as base:
        ENGINES[base] = engine
        page, _ = open_battle(browser, base, "dee")
        send(page, "Write a long story about a lighthouse keeper and the sea.")
        page.wait_for_function("() => [...document.querySelectorAll('.pf-battle[data-done=\"0\"]')]"
                               ".some(b => b.innerText.length > 20)", timeout=600_000)
        page.evaluate(STOPPER)  # Stop shows only while a page run is long (it was: the whole answer)

        def answered() -> bool:
            with engine.connect() as conn:
                return conn.execute(battles_t.select()).mappings().one()["status"] != "answering"

        wait_for(answered, timeout=600)
        page.wait_for_function("""() => { const b = document.querySelector('[class*=st-key-battle_A_] button');
            return document.querySelectorAll(".pf-battle[data-side='A'][data-done='1']").length === 1
                && b && !b.closest("[data-stale='true']"); }""", timeout=60_000)
        page.evaluate("() => clearInterval(window.__stopper)")
        stops = page.evaluate("window.__stops")
        with engine.connect() as conn:
            row = conn.execute(battles_t.select()).mappings().one()
        assert row["status"] == "answered", row["error"]
        shown = page.locator(".pf-battle[data-side='A']").inner_text()
        assert shown.strip() and shown.split()[-1] in row["conversation_a"]  # the whole answer, not a cut one
        assert page.get_by_role("button", name="Send").is_enabled()
        shot(page, "battle-after-stop")
        print(f"Stop pressed {stops} times while the answers streamed")
