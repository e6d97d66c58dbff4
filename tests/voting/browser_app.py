"""The browser tests' harness: the app under streamlit run app.py on a free port, Debian's Chromium (a
module-scoped fixture), invite links, and waits on state only a new page has (the shown item's id, a reveal).

Every wait is on state only the new page has, never on a button the old page also had, so the tests hold on a
busy machine."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

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


FRESH_ITEM = """(old) => {
  const box = document.querySelector('.preflab-pair[data-item]');
  const vote = document.querySelector('.st-key-vote_A button');
  if (!box || !vote || box.closest("[data-stale='true']") || vote.closest("[data-stale='true']")) return null;
  const id = box.getAttribute('data-item');
  return id && id !== old ? id : null;
}"""


def shown_item(page, old: str | None = None, timeout: float = 120_000) -> str:  # noqa: ANN001
    """Wait until the page shows a fresh round of an item other than ``old``; its id."""
    return page.wait_for_function(FRESH_ITEM, arg=old, timeout=timeout).json_value()


def wait_revealed(page, said: str, timeout: float = 120_000) -> None:  # noqa: ANN001
    """Wait for the after-vote panel of this vote (its message and a fresh Next button); ``first``: a copy of
    the message the run before drew may still be in the page (strict mode would fail at once on two)."""
    page.get_by_text(f"Vote saved: {said}").first.wait_for(timeout=timeout)
    page.wait_for_function("""() => { const b = document.querySelector('.st-key-next button');
        return b && !b.closest("[data-stale='true']"); }""", timeout=timeout)


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
