"""Attacks on the vote page's integrity rules, by Debian's Chromium through Playwright, against a server with
the default minimum time on a pair (1 s), a trusted proxy's ``X-Forwarded-For`` (so browser contexts can come
from different client addresses) and small open-voting limits.

Each test waits on state only the fixed page has; a legitimate vote first waits out the minimum time.
"""

from __future__ import annotations

import csv
import io
import json
import re
from urllib.parse import urlparse

import pandas as pd
import pytest

from tests.voting.browser_app import (  # noqa: F401  (browser: the fixture)
    ENGINES,
    browser,
    cast,
    click_bar,
    invite_link,
    next_pair,
    shot,
    shown_item,
    start_voting,
    streamlit_server,
    wait_revealed,
)
from voting.items import load_items
from voting.store import Vote, import_items, list_datasets, load_votes, open_store, record_vote

pytestmark = pytest.mark.browser
MIN_S = 1.0  # the app's default minimum time on a pair
MODELS = ("alder-7b", "birch-13b", "cedar-70b")
TRACKERS = ("tracker.invalid", "cdn.invalid", "table.invalid", "prompt.invalid", "names.invalid")


def image_items(n: int = 8) -> pd.DataFrame:
    """Every prompt and answer carries images from other hosts: inline, reference-style, protocol-relative
    and inside a table; the page must fetch none of them."""
    rows = []
    for i in range(n):
        prompt = f"Describe picture {i}.\n\n![the picture][pic]\n\n[pic]: http://prompt.invalid/p{i}.png"
        for m, model in enumerate(MODELS):
            answer = (f"Answer {i}/{m} ![a cat](http://tracker.invalid/cat{i}.png) and ![](//cdn.invalid/x.gif)\n\n"
                      f"| what | picture |\n|---|---|\n| dog | ![dog](https://table.invalid/dog.png) |\n")
            rows.append({"item_id": f"i{i:02d}", "prompt": prompt, "model": model, "answer": answer,
                         "category": "pics"})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("integrity")
    url = f"sqlite:///{folder / 'votes.db'}"
    engine = open_store(url)
    import_items(engine, load_items(image_items()), "aa-images")
    data_dir = folder / "data"
    data_dir.mkdir()
    env = {"PREFLAB_DB": url, "PREFLAB_STRATEGY": "uniform", "PREFLAB_MIN_SECONDS": str(MIN_S),
           "PREFLAB_TRUST_PROXY": "1", "PREFLAB_OPEN_RATE": "2", "PREFLAB_OPEN_RATE_PER_ADDRESS": "3",
           "PREFLAB_DATA_DIR": str(data_dir)}
    flags = ["--server.headless", "true", "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    with streamlit_server(folder, env, flags) as base:
        ENGINES[base] = engine
        yield base, engine


def page_from(browser, address: str = "192.0.2.10"):  # noqa: ANN001, ANN201, F811
    """A page in a fresh context whose requests say they come from ``address`` (via the trusted proxy)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000},
                              extra_http_headers={"X-Forwarded-For": address})
    ctx.set_default_timeout(120_000)
    return ctx.new_page()


def vote_after_reading(page, choice: str = "A", said: str | None = None) -> None:  # noqa: ANN001
    """Wait out the minimum time on the pair, then click ``choice``; with ``said``, until the vote is revealed."""
    page.wait_for_timeout(1000 * MIN_S + 150)
    if said:
        cast(page, choice, said)
    else:
        click_bar(page, f"vote_{choice}")


def test_a_dataset_name_with_a_blank_letter_is_refused(server, browser, tmp_path):  # noqa: F811
    base, engine = server
    good = tmp_path / "fine.jsonl"
    good.write_text("".join(json.dumps({"item_id": "x1", "prompt": "p", "model": m, "answer": "a"}) + "\n"
                            for m in ("m1", "m2")))
    page = page_from(browser)
    page.goto(f"{base}/data")
    page.locator("input[type=file]").set_input_files(str(good))
    page.get_by_text("Preview of fine.jsonl").wait_for()  # the upload's rerun is over: a typed name now sticks
    name = page.get_by_label("Dataset name (default: the file's name)")
    name.fill("demo\u3164")
    name.press("Enter")  # the preview checks the typed name before anything is written
    message = page.get_by_text("Cannot import this file").filter(has_text="U+3164")
    message.wait_for()
    assert page.get_by_role("button", name="Import").is_disabled()
    assert list_datasets(engine) == ["aa-images"]


def test_a_click_racing_skip_never_votes_on_the_new_pair(server, browser):  # noqa: F811
    """Skip, then "A is better" 5-60 ms later where it was on screen: never a vote on the pair drawn after."""
    base, engine = server
    page = page_from(browser)
    page.goto(invite_link(base, "racer"))
    shown = shown_item(page)
    for delay in (5, 30, 60):
        page.wait_for_timeout(1000 * MIN_S + 150)
        a, skip = (page.locator(f".st-key-{k} button").bounding_box() for k in ("vote_A", "skip"))
        page.mouse.click(skip["x"] + skip["width"] / 2, skip["y"] + skip["height"] / 2)
        page.wait_for_timeout(delay)
        page.mouse.click(a["x"] + a["width"] / 2, a["y"] + a["height"] / 2)
        new = shown_item(page, old=shown)
        vote_after_reading(page, "B", "B is better.")  # only this vote may land (the page still offers the vote bar)
        votes = load_votes(engine).query("voter == 'racer'")
        assert votes["item_id"].tolist()[-1] == new and votes["winner_model"].iloc[-1] == votes["model_right"].iloc[-1]
        shown = next_pair(page, new)
    votes = load_votes(engine).query("voter == 'racer'")
    assert len(votes) == 3 and (votes["winner_model"] == votes["model_right"]).all()
    assert (votes["seconds_on_pair"] >= MIN_S).all()


REPLAY = """() => {
  const send = WebSocket.prototype.send;
  window.__sent = [];
  WebSocket.prototype.send = function (data) {
    window.__ws = this;
    window.__sent.push(data instanceof ArrayBuffer ? data.slice(0) : data.slice ? data.slice() : data);
    return send.call(this, data);
  };
}"""


def test_a_replayed_vote_message_casts_nothing(server, browser):  # noqa: F811
    """The websocket message of a vote, sent again after Next (well past the minimum time), votes on nothing."""
    base, engine = server
    page = page_from(browser)
    page.add_init_script(f"({REPLAY})()")
    page.goto(invite_link(base, "replayer"))
    first = shown_item(page)
    page.wait_for_timeout(1000 * MIN_S + 150)
    before = page.evaluate("window.__sent.length")
    cast(page, "A", "A is better.")
    captured = page.evaluate("window.__sent.length") - before
    assert captured >= 1
    second = next_pair(page, first)
    page.wait_for_timeout(1000 * MIN_S + 150)
    page.evaluate(f"() => window.__sent.slice({before}, {before + captured}).forEach((m) => window.__ws.send(m))")
    vote_after_reading(page, "B", "B is better.")  # on the old page the replay had voted A: no B button left to click
    votes = load_votes(engine).query("voter == 'replayer'")
    assert votes["item_id"].tolist() == [first, second]
    assert votes["winner_model"].tolist() == [votes["model_left"].iloc[0], votes["model_right"].iloc[1]]


def _guest(browser, base: str, address: str):  # noqa: ANN001, ANN202, F811
    page = page_from(browser, address)
    page.goto(base)
    return page, start_voting(page)


def _refused_for_rate(page) -> None:  # noqa: ANN001
    vote_after_reading(page)
    page.get_by_text("That is many votes in a minute").wait_for()


def test_open_voting_cannot_be_stuffed(server, browser):  # noqa: F811
    """Limits of 2 votes a minute per guest and 3 per client address, in the store: a reload, a new guest id
    or a made-up ``?guest=`` token give no more; another address votes; the admin sees the guests' votes."""
    base, engine = server
    made_up = page_from(browser)
    made_up.goto(f"{base}/?guest=madeupmadeupmadeup1234")
    made_up.get_by_role("button", name="Start voting").wait_for()  # the sign-in form: the token is not ours
    assert not made_up.get_by_text(re.compile("^Voting as")).count()
    page, guest = _guest(browser, base, "198.51.100.1")
    for _ in range(2):
        shown = shown_item(page)
        vote_after_reading(page, "A", "A is better.")
        next_pair(page, shown)
    _refused_for_rate(page)
    page.reload()
    page.get_by_text(f"Voting as {guest}", exact=True).wait_for()  # the same id after a reload ...
    shown_item(page)
    _refused_for_rate(page)  # ... and no fresh allowance
    second, other = _guest(browser, base, "198.51.100.1")  # a new guest id from the same address
    assert other != guest
    voted = shown_item(second)
    vote_after_reading(second, "A", "A is better.")
    next_pair(second, voted)
    _refused_for_rate(second)  # the address has cast its 3
    third, _ = _guest(browser, base, "203.0.113.5")  # another address is not affected
    shown_item(third)
    vote_after_reading(third, "A", "A is better.")
    guests = load_votes(engine).query("voter.str.startswith('guest-')")
    assert len(guests) == 4 and guests["voter"].nunique() == 3
    third.goto(f"{base}/data")
    third.get_by_text(re.compile(r"From open-voting guests .*: 4 of \d+ votes, 3 guest ids")).wait_for()


def test_nothing_is_fetched_from_another_host(server, browser):  # noqa: F811
    """Images in prompts and answers (inline, reference-style, //host, in a table) and a voter named like a
    Markdown image show as text and links; no request leaves for any host but the app's, before or after
    the vote."""
    base, engine = server
    page = page_from(browser)
    app_host = urlparse(base).netloc
    outside: list[str] = []

    def note(request) -> None:  # noqa: ANN001
        parsed = urlparse(request.url)
        if parsed.scheme in ("http", "https", "ws", "wss") and parsed.netloc != app_host:
            outside.append(request.url)

    page.on("request", note)
    page.on("websocket", lambda ws: note(type("R", (), {"url": ws.url})))
    voter = "![x](http://names.invalid/beacon)"
    page.goto(invite_link(base, voter))
    page.get_by_text(f"Voting as {voter}", exact=True).wait_for()  # the name as typed, not an image
    shown_item(page)
    labels = page.locator(".preflab-pair a.pf-image")
    assert "[image: a cat]" in labels.all_inner_texts() and "[image: dog]" in labels.all_inner_texts()
    assert "[image: the picture]" in labels.all_inner_texts()
    assert page.locator(".preflab-pair img").count() == 0
    vote_after_reading(page, "A", "A is better.")
    page.get_by_text(MODELS[0]).or_(page.get_by_text(MODELS[1])).or_(page.get_by_text(MODELS[2])).first.wait_for()
    page.evaluate("() => document.fonts.ready")
    page.wait_for_load_state("networkidle")
    shot(page, "vote-images-as-links")
    assert outside == [], outside


def test_every_download_is_neutralised_and_tables_have_no_raw_download(server, browser, tmp_path):  # noqa: F811
    """The Data page's CSV exports: formulas (also full-width) prefixed, cells with CR or LF quoted; the
    JSON export parses; Streamlit's own "Download as CSV" on its tables is off."""
    base, engine = server
    evil = {"voter": "+cmd|' /C calc'!A0", "reason": "ok\r=cmd|' /C calc'!A0", "dataset": "aa-images"}
    record_vote(engine, Vote(evil["voter"], "aa-images", "i07", MODELS[0], MODELS[1], "A", reason=evil["reason"]))
    record_vote(engine, Vote("\uff1dHYPERLINK(\"http://x\")", "aa-images", "i06", MODELS[0], MODELS[2], "B",
                             reason="@SUM(1,1)"))
    page = page_from(browser)
    page.goto(f"{base}/data")
    got = {}
    for kind in ("battles", "votes", "labels"):
        button = page.locator(f".st-key-export_{kind} button")
        with page.expect_download() as download:
            button.click()
        got[kind] = open(download.value.path(), "rb").read()  # noqa: SIM115
    assert json.loads(got["battles"])  # JSON, not a spreadsheet
    for kind in ("votes", "labels"):
        text = got[kind].decode()
        rows = list(csv.reader(io.StringIO(text, newline="")))
        assert len({len(r) for r in rows}) == 1, f"{kind}: a cell split a row"
        cells = [c for r in rows[1:] for c in r]
        starts = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")
        assert not [c for c in cells if c.startswith(starts)], (kind, [c for c in cells if c.startswith(starts)])
        if kind == "votes":
            assert "'+cmd|' /C calc'!A0" in cells and "'\uff1dHYPERLINK(\"http://x\")" in cells
            assert '"ok\r=cmd|\' /C calc\'!A0"' in text  # the CR inside a quoted cell
            assert len(rows) == 1 + len(load_votes(engine, "aa-images"))
    table = page.locator("[data-testid='stDataFrame']").first
    table.hover()
    page.wait_for_timeout(300)
    assert page.get_by_role("button", name=re.compile("Download as CSV", re.I)).count() == 0
    assert page.locator("[data-testid='stElementToolbar'] button[aria-label*='ownload']").count() == 0


def test_an_upload_error_names_the_upload_not_a_server_path(server, browser, tmp_path):  # noqa: F811
    base, _ = server
    bad = tmp_path / "judge-verdicts.jsonl"
    bad.write_text('{"item_id": 1}\nnot json\n')
    page = page_from(browser)
    page.goto(f"{base}/calibration")
    page.locator("input[type=file]").set_input_files(str(bad))
    message = page.get_by_text("Could not read the verdicts")
    message.wait_for()
    text = message.inner_text()
    assert "judge-verdicts.jsonl" in text and "/tmp" not in text and "preflab-upload" not in text, text
