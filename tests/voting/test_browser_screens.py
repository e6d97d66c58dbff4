"""The README's screenshots, taken in Chromium over the demo data: the vote page before and after the reveal,
the leaderboard and the judge calibration page (each also checked for what it must show).

They go to ``test-artifacts/readme/``; with ``PREFLAB_README_SHOTS=1`` also to ``docs/img/`` (the committed
copies the README shows, palette PNGs of at most 150 KB):

    PREFLAB_README_SHOTS=1 pytest tests/voting/test_browser_screens.py

``tests/test_readme_screenshots.py`` fails when the README shows an image this module does not produce.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from tests.harness.chromium import ARGS, CHROMIUM
from tests.voting.browser_app import click_until_acted_on, shown_item, streamlit_server, wait_revealed
from voting.store import open_store
from voting.votes import seed_demo

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]
#: The screenshots the README shows (docs/img/<name>.png), each taken by a test below.
README_SHOTS = ("vote-before-reveal", "vote-after-reveal", "leaderboard", "calibration")
MAX_BYTES = 150_000
PASSCODE = "screens-admin"
VIEWPORT = {"width": 1280, "height": 800}
STARTED = time.time()


def save_shot(page, name: str, full_page: bool = False) -> Path:  # noqa: ANN001
    """A palette PNG (256 colours: a UI needs no more) in test-artifacts/readme/, and in docs/img/ when
    ``PREFLAB_README_SHOTS`` is set."""
    from PIL import Image

    out = ROOT / "test-artifacts" / "readme"
    out.mkdir(parents=True, exist_ok=True)
    raw = out / f"{name}.raw.png"
    page.screenshot(path=str(raw), full_page=full_page)
    path = out / f"{name}.png"
    with Image.open(raw) as im:
        im.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    raw.unlink()
    assert path.stat().st_size <= MAX_BYTES, (name, path.stat().st_size)
    if os.environ.get("PREFLAB_README_SHOTS"):
        (ROOT / "docs" / "img").mkdir(exist_ok=True)
        (ROOT / "docs" / "img" / path.name).write_bytes(path.read_bytes())
    return path


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory):
    """``streamlit run app.py`` with ``preflab app``'s flags over the demo data (1,500 votes), an admin
    passcode, and the data folder holding the demo judge's verdicts."""
    from preflab_cli.voting_cmds import STREAMLIT_FLAGS

    db = tmp_path_factory.mktemp("screens") / "demo.db"
    url = f"sqlite:///{db}"
    engine = open_store(url)
    demo = ROOT / "data" / "demo"
    seed_demo(engine, demo / "items.jsonl", demo / "battles.jsonl")
    env = {"PREFLAB_DB": url, "PREFLAB_ADMIN_PASSCODE": PASSCODE, "PREFLAB_DATA_DIR": "data",
           "PREFLAB_MIN_SECONDS": "0"}  # the shots click at once
    with streamlit_server(db.parent, env, list(STREAMLIT_FLAGS)) as base:
        yield base, engine


@pytest.fixture(scope="module")
def page(demo_server):
    """One browser page for the whole module (the admin unlock lives in its session)."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Debian's Chromium not found at {CHROMIUM} (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        ctx = browser.new_context(viewport=VIEWPORT)
        ctx.set_default_timeout(180_000)
        yield ctx.new_page()
        browser.close()


def test_vote_page_before_and_after_the_reveal(demo_server, page):
    from voting.access import invite_url, issue_invite

    base, engine = demo_server
    page.goto(invite_url(base, issue_invite(engine, "ada")))
    page.get_by_text("Voting as ada").wait_for()
    first = shown_item(page)
    models = ("atlas-terse", "beacon-verbose", "comet-sloppy", "delta-padded", "ember-balanced")
    assert not [m for m in models if m in page.content()]
    save_shot(page, "vote-before-reveal")
    page.get_by_role("button", name=re.compile("A is better")).click()
    wait_revealed(page, "A is better.")
    assert [m for m in models if m in page.inner_text("body")], "the reveal names the models"
    save_shot(page, "vote-after-reveal")
    assert first


def settled(page) -> None:  # noqa: ANN001
    """Wait until the script run is over (Streamlit's running indicator is gone)."""
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')")
    page.wait_for_timeout(300)  # the last deltas painted


def _admin_page(page, title: str) -> None:  # noqa: ANN001
    """Open an admin page from the sidebar (same session), unlocking it once."""
    page.locator("[data-testid='stSidebarNav']").get_by_text(title, exact=True).click()
    page.get_by_role("heading", name=title).wait_for()
    gate = page.get_by_label("Admin passcode")
    if gate.count():
        gate.fill(PASSCODE)
        click_until_acted_on(page, page.get_by_role("button", name="Unlock").click,
                             lambda t: gate.wait_for(state="detached", timeout=t), lambda _: gate.count() > 0, "Unlock")


def test_leaderboard(page):
    _admin_page(page, "Leaderboard")
    page.get_by_text("Battle counts").wait_for()
    page.locator("[data-testid='stImage'] img").first.wait_for()  # the forest plot
    settled(page)
    text = page.inner_text("body")
    assert re.search(r"150[01] votes from all voters", text), text[:2000]  # the demo's 1,500 (+ ada's)
    save_shot(page, "leaderboard")


def test_calibration(page):
    _admin_page(page, "Judge calibration")
    page.get_by_text("... or pick one found on the server").wait_for()
    page.locator("[data-testid='stSelectbox']").nth(1).click()
    page.get_by_role("option", name="data/demo/verdicts-smollm2.jsonl").click()
    page.get_by_text("the same rows as preflab judge calibrate").wait_for()  # the numbers' caption: page only
    page.get_by_text("Do not use for:").wait_for()
    page.get_by_text("Download the judge card").wait_for()
    settled(page)
    page.set_viewport_size({"width": 1280, "height": 1500})  # the card below the verdict
    settled(page)
    save_shot(page, "calibration")
    page.set_viewport_size(VIEWPORT)


def test_every_readme_shot_was_taken():
    out = ROOT / "test-artifacts" / "readme"
    missing = [n for n in README_SHOTS
               if not (out / f"{n}.png").exists() or (out / f"{n}.png").stat().st_mtime < STARTED]
    assert not missing, f"not produced by this run: {missing}"
