"""The real thing: ``streamlit run app.py`` driven by Debian's Chromium through Playwright.

Checks: vote by mouse and by keyboard shortcut (rows land in the database), no model name anywhere in the
page HTML before the vote, model output shown as text (no script runs, no <img onerror>), two voters in
two browser contexts at once, keys typed ahead under one pair never act on the next, answers keep their line
breaks in equal-height scroll boxes with the vote bar on a 1280x900 screen, the judging criteria, the import
preview (a bad file's problem, nothing written; a good file listed at once after Import). Screenshots go to
``test-artifacts/``.

Every wait is on state only the new page has (the shown item's id, fresh buttons), never on a button the
old page also had, so the tests hold on a busy machine.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

from tests.voting import browser_app
from tests.voting.browser_app import (
    ANSWER,
    ENGINES,
    bar_button,
    cast,
    invite_link,
    login,
    new_page,
    next_pair,
    shot,
    shown_item,
    skip,
    start_voting,
    streamlit_server,
    wait_revealed,
)
from tests.voting.conftest import MODELS, tiny_items, wait_for
from voting.items import load_items
from voting.pages.keyboard import BURST_MS
from voting.store import count_rows, import_items, load_votes, open_store, set_criteria

pytestmark = pytest.mark.browser
browser = browser_app.browser  # the module's Chromium fixture


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``streamlit run app.py`` on a free port over a fresh SQLite store with the tiny dataset."""
    db = tmp_path_factory.mktemp("browser") / "votes.db"
    url = f"sqlite:///{db}"
    engine = open_store(url)
    import_items(engine, load_items(tiny_items(6)), "tiny")
    import_items(engine, load_items(poem_items()), "zz-poems")
    set_criteria(engine, "zz-poems", "Judge the **poem**: rhyme and metre first.")
    flags = ["--server.headless", "true", "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    env = {"PREFLAB_DB": url, "PREFLAB_STRATEGY": "uniform", "PREFLAB_MIN_SECONDS": "0"}  # see test_browser_integrity
    with streamlit_server(db.parent, env, flags) as base:
        ENGINES[base] = engine
        yield base, engine


LIMERICK = ("A model that answered in rhyme\nWas asked for the date and the time\nIt said with a grin\n"
            "Let the metre begin\nAnd forgot what you asked every time")


def poem_items() -> pd.DataFrame:
    """Two items: a limerick (line breaks must survive) against a long answer (must scroll in its box)."""
    long = "\n\n".join(f"Paragraph {k}: " + "words " * 40 for k in range(40))
    return pd.DataFrame([{"item_id": f"p{i}", "prompt": f"Write a limerick number {i}.", "model": m, "answer": a}
                         for i in range(2) for m, a in (("lyra-poet", LIMERICK), ("vega-prose", long))])


def test_vote_by_mouse_then_by_keyboard(server, browser):
    base, engine = server
    page = login(browser, base, "mouse-voter")
    first = shown_item(page)
    html = page.content()
    assert "Prompt number" in html
    assert not [m for m in MODELS if m in html], "a model name is in the page before the vote"
    shot(page, "vote-before")
    page.get_by_role("button", name=re.compile("A is better")).click()
    wait_revealed(page, "A is better.")
    row = wait_for(lambda: load_votes(engine).query("voter == 'mouse-voter'").to_dict("records"))[0]
    assert row["winner_model"] == row["model_left"] and row["outcome"] == "win" and row["item_id"] == first
    page.get_by_text(row["model_left"]).first.wait_for()  # revealed after the vote
    shot(page, "vote-revealed")
    second_item = next_pair(page, first)  # the new round, not the old page's buttons
    assert not [m for m in MODELS if m in page.content()]
    page.locator("body").press("2")  # keyboard shortcut: B is better
    wait_revealed(page, "B is better.")
    rows = wait_for(lambda: (v := load_votes(engine).query("voter == 'mouse-voter'").to_dict("records"))[1:] and v)
    second = rows[1]
    assert second["winner_model"] == second["model_right"] and second["item_id"] == second_item != first
    shot(page, "vote-keyboard")


def test_model_output_is_text_and_runs_nothing(server, browser):
    base, engine = server
    page = login(browser, base, "xss-voter")
    shown = shown_item(page)
    for _ in range(6):  # skip until the item with the HTML attack (q000) is on screen
        if shown == "q000":
            break
        shown = skip(page, shown)
    page.get_by_text("window.__pwned = 1").first.wait_for(timeout=120_000)  # the answers, not just the prompt
    visible = page.locator(ANSWER % "A").all_inner_texts() + page.locator(ANSWER % "B").all_inner_texts()
    assert len(visible) == 2 and all("<script>window.__pwned = 1</script>" in t for t in visible), visible
    assert all('onerror="window.__pwned = 2"' in t for t in visible)
    assert page.evaluate("window.__pwned === undefined")
    assert page.locator("img[onerror]").count() == 0 and page.locator("script:has-text('__pwned')").count() == 0
    # a link in an answer opens a new tab (the page's script: st.html's sanitiser drops target="_blank")
    page.wait_for_function("() => Array.isArray(window.__preflabQueue)")
    page.evaluate("""() => { const a = document.createElement('a'); a.id = 'pf-test-link';
        a.href = '/?from=answer'; a.textContent = 'a link'; document.querySelector('.preflab-pair .pf-answer')
        .appendChild(a); }""")
    with page.context.expect_page() as tab:
        page.locator("#pf-test-link").click()
    assert "from=answer" in tab.value.url and "from=answer" not in page.url
    tab.value.close()
    code = page.locator("code", has_text="print(")
    assert "<b>not bold</b>" in code.first.inner_text()  # the fenced block renders as code, HTML as text
    shot(page, "vote-html-as-text")


def test_two_voters_at_once_every_vote_lands(server, browser):
    base, engine = server
    pages = [login(browser, base, f"parallel-{k}") for k in range(2)]
    items = [shown_item(p) for p in pages]
    for round_ in range(3):
        for page in pages:  # both clicks go out before either result is awaited
            page.get_by_role("button", name=re.compile("Tie")).click(no_wait_after=True)
        for k, page in enumerate(pages):
            wait_revealed(page, "a tie.")
            if round_ < 2:
                items[k] = next_pair(page, items[k])
    votes = load_votes(engine)
    for k in range(2):
        mine = votes[votes["voter"] == f"parallel-{k}"]
        assert len(mine) == 3 and mine["item_id"].is_unique and (mine["outcome"] == "tie").all()


def test_keys_pressed_under_one_pair_never_act_on_the_next(server, browser):
    """``s`` then ``1`` 30 ms apart skip one item and vote on nothing (the ``1`` was meant for the skipped
    pair); ``1``, ``n``, ``2`` 20 ms apart vote once and move on (the ``2`` came before the new pair): typed-ahead
    keys are dropped with a note, never applied to a pair nobody has read."""
    base, engine = server
    page = login(browser, base, "fast-keys")
    first = shown_item(page)
    # the queue is installed by a script that can run after the item shows on a busy machine
    page.wait_for_function("() => Array.isArray(window.__preflabQueue) && !!window.__preflabKeys")
    for key in "s1":
        page.keyboard.press(key)
        page.wait_for_timeout(30)
    page.wait_for_function("() => window.__preflabDropped === 1")
    assert "dropped: a new pair came" in page.locator("#preflab-keyq").inner_text()
    second = shown_item(page, old=first)
    assert load_votes(engine).query("voter == 'fast-keys'").empty
    page.wait_for_timeout(BURST_MS + 50)  # the voter reads this pair: a key sooner is typed ahead (still the last)
    for key in "1n2":
        page.keyboard.press(key)
        page.wait_for_timeout(20)
    page.wait_for_function("() => window.__preflabDropped === 2")
    third = shown_item(page, old=second)
    votes = load_votes(engine).query("voter == 'fast-keys'")
    assert votes["item_id"].tolist() == [second] and (votes["winner_model"] == votes["model_left"]).all()
    assert third not in (first, second)
    shot(page, "vote-fast-keys-dropped")


def test_key_queue_is_installed_once_and_idle_without_keys(server, browser):
    """The queue's script runs once per tab (not on every run) and checks for buttons only while keys wait:
    30 voters' idle tabs share the server's cores."""
    base, engine = server
    page = login(browser, base, "idle-keys")
    page.wait_for_function("() => Array.isArray(window.__preflabQueue) && !!window.__preflabKeys")
    pumps = "window.__preflabPumps"
    for _ in range(2):
        before = page.evaluate(pumps)
        assert isinstance(before, int), "the key queue is not installed"
        page.wait_for_timeout(1000)
        assert page.evaluate(pumps) == before, "the key queue polls while no key is queued"
        item = shown_item(page)
        page.keyboard.press("1")
        wait_revealed(page, "A is better.")
        page.keyboard.press("n")
        shown_item(page, old=item)
        page.wait_for_function("() => window.__preflabQueue.length === 0")
    assert page.evaluate("window.__preflabInstalls") == 1
    assert len(load_votes(engine).query("voter == 'idle-keys'")) == 2


def test_undo_counts_down_in_the_browser_without_a_rerun_a_second(server, browser):
    """The reveal panel asks the server for nothing while it counts the Undo window down (a rerun a second per
    voter was server and browser work that grew with the time voters spend reading the names)."""
    base, engine = server
    page = new_page(browser)
    sent: list = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda frame: sent.append(frame)))
    page.goto(invite_link(base, "tick-voter"))
    shown_item(page)
    cast(page, "A", "A is better.")
    label = page.locator(".st-key-undo button")
    first = int(re.search(r"\((\d+) s left", label.inner_text()).group(1))
    before = len(sent)
    page.wait_for_function(f"""() => {{ const m = document.querySelector('.st-key-undo button').innerText
        .match(/\\((\\d+) s left/); return m && Number(m[1]) <= {first - 2}; }}""", timeout=60_000)
    assert len(sent) == before, "the page asked the server for reruns while counting down"


