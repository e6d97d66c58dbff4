"""Reading real answers on the vote page, in Debian's Chromium at 1280x800 and 390x844, over an imported CSV
holding a wide markdown table, long code, RTL text, an indented poem and a 20,000-character answer.

Checks: each answer's length in words and how far it was scrolled, Expand and "read both full height", tables that
scroll sideways (no cell broken mid-token), A stacked above B on a phone with the vote bar reachable,
``dir="auto"`` per block, indentation kept outside code, back to the top of the pair after Next, Skip and Undo, the
vote bar and the Undo/Next row on a 1280x800 screen, the sidebar closed on a phone after choosing a dataset, the
``?`` help overlay, the voter's progress updated at the vote, and no request leaving the server. Every wait is on
state only the new page has (see :func:`tests.voting.browser_app.shown_item`)."""

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
    new_page,
    round_shown,
    shot,
    shown_item,
    skip,
    streamlit_server,
    wait_revealed,
)
from tests.voting.conftest import tiny_items
from voting.items import load_items
from voting.pages.reading import word_count
from voting.store import import_items, open_store

pytestmark = pytest.mark.browser
browser = browser_app.browser  # the module's Chromium fixture
DESKTOP, PHONE = {"width": 1280, "height": 800}, {"width": 390, "height": 844}
CELLS = ("Model", "Accuracy", "50.0", "1234567.891", "Latency_ms", "Throughput", "Parameters", "Checkpoint",
         "Tokenizer", "Vocabulary", "Context", "Precision")
TABLE = ("| " + " | ".join(CELLS) + " |\n|" + "---|" * len(CELLS) + "\n"
         + "| " + " | ".join(c[::-1] for c in CELLS) + " |\n")
CODE = "```python\n" + "\n".join(f"value_{k} = compute_something_long(argument_{k}, other={k} * 1000)  # {k}"
                                  for k in range(40)) + "\n```"
RTL = "مرحبا بالعالم، هذه إجابة باللغة العربية.\n\nשלום עולם, זו תשובה בעברית.\n\nAnd one line in English."
POEM = "The first line\n    the second, indented\nthe third"
LONG = " ".join(f"word{k % 97}" for k in range(3000))[:20_000]
ANSWERS = {"table": (TABLE, "A short answer without a table."), "code": (CODE, "No code here."),
           "rtl": (RTL, "An English answer."), "poem": (POEM, "Prose instead of a poem."),
           "long": (LONG, "Short.")}


