"""The browser harness's waits and clicks (tests/voting/browser_app.py) on pages built here, in Chromium: the
states a loaded machine produces on the vote page, made on demand. The new pair's box drawn while the round
before's vote bar is still on screen, unmarked (Streamlit marks it stale only after a while): the wait does not
take it for the new round (the old wait did, and the test's Skip went to the old round and was refused); a click
the page never acted on is made again, and one the page is still working on is not."""

from __future__ import annotations

import pytest

from tests.voting import browser_app
from tests.voting.browser_app import round_shown, shown_item, skip

pytestmark = pytest.mark.browser
browser = browser_app.browser  # the module's Chromium fixture

#: The vote page's shape as the harness reads it: the pair's box, and the bar whose buttons' keys carry the round.
PAGE = """<div class="preflab-pair" data-item="{item}"></div>
<div id="bar"><div class="st-key-vote_A"><div class="st-key-vote_A-{rnd}"><button>A is better</button></div></div>
<div class="st-key-skip"><div class="st-key-skip-{rnd}"><button onclick="window.pressed(this)">Skip</button></div></div>
</div>"""

#: Skip's effect: the next item and round, drawn after ``delay`` ms; presses before ``lost`` are dropped; while
#: it works the page shows Streamlit's running indicator.
SKIP = """([lost, delay]) => { window.presses = 0;
  window.pressed = () => { window.presses += 1; if (window.presses <= lost) return;
    const busy = document.createElement('div'); busy.setAttribute('data-testid', 'stStatusWidget');
    document.body.appendChild(busy);
    setTimeout(() => { document.querySelector('.preflab-pair').setAttribute('data-item', 'q2');
      document.getElementById('bar').outerHTML = document.getElementById('next').innerHTML; busy.remove(); }, delay);
  }; }"""


def _page(browser, item: str = "q1", rnd: str = "r1"):  # noqa: ANN001, ANN202
    page = browser.new_page()
    page.set_content(PAGE.format(item=item, rnd=rnd) + f'<template id="next">{PAGE.format(item="q2", rnd="r2")}'
                     .replace('<div class="preflab-pair" data-item="q2"></div>', "") + "</template>")
    return page


def test_the_new_box_over_the_old_rounds_bar_is_not_the_new_round(browser):
    page = _page(browser)
    assert shown_item(page) == "q1" and round_shown(page) == "r1"
    page.evaluate("() => document.querySelector('.preflab-pair').setAttribute('data-item', 'q2')")  # bar: still r1
    with pytest.raises(AssertionError, match="no new round"):
        shown_item(page, old="q1", timeout=1_500)
    page.evaluate("() => { document.getElementById('bar').outerHTML = document.getElementById('next').innerHTML; }")
    assert shown_item(page, old="q1") == "q2" and round_shown(page) == "r2"


@pytest.mark.parametrize(("lost", "delay", "presses"), [(0, 0, 1), (1, 0, 2), (2, 0, 3), (0, 2_500, 1)])
def test_skip_is_pressed_again_only_when_the_page_never_acted(browser, monkeypatch, lost, delay, presses):
    """Lost presses are made again; a press the page is working on (its running indicator shown for longer than
    the wait before a resend) is not."""
    monkeypatch.setattr(browser_app, "RESEND_AFTER_MS", 500)
    page = _page(browser)
    page.evaluate(SKIP, [lost, delay])
    assert shown_item(page) == "q1"
    assert skip(page, "q1") == "q2" and round_shown(page) == "r2"
    assert page.evaluate("window.presses") == presses
