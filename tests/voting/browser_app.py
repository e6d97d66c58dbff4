"""The browser tests' harness: the app under streamlit run app.py on a free port, Debian's Chromium (a
module-scoped fixture), invite links, and waits on state only a new page has (the shown item's id, a reveal).

Every wait is on state only the new page has, never on a button the old page also had, and every click goes to
the round shown (its buttons' keys carry the round), so the tests hold on a busy machine. A click the page never
acted on (seen with a busy core beside the suite) is made again only where a second one cannot act twice."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.request
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.harness.chromium import ARGS, CHROMIUM
from tests.harness.pg_server import free_port
from tests.voting.conftest import wait_for

ROOT = Path(__file__).resolve().parents[2]


ARTIFACTS = ROOT / "test-artifacts"


ENGINES: dict = {}  # server address -> its store, for issuing invites


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
            return r.read().strip() == b"ok"
    except OSError:
        return False


@contextmanager
def streamlit_server(folder: Path, env: dict[str, str], flags: list[str], script: str = "app.py") -> Iterator[str]:
    """``streamlit run app.py`` (or ``script``) with ``flags`` on a free port (log in ``folder``), healthy; yields
    its base URL."""
    port = free_port()
    log = open(folder / "streamlit.log", "w")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", script, *flags,
                             "--server.address", "127.0.0.1", "--server.port", str(port)],
                            cwd=ROOT, env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _healthy(base) or proc.poll() is not None, timeout=90, every=0.3)
        assert proc.poll() is None, (folder / "streamlit.log").read_text()[-3000:]
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:  # a busy server still in a leaderboard fit: the test is over anyway
            proc.kill()
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


ANSWER = ".preflab-pair .pf-answer[data-side='%s']"  # answer A's or B's box (voting.pages.pair_html)


#: The pair shown and its round, once the round's vote bar is the only one: Streamlit marks the run before's
#: elements data-stale only after a while, so a bar not marked stale may still be the old round's (its clicks
#: are refused). The round is read from the bar's own key (``vote_A-<round>``, voting.pages.vote).
SHOWN_ROUND = """([oldItem, oldRound]) => {
  const stale = (e) => !!e.closest("[data-stale='true']");
  const box = document.querySelector('.preflab-pair[data-item]');
  const bars = document.querySelectorAll('.st-key-vote_A button');
  if (!box || bars.length !== 1 || stale(box) || stale(bars[0])) return null;
  const own = bars[0].closest("[class*='st-key-vote_A-']");
  const m = own && own.className.match(/st-key-vote_A-([A-Za-z0-9_-]+)/);
  const item = box.getAttribute('data-item');
  if (!m || !item || item === oldItem || m[1] === oldRound) return null;
  return [item, m[1]];
}"""

#: What the page shows, for a failed wait's message: items, vote bars' rounds, stale marks, alerts, toasts.
PAGE_STATE = """() => ({
  items: [...document.querySelectorAll('.preflab-pair[data-item]')].map(e => e.getAttribute('data-item')),
  bars: [...document.querySelectorAll("[class*='st-key-vote_A-']")].map(e => e.className.match(/vote_A-\\S+/)[0]),
  stale: document.querySelectorAll("[data-stale='true']").length,
  running: !!document.querySelector("[data-testid='stStatusWidget']"),
  next: !!document.querySelector('.st-key-next button'),
  said: [...document.querySelectorAll("[data-testid='stAlert'], [data-testid='stToast']")].map(e => e.innerText),
})"""

_ROUNDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # page -> the round shown_item last returned


def page_state(page) -> dict:  # noqa: ANN001
    return page.evaluate(PAGE_STATE)


def shown_item(page, old: str | None = None, timeout: float = 120_000) -> str:  # noqa: ANN001
    """Wait until the page shows a round with its own vote bar, the only one, of an item other than ``old`` (and,
    with ``old``, a round other than the one returned before); its item id. Clicks then go to that round's
    buttons (:func:`click_bar`)."""
    arg = [old, _ROUNDS.get(page) if old is not None else None]
    try:
        item, rnd = page.wait_for_function(SHOWN_ROUND, arg=arg, timeout=timeout, polling=100).json_value()
    except PlaywrightTimeout:
        raise AssertionError(f"no new round of an item other than {old!r}; the page: {page_state(page)}") from None
    _ROUNDS[page] = rnd
    return item


def round_shown(page) -> str:  # noqa: ANN001
    """The round :func:`shown_item` last returned for ``page``."""
    return _ROUNDS[page]


def bar_button(page, name: str):  # noqa: ANN201, ANN001
    """The button ``name`` (vote_A, vote_B, vote_tie, vote_bothbad, skip) of the round shown: never a button of
    the round before, which may stay on screen, unmarked, until its redraw ends."""
    return page.locator(f".st-key-{name}-{_ROUNDS[page]} button")


def click_bar(page, name: str) -> None:  # noqa: ANN001
    bar_button(page, name).click()


RESEND_AFTER_MS = 20_000  # a click not acted on this long, the page idle, is made again


def click_until_acted_on(page, click: Callable[[], None], settled: Callable[[float], object],  # noqa: ANN001
                         still: Callable[[dict], bool], what: str, after: float | None = None) -> object:
    """``click()``, then ``settled(timeout)``; a click the page has not acted on after ``after`` ms, with the page
    idle and ``still(state)`` (it shows what it showed before the click), is made again. On a loaded machine a
    click can be lost; the clicks resent here are bound to the round shown (Skip, a vote) or exist only before
    their effect (Next, Start voting), so a second one can never act twice."""
    after = after or RESEND_AFTER_MS
    for _ in range(6):
        click()
        for _ in range(15):  # up to 15 waits of ``after`` for a page at work
            try:
                return settled(after)
            except (AssertionError, PlaywrightTimeout):
                state = page_state(page)
            if not still(state):
                return settled(120_000)  # it acted: the page moved on
            if not (state["running"] or state["stale"]):
                break  # idle and unchanged: the click was lost
    raise AssertionError(f"{what} was never acted on; the page: {page_state(page)}")


def skip(page, shown: str) -> str:  # noqa: ANN001
    """Skip the round shown (of item ``shown``); the next item."""
    bar = [f"vote_A-{_ROUNDS[page]}"]
    return click_until_acted_on(page, lambda: click_bar(page, "skip"), lambda t: shown_item(page, old=shown, timeout=t),
                                lambda state: state["bars"] == bar, "Skip")


def cast(page, choice: str, said: str) -> None:  # noqa: ANN001
    """Vote ``choice`` (A, B, tie, bothbad) on the round shown; wait for its after-vote panel saying ``said``."""
    bar = [f"vote_A-{_ROUNDS[page]}"]
    click_until_acted_on(page, lambda: click_bar(page, f"vote_{choice}"),
                         lambda t: wait_revealed(page, said, timeout=t), lambda state: state["bars"] == bar,
                         f"the vote {choice}")


def next_pair(page, shown: str) -> str:  # noqa: ANN001
    """Next, after a vote on item ``shown``; the next item."""
    return click_until_acted_on(page, lambda: page.locator(".st-key-next button").click(),
                                lambda t: shown_item(page, old=shown, timeout=t),
                                lambda state: state["next"] and not state["bars"], "Next")


IDLE = """() => !document.querySelector("[data-testid='stStatusWidget']")
  && !document.querySelector("[data-stale='true']")"""  # no script run in progress, nothing left from the one before


def start_voting(page) -> str:  # noqa: ANN001
    """Press "Start voting" on the open sign-in form (once the page is idle); the guest id it gave. A second
    press in one browser session gives the same id back, so a lost press is made again."""
    start = page.get_by_role("button", name="Start voting")
    who = page.get_by_text(re.compile(r"^Voting as guest-[0-9a-f]{10}$"))

    def signed_in(timeout: float) -> str:
        who.wait_for(timeout=timeout)
        return who.inner_text().removeprefix("Voting as ")

    page.wait_for_function(IDLE, timeout=120_000)
    return click_until_acted_on(page, start.click, signed_in,
                                lambda _: "guest=" not in page.url and start.count() > 0, "Start voting")


def wait_revealed(page, said: str, timeout: float = 120_000) -> None:  # noqa: ANN001
    """Wait for the after-vote panel of this vote: its message, no vote bar left, and a fresh Next button; ``first``:
    a copy of the message the run before drew may still be in the page (strict mode would fail at once on two)."""
    page.get_by_text(f"Vote saved: {said}").first.wait_for(timeout=timeout)
    page.wait_for_function("""() => { const b = document.querySelector('.st-key-next button');
        return b && !b.closest("[data-stale='true']") && !document.querySelector('.st-key-vote_A button'); }""",
                           timeout=timeout)


def new_page(browser, viewport: dict | None = None):  # noqa: ANN001, ANN201
    """A page in a fresh context; generous waits, so a busy machine is slow, not wrong."""
    ctx = browser.new_context(viewport=viewport or {"width": 1400, "height": 1000})
    ctx.set_default_timeout(120_000)
    return ctx.new_page()


def login(browser, base: str, voter: str, viewport: dict | None = None):  # noqa: ANN001, ANN201
    page = new_page(browser, viewport)
    page.goto(invite_link(base, voter))
    page.get_by_text(f"Voting as {voter}").wait_for()
    shown_item(page)
    return page


def shot(page, name: str) -> None:  # noqa: ANN001
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