def test_poems_keep_their_lines_long_answers_scroll_and_the_vote_bar_fits(server, browser):
    """At 1280x900: criteria first, the limerick's five lines, equal boxes, the long answer scrolls inside
    its box, the vote bar on screen without scrolling, the Undo button counting down."""
    base, engine = server
    page = login(browser, base, "poem-reader", viewport={"width": 1280, "height": 900})
    before = shown_item(page)  # the tiny dataset's pair
    page.locator("[data-testid='stSidebar'] [data-testid='stSelectbox']").click()
    page.get_by_role("option", name="zz-poems").click()
    page.get_by_text("How to judge").wait_for(timeout=120_000)
    assert "rhyme and metre first" in page.content()
    shot(page, "vote-criteria")
    page.get_by_role("button", name=re.compile("start voting")).click()
    item = shown_item(page, old=before)
    assert item in ("p0", "p1")
    boxes = [page.locator(ANSWER % side) for side in "AB"]
    texts = [b.inner_text() for b in boxes]
    assert any("in rhyme\nWas asked" in t for t in texts), texts  # a line break, not one paragraph
    heights = [b.bounding_box()["height"] for b in boxes]
    assert abs(heights[0] - heights[1]) < 2, heights
    scrolls = [b.evaluate("e => e.scrollHeight > e.clientHeight + 10") for b in boxes]
    assert sorted(scrolls) == [False, True]  # the long answer scrolls inside its box, the limerick does not
    bar = bar_button(page, "vote_A").bounding_box()
    assert bar["y"] + bar["height"] <= 900, bar
    shot(page, "vote-poems-1280x900")
    cast(page, "A", "A is better.")
    label = page.locator(".st-key-undo button")
    first = int(re.search(r"\((\d+) s left", label.inner_text()).group(1))
    page.wait_for_function(f"""() => {{ const m = document.querySelector('.st-key-undo button').innerText
        .match(/\\((\\d+) s left/); return m && Number(m[1]) <= {first - 2}; }}""", timeout=120_000)


