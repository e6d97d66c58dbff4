"""Typed-ahead keys are bound to the round they were pressed under, not held back by the minimum time on a
pair: with ``PREFLAB_MIN_SECONDS=0``, ``s`` then ``1`` 0 to 92 ms apart (24 trials) skips one pair and votes on
nothing, even when the next pair is drawn before the ``1`` (on an idle machine a redraw takes ~40 ms: before, the
``1`` voted on the new pair in 12 of these 24 trials). Each press is logged with the round on screen by a listener
the test installs before the app's own (Chromium)."""

from __future__ import annotations

import pytest

from tests.voting import browser_app
from tests.voting.browser_app import invite_link, shown_item, streamlit_server
from tests.voting.conftest import tiny_items
from voting.items import load_items
from voting.pages.keyboard import BURST_MS
from voting.store import import_items, load_votes, open_store

pytestmark = pytest.mark.browser
browser = browser_app.browser  # the module's Chromium fixture
TRIALS = 24
# runs before the app's scripts: each key pressed, with the round on screen at that moment (the key queue's marker)
PRESS_LOG = """window.__pressed = [];
window.addEventListener("keydown", (e) => {
  const m = document.querySelector(".st-key-keyboard_queue [data-preflab-run]");
  window.__pressed.push({key: e.key, round: m ? m.getAttribute("data-preflab-pair") : null});
}, true);"""
# both keys handled: the queue is empty and the 1 was dropped, or (the bug) it voted and the reveal is up
SETTLED = """(n) => window.__preflabQueue && window.__preflabQueue.length === 0 && (window.__preflabDropped > n
  || !!document.querySelector('.st-key-next button:not([disabled])'))"""


def test_s_then_1_never_votes_on_the_pair_the_skip_brought(tmp_path, browser):  # noqa: F811
    url = f"sqlite:///{tmp_path / 'votes.db'}"
    engine = open_store(url)
    import_items(engine, load_items(tiny_items(2 * TRIALS + 6)), "tiny")
    env = {"PREFLAB_DB": url, "PREFLAB_STRATEGY": "uniform", "PREFLAB_MIN_SECONDS": "0"}
    flags = ["--server.headless", "true", "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    with streamlit_server(tmp_path, env, flags) as base:
        browser_app.ENGINES[base] = engine
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        ctx.set_default_timeout(120_000)
        ctx.add_init_script(PRESS_LOG)
        page = ctx.new_page()
        page.goto(invite_link(base, "typist"))
        item = shown_item(page)
        for trial in range(TRIALS):
            page.wait_for_function("() => Array.isArray(window.__preflabQueue) && !!window.__preflabKeys")
            dropped = page.evaluate("window.__preflabDropped")
            page.wait_for_timeout(BURST_MS + 50)  # the voter reads this pair: the s is not typed ahead
            page.keyboard.press("s")
            page.wait_for_timeout(4 * trial)  # 0 to 92 ms: typed ahead (BURST_MS is 300)
            page.keyboard.press("1")
            page.wait_for_function(SETTLED, arg=dropped)
            if page.locator(".st-key-next button").count():  # the 1 voted: go on to the next pair
                page.keyboard.press("n")
            item = shown_item(page, old=item)
        pressed = page.evaluate("window.__pressed")
        dropped = page.evaluate("window.__preflabDropped")
        ctx.close()
    ones = [p for p in pressed if p["key"] == "1"]
    redrawn = sum(p["round"] != s["round"] for s, p in zip(pressed[::2], pressed[1::2], strict=True))
    votes = load_votes(engine).query("voter == 'typist'")
    print(f"{len(votes)} of {TRIALS} trials voted; the 1 came after the new pair was drawn in {redrawn}")
    assert len(ones) == TRIALS and 4 * (TRIALS - 1) < BURST_MS
    assert votes.empty, f"{len(votes)}/{TRIALS} trials voted on the pair the skip brought"
    assert dropped == TRIALS
