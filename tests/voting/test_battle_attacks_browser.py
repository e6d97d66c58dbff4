"""The Battle page attacked from a real browser (Debian's Chromium, ``streamlit run app.py``), the models a
stdlib fake server on loopback: a vote message replayed from an earlier battle votes nothing."""

from __future__ import annotations

import pytest

from tests.judge.api_fakes import ApiFake
from tests.voting.browser_app import ENGINES, browser, invite_link, new_page, streamlit_server  # noqa: F401
from tests.voting.conftest import wait_for
from voting.battles import BATTLE_DATASET, battles_t, load_battle
from voting.store import load_votes, open_store

pytestmark = pytest.mark.browser
FLAGS = ["--server.headless", "true", "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]


def test_battle_ones_vote_message_replayed_after_battle_two_votes_nothing(tmp_path, browser):  # noqa: F811
    """Today the replay voted battle 2: the buttons' keys were fixed (``battle_A``) and the battle rode in
    callback args rebound on every render. The key now carries the battle and its turn."""
    with ApiFake() as api:
        (tmp_path / "roster.toml").write_text("".join(
            f'[[model]]\nname = "{n}"\nspec = "local:{api.url}#{n}"\nmax_tokens = 24\n\n' for n in ("zephyrine-7b",
                                                                                                     "quokka-13b")))
        url = f"sqlite:///{tmp_path / 'votes.db'}"
        engine = open_store(url)
        env = {"PREFLAB_DB": url, "PREFLAB_ARENA": str(tmp_path / "roster.toml"), "PREFLAB_ACCESS": "invite",
               "PREFLAB_LOCAL_API_KEY": "sk-local-battle-0123456789", "PREFLAB_MIN_SECONDS": "0"}
        with streamlit_server(tmp_path, env, FLAGS) as base:
            ENGINES[base] = engine
            page = new_page(browser)
            sent: list[bytes] = []
            wire: dict = {}

            def route(ws) -> None:  # noqa: ANN001  (the page's websocket, through us: we keep what it sends)
                server = ws.connect_to_server()
                wire["server"] = server

                def from_page(message) -> None:  # noqa: ANN001
                    sent.append(message if isinstance(message, bytes) else message.encode())
                    server.send(message)

                ws.on_message(from_page)

            page.route_web_socket("**/_stcore/stream", route)
            page.goto(invite_link(base, "replayer").replace("/?", "/battle?"))
            page.get_by_text("Your prompt").wait_for()

            def battle(prompt: str) -> str:
                page.locator("textarea").fill(prompt)
                page.get_by_role("button", name="Send").click()
                page.locator("[class*=st-key-battle_A_] button").wait_for()
                with engine.connect() as conn:
                    rows = conn.execute(battles_t.select().where(battles_t.c.status == "answered")).mappings().all()
                assert len(rows) == 1
                return rows[0]["id"]

            first = battle("First battle?")
            before = len(sent)
            page.locator("[class*=st-key-battle_A_] button").click()
            page.get_by_text("Vote saved: A is better").wait_for()
            replay = next(m for m in sent[before:] if f"battle_A_{first}".encode() in m)  # the vote's message
            second = battle("Second battle?")
            wire["server"].send(replay)  # battle 1's vote message again, as a client could send it
            page.locator("[class*=st-key-battle_B_] button").click()  # then the voter's own vote on battle 2
            page.get_by_text("Vote saved: B is better").wait_for()
            wait_for(lambda: load_battle(engine, second)["status"] == "voted")
    votes = load_votes(engine, BATTLE_DATASET).set_index("item_id")
    assert sorted(votes.index) == sorted([first, second])
    assert votes.loc[second, "winner_model"] == load_battle(engine, second)["model_b"]  # not A: the replay did nothing
    assert votes.loc[first, "winner_model"] == load_battle(engine, first)["model_a"]


def test_guests_minted_in_new_browser_contexts_meet_the_address_limits(tmp_path):
    """Three attackers from one address, a new browser context (so a new guest id) after each refusal, pressing
    Send as fast as the page answers (before the per-address limits: 90 battles, 180 model calls in 57 s).
    With 2 prompts a minute per guest, 4 per address and 3 guest ids an hour, exactly 4 battles start (8 calls)
    and no fourth guest id is issued. The workers stop on what the page says (the address's or the guest-id
    limit), never on time."""
    from tests.harness.battle_attack import arena, many_guests, run, wait_answered

    with arena(tmp_path, PREFLAB_ARENA_PER_MINUTE="2", PREFLAB_ARENA_PER_ADDRESS="4",
               PREFLAB_GUESTS_PER_ADDRESS="3") as a:
        tally = run(lambda: many_guests(a.base, 3, lambda t: t.presses["address"] + t.sign_ins["refused"] >= 3))
        got = wait_answered(a)
    assert tally.presses["started"] == got["battles"] == got["turns"] == 4, (tally, got)
    assert got["model calls"] == 8 and got["guest ids"] == 3, got
    assert tally.presses["address"] >= 1, tally  # the address's limit, in the page's words


def test_one_guest_in_sixteen_tabs_pressing_send_together_starts_the_limit(tmp_path):
    """One guest, 16 tabs, Send pressed in all at once (before the one-transaction claim: 9 started against a
    limit of 6 a minute): exactly 6 start, 12 model calls; the other 10 tabs say the per-guest limit."""
    from tests.harness.battle_attack import arena, many_tabs, run, wait_answered

    with arena(tmp_path) as a:
        said = run(lambda: many_tabs(a.base, 16))
        got = wait_answered(a)
    assert got["battles"] == got["turns"] == 6 and got["model calls"] == 12, got
    assert said == {"started": 6, "voter": 10}, said