def test_import_preview_then_import_and_the_new_dataset_is_listed(server, browser, tmp_path):
    """A bad file: its problem in the preview and Import disabled; a good one: its counts, then Import, and
    the new dataset is in the page's dataset lists without a reload."""
    base, engine = server
    bad = tmp_path / "broken.jsonl"
    bad.write_text('{"item_id": "a", "prompt": "p", "model": "m1", "answer": "x"}\n'
                   '{"item_id": "b", "prompt": "q", "model": "m1", "answer": "y"}\n')
    page = new_page(browser)
    page.goto(f"{base}/data")
    page.locator("input[type=file]").set_input_files(str(bad))
    message = page.get_by_text("Cannot import this file")
    message.wait_for(timeout=120_000)
    assert "broken.jsonl, line 1: field 'model': item 'a' has only one answer" in message.inner_text()
    assert page.locator(".st-key-import_go button").is_disabled()
    assert count_rows(engine, "items") == 6 + 2  # tiny and zz-poems, nothing more
    shot(page, "data-bad-import")
    good = tmp_path / "uploaded.csv"
    tiny_items(2).assign(item_id=lambda d: "u-" + d["item_id"]).to_csv(good, index=False)
    page.locator("[data-testid='stFileChipDeleteBtn'] button").click()
    message.wait_for(state="detached", timeout=120_000)
    page.locator("input[type=file]").set_input_files(str(good))
    page.get_by_text("Preview of uploaded.csv").wait_for(timeout=120_000)
    page.get_by_text("No problems found").wait_for(timeout=120_000)
    assert count_rows(engine, "items") == 6 + 2  # a preview writes nothing
    page.locator(".st-key-import_go button").click()
    # the dataset name is a code span (names are plain text, never Markdown): "into uploaded."
    page.get_by_text("Imported 2 items (6 answers from 3 models) into uploaded.").wait_for(timeout=120_000)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')")  # the run is over
    shot(page, "data-after-import")
    page.get_by_text("Datasets: tiny, uploaded, zz-poems").wait_for(timeout=60_000)  # listed without a reload
    assert count_rows(engine, "items") == 6 + 2 + 2


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
    name = "Voting as " + start_voting(guest)
    guest.reload()
    guest.get_by_text(name, exact=True).wait_for(timeout=60_000)  # the same anonymous id after a reload
    shot(guest, "vote-open-guest")


