"""The real thing: ``streamlit run app.py`` driven by Debian's Chromium through Playwright.

Checks: vote by mouse and by keyboard shortcut (rows land in the database), no model name anywhere in the
page HTML before the vote, model output shown as text (no script runs, no <img onerror>), two voters in
two browser contexts at once, a bad import shows a clear message. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.app.conftest import MODELS, tiny_items, wait_for
from tests.app.pg_server import free_port
from voting.items import load_items
from voting.store import count_rows, import_items, load_votes, open_store

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
ENGINES: dict = {}  # server address -> its store, for issuing invites
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
            return r.read().strip() == b"ok"
    except OSError:
        return False


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``streamlit run app.py`` on a free port over a fresh SQLite store with the tiny dataset."""
    db = tmp_path_factory.mktemp("browser") / "votes.db"
    url = f"sqlite:///{db}"
    engine = open_store(url)
    import_items(engine, load_items(tiny_items(6)), "tiny")
    port = free_port()
    env = {**os.environ, "PREFLAB_DB": url, "PREFLAB_STRATEGY": "uniform"}
    log = open(db.parent / "streamlit.log", "w")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                             "--server.address", "127.0.0.1", "--server.port", str(port),
                             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    ENGINES[base] = engine
    try:
        wait_for(lambda: _healthy(base) or proc.poll() is not None, timeout=90, every=0.3)
        assert proc.poll() is None, (db.parent / "streamlit.log").read_text()[-3000:]
        yield base, engine
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Debian's Chromium not found at {CHROMIUM} (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


def invite_link(base: str, voter: str) -> str:
    """An invite link for ``voter``, issued in the server's store as ``preflab invite`` does."""
    from voting.access import invite_url, issue_invite

    return invite_url(base, issue_invite(ENGINES[base], voter))


def login(browser, base: str, voter: str):  # noqa: ANN001, ANN201
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.goto(invite_link(base, voter))
    page.get_by_text(f"Voting as {voter}").wait_for(timeout=60_000)
    page.get_by_text("Prompt", exact=True).wait_for(timeout=60_000)
    page.get_by_role("button", name=re.compile("A is better")).wait_for()
    return page


def shot(page, name: str) -> None:  # noqa: ANN001
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_vote_by_mouse_then_by_keyboard(server, browser):
    base, engine = server
    page = login(browser, base, "mouse-voter")
    html = page.content()
    assert "Prompt number" in html
    assert not [m for m in MODELS if m in html], "a model name is in the page before the vote"
    shot(page, "vote-before")
    page.get_by_role("button", name=re.compile("A is better")).click()
    page.get_by_text("Vote saved: A is better.").wait_for(timeout=60_000)
    row = wait_for(lambda: load_votes(engine).query("voter == 'mouse-voter'").to_dict("records"))[0]
    assert row["winner_model"] == row["model_left"] and row["outcome"] == "win"
    page.get_by_text(row["model_left"]).first.wait_for()  # revealed after the vote
    shot(page, "vote-revealed")
    page.get_by_role("button", name=re.compile("Next")).click()
    page.get_by_role("button", name=re.compile("B is better")).wait_for()
    assert not [m for m in MODELS if m in page.content()]
    page.locator("body").press("2")  # keyboard shortcut: B is better
    page.get_by_text("Vote saved: B is better.").wait_for(timeout=30_000)
    rows = wait_for(lambda: (v := load_votes(engine).query("voter == 'mouse-voter'").to_dict("records"))[1:] and v)
    second = rows[1]
    assert second["winner_model"] == second["model_right"] and second["item_id"] != row["item_id"]
    shot(page, "vote-keyboard")


def test_model_output_is_text_and_runs_nothing(server, browser):
    base, engine = server
    page = login(browser, base, "xss-voter")
    prompt = page.get_by_text(re.compile(r"^Prompt number \d+\?$"))
    for _ in range(6):  # skip until the item with the HTML attack (prompt 0) is on screen
        shown = prompt.inner_text()
        if shown == "Prompt number 0?":
            break
        page.get_by_role("button", name=re.compile("Skip")).click()
        page.get_by_text(shown, exact=True).wait_for(state="detached", timeout=30_000)
        prompt.wait_for(timeout=30_000)
    page.get_by_text("window.__pwned = 1").first.wait_for(timeout=30_000)  # the answers, not just the prompt
    visible = page.locator("[data-testid='stMarkdownContainer']").all_inner_texts()
    assert any("<script>window.__pwned = 1</script>" in t for t in visible), " | ".join(visible)
    assert any('onerror="window.__pwned = 2"' in t for t in visible)
    assert page.evaluate("window.__pwned === undefined")
    assert page.locator("img[onerror]").count() == 0 and page.locator("script:has-text('__pwned')").count() == 0
    code = page.locator("code", has_text="print(")
    assert "<b>not bold</b>" in code.first.inner_text()  # the fenced block renders as code, HTML as text
    shot(page, "vote-html-as-text")


