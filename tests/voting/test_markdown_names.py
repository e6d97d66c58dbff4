"""Names are plain text everywhere: a dataset, model, voter or file name holding a Markdown image is never an
image on any page (each element the page sends is rendered by a CommonMark renderer here, as the browser's
would, and must hold no ``<img>``), and the vote browser shows a vote with no "Why?" next to one with it."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from markdown_it import MarkdownIt

from tests.voting.conftest import MODELS, tiny_items
from tests.voting.test_vote_page import start
from voting.items import load_items
from voting.pages.common import code_span, plain
from voting.pages.leaderboard import app_words, identification_banner
from voting.store import Vote, import_items, open_store, record_vote

EVIL = "![x](http://evil.invalid/i.png)"
RENDER = MarkdownIt("commonmark")
TEXT_KINDS = ("markdown", "caption", "title", "header", "subheader", "success", "info", "warning", "error")
LABELS = ("text_input", "text_area", "selectbox", "button", "file_uploader")


def images(markdown: str) -> list[str]:
    """The ``<img>`` tags CommonMark makes of ``markdown``."""
    html = RENDER.render(markdown)
    return [part for part in html.split("<")[1:] if part.startswith("img")]


def sent_images(at) -> list[str]:  # noqa: ANN001
    """Every image the page's text elements and widget labels would show."""
    texts = [e.value for kind in TEXT_KINDS for e in at.get(kind)]
    texts += [e.proto.label for kind in LABELS for e in at.get(kind)]
    return [img for t in texts for img in images(str(t))]


@pytest.mark.parametrize("text", [EVIL, f"a`{EVIL}`", f"x\r\r{EVIL}", f"x\n\n{EVIL}", f"``{EVIL}\r\n\r\n``"])
def test_a_name_as_a_code_span_or_plain_text_is_never_an_image(text):
    assert images(EVIL) and images(f"`x`\r\r{EVIL}")  # the renderer does make images of these
    assert images(code_span(text)) == [] and images(plain(text)) == []
    assert RENDER.render(plain("a_b *c* [d](e) <f> $g$")).strip() == "<p>a_b *c* [d](e) &lt;f&gt; $g$</p>"


def test_model_names_in_the_never_compared_banner_and_diagnostics_are_plain_text():
    table = pd.DataFrame({"model": [EVIL, "b"], "identified": [False, True]})
    banner = identification_banner(table, [[EVIL, "b"], ["c", f"`{EVIL}"]], pooled=False)
    assert "never compared" in banner and images(banner) == []
    note = app_words(f"model {EVIL} wins every battle; rank without style control, or style_features=length,bold")
    shown = RENDER.render(note)
    assert images(note) == [] and "<strong>Style control</strong>" in shown and "keep only length, bold in the" in shown


@pytest.fixture()
def evil_url(sqlite_url):
    """A dataset named with a Markdown image, with two votes: one with a "Why?", one without."""
    engine = open_store(sqlite_url)
    import_items(engine, load_items(tiny_items()), EVIL)
    x, y = sorted(MODELS)[:2]
    record_vote(engine, Vote("ann", EVIL, "q000", x, y, "A", shown_at=1000.0, reason="x is right"))
    record_vote(engine, Vote("bob", EVIL, "q001", x, y, "B", shown_at=1000.0))
    return sqlite_url


def test_the_data_page_shows_a_dataset_name_as_text_and_votes_with_and_without_a_reason(monkeypatch, evil_url):
    at = start(monkeypatch, evil_url)
    at.switch_page("voting/pages/data.py").run()
    assert not at.exception
    for voter, said in (("bob", "Why? (no reason given)"), ("ann", "Why? x is right")):
        at.selectbox(key="browse_voter").select(voter).run()
        assert not at.exception, at.exception  # before: "Why? " + NaN under pandas 3
        assert [t.value for t in at.get("text") if t.value.startswith("Why?")] == [said]
    assert any("Delete" in h.value for h in at.subheader)
    at.text_area(key="invite_names").input(f"guest-{EVIL}").run()
    at.button(key="invite_go").click().run()
    assert any("No links were made" in e.value for e in at.error)
    assert sent_images(at) == []


def test_the_import_preview_shows_a_model_name_with_backticks_as_text(monkeypatch, seeded_url):
    model = f"m`{EVIL}`"
    rows = [{"item_id": "q1", "prompt": "p", "model": m, "answer": a} for m, a in ((model, "a"), (model, "b"),
                                                                                  ("other", "c"))]
    at = start(monkeypatch, seeded_url)
    at.switch_page("voting/pages/data.py").run()
    at.file_uploader(key="import_file").set_value(("x.jsonl", "\n".join(map(json.dumps, rows)).encode(),
                                                  "application/jsonl")).run()
    assert any("answers it twice" in e.value for e in at.error)  # the error quotes the model's name
    assert sent_images(at) == []
    at.file_uploader(key="import_file").set_value(("y.jsonl", "\n".join(map(json.dumps, rows[1:])).encode(),
                                                  "application/jsonl")).run()
    assert any("Models:" in c.value for c in at.caption) and sent_images(at) == []