def test_undo_after_the_reveal_brings_another_item(server, browser):
    """Integrity rule: the voter saw the models, so the undone item does not come back; a new one does."""
    base, engine = server
    page = login(browser, base, "undo-voter")
    first = shown_item(page)
    cast(page, "A", "A is better.")
    page.locator(".st-key-undo button").click()
    shown_item(page, old=first)  # a new item's round
    assert load_votes(engine).query("voter == 'undo-voter'").empty
    assert count_rows(engine, "undone_votes") >= 1
    shot(page, "vote-undone")


def test_a_vote_sends_only_the_bar_and_next_the_new_pair(server, browser):
    """A vote reruns only the bar's fragment: the prompt and answers are not sent to the browser again (each
    element sent is React, style and layout work in every voter's tab); Next sends the new pair."""
    base, _ = server
    page = new_page(browser)
    got: list = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda f: got.append(f if isinstance(f, bytes)
                                                                                   else f.encode())))
    page.goto(invite_link(base, "bar-voter"))
    first = shown_item(page)
    answer = page.locator(ANSWER % "A").inner_text().strip().splitlines()[-1][:20].encode()
    got.clear()
    cast(page, "A", "A is better.")
    vote = b"".join(got)
    assert b"Prompt number" not in vote and answer not in vote, "a vote sent the prompt and answers again"
    got.clear()
    next_pair(page, first)
    assert b"Prompt number" in b"".join(got), "Next did not send the new pair"
    # no fade of a rerunning fragment's old elements: ~60 frames per slow click in every voter's tab
    stale = page.evaluate("""() => { const e = document.createElement('div');  // styled as Streamlit does
        e.setAttribute('data-stale', 'true'); e.style.cssText = 'opacity: 0.33; transition: opacity 1s ease-in 0.5s';
        document.querySelector('.stMain').appendChild(e); const s = getComputedStyle(e);
        const out = [s.transitionProperty, s.opacity]; e.remove(); return out; }""")
    assert stale == ["none", "1"], stale