def test_two_voters_at_once_every_vote_lands(server, browser):
    base, engine = server
    pages = [login(browser, base, f"parallel-{k}") for k in range(2)]
    for round_ in range(3):
        for page in pages:  # both clicks go out before either result is awaited
            page.get_by_role("button", name=re.compile("Tie")).click(no_wait_after=True)
        for page in pages:
            page.get_by_text("Vote saved: a tie.").wait_for(timeout=30_000)
            if round_ < 2:
                page.get_by_role("button", name=re.compile("Next")).click()
                page.get_by_role("button", name=re.compile("Tie")).wait_for()
    votes = load_votes(engine)
    for k in range(2):
        mine = votes[votes["voter"] == f"parallel-{k}"]
        assert len(mine) == 3 and mine["item_id"].is_unique and (mine["outcome"] == "tie").all()


def test_bad_import_shows_a_clear_message(server, browser, tmp_path):
    base, engine = server
    bad = tmp_path / "broken.jsonl"
    bad.write_text('{"item_id": "a", "prompt": "p", "model": "m1", "answer": "x"}\n'
                   '{"item_id": "b", "prompt": "q", "model": "m1", "answer": "y"}\n')
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.goto(f"{base}/data")
    page.locator("input[type=file]").set_input_files(str(bad))
    page.get_by_role("button", name="Import").click()
    message = page.get_by_text("Nothing was imported")
    message.wait_for(timeout=30_000)
    assert "broken.jsonl, line 1: field 'model': item 'a' has only one answer" in message.inner_text()
    assert count_rows(engine, "items") == 6
    shot(page, "data-bad-import")


def test_invite_link_survives_a_reload_and_open_voting_is_labelled(server, browser):
    base, engine = server
    page = login(browser, base, "reload-voter")
    item = wait_for(lambda: page.get_by_text(re.compile(r"^Prompt number \d+\?$")).inner_text(timeout=60_000))
    page.reload()
    page.get_by_text("Voting as reload-voter").wait_for(timeout=60_000)  # still signed in, no form
    page.get_by_text(re.compile(r"^Prompt number \d+\?$")).wait_for(timeout=60_000)
    assert "Votes per voter" not in page.content() and item
    shot(page, "vote-after-reload")
    guest = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    guest.goto(base)
    guest.get_by_text("Open voting").first.wait_for(timeout=60_000)
    guest.get_by_role("button", name="Start voting").click()
    who = guest.get_by_text(re.compile(r"^Voting as guest-[0-9a-f]{10}$"))
    who.wait_for(timeout=60_000)
    name = who.inner_text()
    guest.reload()
    guest.get_by_text(name, exact=True).wait_for(timeout=60_000)  # the same anonymous id after a reload
    shot(guest, "vote-open-guest")


def test_undo_after_the_reveal_brings_another_item(server, browser):
    """Integrity rule: the voter saw the models, so the undone item does not come back; a new one does."""
    base, engine = server
    page = login(browser, base, "undo-voter")
    prompt = page.get_by_text(re.compile(r"^Prompt number \d+\?$"))
    first = prompt.inner_text(timeout=60_000)
    page.get_by_role("button", name=re.compile("A is better")).click()
    page.get_by_text("Vote saved: A is better.").wait_for(timeout=60_000)
    page.get_by_role("button", name=re.compile("Undo")).click()
    page.get_by_text(re.compile(r"^Prompt number \d+\?$")).wait_for(timeout=60_000)
    wait_for(lambda: prompt.inner_text(timeout=60_000) != first, timeout=60)  # the new item's prompt
    assert load_votes(engine).query("voter == 'undo-voter'").empty
    assert count_rows(engine, "undone_votes") >= 1
    shot(page, "vote-undone")