def reading_csv(path) -> pd.DataFrame:  # noqa: ANN001
    rows = [{"item_id": item, "prompt": f"Reading test: {item}.", "model": model, "answer": answer}
            for item, pair in ANSWERS.items() for model, answer in zip(("orca-one", "puffin-two"), pair, strict=True)]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reading")
    url = f"sqlite:///{folder / 'votes.db'}"
    engine = open_store(url)
    import_items(engine, load_items(reading_csv(folder / "reading.csv")), "a-reading")
    import_items(engine, load_items(tiny_items(3)), "b-other")
    flags = ["--server.headless", "true", "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    env = {"PREFLAB_DB": url, "PREFLAB_STRATEGY": "uniform", "PREFLAB_MIN_SECONDS": "0"}  # the tests click at once
    with streamlit_server(folder, env, flags) as base:
        ENGINES[base] = engine
        yield base, engine


def open_as(browser, base: str, voter: str, viewport: dict, outside: list):  # noqa: ANN001, ANN201
    page = new_page(browser, viewport)
    local = (base, "data:", "blob:", "about:")
    page.on("request", lambda r: None if r.url.startswith(local) else outside.append(r.url))
    page.goto(invite_link(base, voter))
    page.get_by_text(f"Voting as {voter}").wait_for()
    return page


def open_reader(browser, base: str, voter: str, viewport: dict):  # noqa: ANN001, ANN201
    """A voter's page with its first pair shown and the reading script running: (page, the item shown, the
    list of requests to other hosts, which stays empty)."""
    outside: list = []
    page = open_as(browser, base, voter, viewport, outside)
    return page, read_round(page, shown_item(page)), outside


def read_round(page, item: str) -> str:  # noqa: ANN001
    """``item``, once the reading script has taken the round shown (:func:`tests.voting.browser_app.shown_item`):
    it keeps the new pair's top in view until the page settles."""
    page.wait_for_function("(r) => !!window.__preflabReading && window.__preflabReading.round === r",
                           arg=round_shown(page), timeout=120_000)
    return item


def go_to(page, item: str, shown: str) -> str:  # noqa: ANN001
    """Skip until ``item`` is on screen (each voter sees each item once)."""
    for _ in range(len(ANSWERS)):
        if shown == item:
            return shown
        shown = read_round(page, skip(page, shown))
    assert shown == item, shown
    return shown


def box(page, side: str) -> dict:  # noqa: ANN001
    return page.locator(ANSWER % side).evaluate(
        "e => ({h: e.clientHeight, sh: e.scrollHeight, w: e.clientWidth, top: e.getBoundingClientRect().top,"
        " bottom: e.getBoundingClientRect().bottom, left: e.getBoundingClientRect().left})")


def single_line_cells(page) -> list[str]:  # noqa: ANN001
    """The table cells whose text the browser laid out on more than one line."""
    return page.evaluate("""() => [...document.querySelectorAll(
            '.preflab-pair .pf-answer td, .preflab-pair .pf-answer th')]
        .filter(c => { const r = document.createRange(); r.selectNodeContents(c);
                       return new Set([...r.getClientRects()].map(x => Math.round(x.top))).size > 1; })
        .map(c => c.textContent)""")


def pair_top_in_view(page, item: str | None = None) -> None:  # noqa: ANN001
    """Wait until the pair of ``item`` (any, when None) is drawn by the latest run, that run has finished (one
    vote bar: the run before's has gone, and no element is marked data-stale; Streamlit marks them only after
    a while, so that mark alone is not the state), and its top is in the upper half of the view."""
    page.wait_for_function("""(item) => { const p = document.querySelector('.preflab-pair[data-item]');
        const bars = document.querySelectorAll('.st-key-vote_B button');
        if (bars.length !== 1 || document.querySelector("[data-stale='true']")) return false;
        if (!p || p.closest("[data-stale='true']")) return false;
        if (item !== null && p.getAttribute('data-item') !== item) return false;
        const t = p.getBoundingClientRect().top; return t >= 0 && t < innerHeight / 2; }""", arg=item)


def scroll_to_bottom(page) -> None:  # noqa: ANN001
    page.locator(".st-key-reason input, .st-key-next button").last.scroll_into_view_if_needed()
    page.wait_for_function("() => document.querySelector('.preflab-pair').getBoundingClientRect().top < 0")


def check_table(page) -> None:  # noqa: ANN001
    wraps = page.locator(".preflab-pair .pf-table").evaluate_all("ws => ws.map(w => w.scrollWidth > w.clientWidth)")
    assert wraps == [True], "the wide table does not scroll sideways in its own wrapper"
    assert single_line_cells(page) == [], "a table cell broke mid-token"


def check_code(page) -> None:  # noqa: ANN001
    pre = page.locator(".preflab-pair pre").first.evaluate("e => [e.scrollWidth > e.clientWidth, "
                                                            "getComputedStyle(e).direction]")
    assert pre == [True, "ltr"]


def check_rtl(page) -> None:  # noqa: ANN001
    dirs = page.locator(".preflab-pair .pf-answer p").evaluate_all(
        "ps => ps.map(p => [p.textContent.slice(0, 5), getComputedStyle(p).direction])")
    assert sorted(d for _, d in dirs) == ["ltr", "ltr", "rtl", "rtl"], dirs  # Arabic, Hebrew; English twice


def check_poem(page) -> None:  # noqa: ANN001
    xs = page.evaluate("""() => { const p = [...document.querySelectorAll('.preflab-pair .pf-answer p')]
        .find(e => e.textContent.includes('the second')); const out = [];
        for (const n of p.childNodes) if (n.nodeType === 3) { const r = document.createRange();
          const s = n.textContent.search(/\\S/); r.setStart(n, s); r.setEnd(n, s + 1);
          out.push(r.getBoundingClientRect().left); } return out; }""")
    assert len(xs) == 3 and xs[1] > xs[0] + 8 and abs(xs[2] - xs[0]) < 1, xs  # the indented line stays indented


def check_long(page) -> None:  # noqa: ANN001
    assert max(box(page, "A")["sh"], box(page, "B")["sh"]) > 10 * box(page, "A")["h"]  # it scrolls in its box


CHECKS = {"table": check_table, "code": check_code, "rtl": check_rtl, "poem": check_poem, "long": check_long}


def test_every_kind_of_answer_reads_well_at_1280x800(server, browser):
    base, _ = server
    page, shown, outside = open_reader(browser, base, "reader-desktop", DESKTOP)
    page.keyboard.press("?")
    page.get_by_role("dialog", name="Keyboard shortcuts").get_by_text("Both are bad").wait_for()
    page.keyboard.press("Escape")
    page.get_by_role("dialog", name="Keyboard shortcuts").wait_for(state="detached")
    seen = []
    for k in range(len(ANSWERS)):  # every item once, in the order drawn, skipped after its checks
        labels = sorted(page.locator(".preflab-pair .pf-len").all_inner_texts())
        assert labels == sorted(f"{word_count(a):,} word{'' if word_count(a) == 1 else 's'}" for a in ANSWERS[shown])
        bar = bar_button(page, "vote_A").bounding_box()  # the vote bar on a 1280x800 screen
        assert bar["y"] + bar["height"] <= DESKTOP["height"], (shown, bar)
        CHECKS[shown](page)
        shot(page, f"reading-{shown}-1280x800")
        seen.append(shown)
        if k < len(ANSWERS) - 1:
            shown = read_round(page, skip(page, shown))
    assert sorted(seen) == sorted(ANSWERS)
    assert not outside, outside


def test_expand_read_both_and_the_vote_at_1280x800(server, browser):
    base, _ = server
    page, shown, outside = open_reader(browser, base, "reader-long", DESKTOP)
    go_to(page, "long", shown)
    side = next(s for s in "AB" if page.locator(ANSWER % s).inner_text().startswith("word0"))
    before = box(page, side)
    assert before["sh"] > 10 * before["h"], before  # 20,000 characters scroll in a box
    page.locator(ANSWER % side).evaluate("e => { e.scrollTop = (e.scrollHeight - e.clientHeight) / 2; }")
    page.locator(f".preflab-pair .pf-pos[data-side='{side}']").get_by_text("50% read").wait_for()
    col = page.locator(".preflab-pair .pf-col").nth("AB".index(side))
    col.get_by_text("Expand").click()
    page.wait_for_function(f"() => {{ const e = document.querySelector(\"{ANSWER % side}\");"
                           " return e.clientHeight >= e.scrollHeight - 1; }")
    assert box(page, "B" if side == "A" else "A")["h"] == before["h"], "Expand opened more than its answer"
    col.get_by_text("Collapse").click()
    page.get_by_text("Read both full height").click()
    page.wait_for_function(f"() => [...document.querySelectorAll(\"{ANSWER % 'A'}, {ANSWER % 'B'}\")]"
                           ".every(e => e.clientHeight >= e.scrollHeight - 1)")
    shot(page, "reading-long-both-full")
    page.get_by_text("Back to side-by-side boxes").click()
    page.wait_for_function(f"() => {{ const e = document.querySelector(\"{ANSWER % side}\");"
                           " return e.scrollHeight > 2 * e.clientHeight; }")
    # the voter's progress moves at the vote (not at Next); the Undo/Next row on screen
    mine = int(re.search(r"You: (\d+) of 5", page.locator(".pf-bar[data-bar='0']").inner_text()).group(1))
    cast(page, "A", "A is better.")
    page.get_by_text(f"You: {mine + 1} of 5 items").wait_for()
    for name in ("undo", "next"):
        row = page.locator(f".st-key-{name} button").bounding_box()
        assert row["y"] + row["height"] <= DESKTOP["height"], (name, row)
    shot(page, "reading-after-vote-1280x800")
    assert not outside, outside


def test_back_to_the_top_of_the_pair_after_skip_undo_and_next(server, browser):
    base, _ = server
    page, shown, outside = open_reader(browser, base, "reader-scroll", {"width": 1280, "height": 500})
    scroll_to_bottom(page)
    shown = read_round(page, skip(page, shown))
    pair_top_in_view(page, shown)
    cast(page, "B", "B is better.")
    scroll_to_bottom(page)
    page.locator(".st-key-undo button").click()  # the models were revealed: another item comes
    shown = read_round(page, shown_item(page, old=shown))
    pair_top_in_view(page, shown)
    cast(page, "A", "A is better.")
    scroll_to_bottom(page)
    page.locator(".st-key-next button").click()
    shown = read_round(page, shown_item(page, old=shown))
    pair_top_in_view(page, shown)
    assert not outside, outside


def test_phone_stacks_the_answers_and_closes_the_sidebar(server, browser):
    base, _ = server
    page, shown, outside = open_reader(browser, base, "reader-phone", PHONE)
    a, b = box(page, "A"), box(page, "B")
    assert b["top"] >= a["bottom"] and abs(a["left"] - b["left"]) < 2 and a["w"] > 300, (a, b)
    shown = go_to(page, "table", shown)
    assert single_line_cells(page) == [], "a table cell broke mid-token on a phone"
    assert page.locator(".preflab-pair .pf-table").evaluate("w => w.scrollWidth > w.clientWidth")
    shot(page, "reading-phone-table")
    # choose the other dataset in the sidebar: it closes and the new dataset's pair shows
    sidebar = page.locator("[data-testid='stSidebar']")
    collapsed = "() => document.querySelector(\"[data-testid='stSidebar']\").getAttribute('data-collapsed')"
    assert page.evaluate(collapsed) == "true", "the sidebar covers the page on a phone from the start"
    page.locator("[data-testid='stExpandSidebarButton']").click()
    page.wait_for_function(f"() => ({collapsed})() === 'false'")
    sidebar.locator("[data-testid='stSelectbox']").click()
    page.get_by_role("option", name="b-other").click()
    assert re.fullmatch(r"q\d+", shown_item(page, old=shown))  # the other dataset's pair, its own bar
    page.wait_for_function(f"() => ({collapsed})() === 'true' && document.querySelector(\"[data-testid='stSidebar']\")"
                           ".getBoundingClientRect().right <= 1")  # closed again, off screen: the pair is readable
    shot(page, "reading-phone-other-dataset")
    vote = bar_button(page, "vote_B")
    vote.scroll_into_view_if_needed()
    vote.click()
    wait_revealed(page, "B is better.")
    assert not outside, outside
