"""The prompt and answers as server-rendered HTML (voting.pages.pair_html): Markdown, never raw HTML."""

from __future__ import annotations

import html

from tests.voting.conftest import EVIL
from voting.pages.pair_html import markdown_html, pair_html, progress_html

LIMERICK = "There once was a model from Rome\nWho answered each prompt with a poem\n\nThe end."


def test_line_breaks_are_kept_outside_code():
    out = markdown_html(LIMERICK + "\n\n```\ncode line 1\ncode line 2\n```")
    assert out.startswith('<p dir="auto">There once was a model from Rome<br />\nWho answered each prompt with a '
                          'poem</p>\n<p dir="auto">The end.</p>')
    assert "<pre><code>code line 1\ncode line 2\n</code></pre>" in out  # no <br> inside the code


def test_raw_html_is_text():
    out = markdown_html(EVIL)
    assert html.escape(EVIL) in out
    assert "<script" not in out and "<img" not in out


def test_code_is_escaped_and_plain_and_mermaid_is_not_drawn():
    out = markdown_html("```python\nprint('<b>x</b>')\n```\n\n```mermaid\ngraph TD; A-->B\n```")
    assert "<pre><code class=\"language-python\">print('&lt;b&gt;x&lt;/b&gt;')\n</code></pre>" in out
    assert '<pre><code class="language-mermaid">graph TD; A--&gt;B\n</code></pre>' in out
    assert "<span" not in out  # no syntax colouring


def test_links_keep_only_safe_schemes():
    out = markdown_html("[a](javascript:alert(1)) [b](vbscript:x) [c](data:text/html,x) ![d](javascript:y) "
                        "[ok](https://example.org/x)")
    assert "javascript:" not in out.replace("[a](javascript:alert(1))", "").replace("![d](javascript:y)", "")
    assert out.count("<a ") == 1 and "<img" not in out
    assert '<a href="https://example.org/x" rel="noopener noreferrer nofollow">ok</a>' in out


def test_tables_and_strikethrough():
    out = markdown_html("| a | b |\n|---|---|\n| 1 | 2 |\n\n~~gone~~")
    assert '<table dir="auto">' in out and '<td dir="auto">1</td>' in out and "<s>gone</s>" in out


def test_pair_escapes_the_item_id_and_labels_and_clamps_the_bars():
    out = pair_html('q"1<x>', "Why?", "**A** says", "B says", progress=[(1.5, "You: <b>3</b>"), (-1, "D")],
                    prompt_height=130, answer_height=300)
    assert 'data-item="q&quot;1&lt;x&gt;"' in out and "Item q&quot;1&lt;x&gt;" in out
    assert "You: &lt;b&gt;3&lt;/b&gt;" in out and "width: 100.0%" in out and "width: 0.0%" in out
    assert '<div class="pf-box pf-answer" data-side="A"><p dir="auto"><strong>A</strong> says</p>' in out
    assert ".pf-answer {height: min(300px," in out and "pf-long" not in out.split("</style>")[1]
    long = pair_html("q", "line\n" * 6, "a", "b", progress=[], prompt_height=130, answer_height=300)
    assert 'class="pf-box pf-prompt pf-long"' in long and ".pf-long {height: 130px}" in long
    assert "data-item" not in progress_html([(0.5, "You")]) and "width: 50.0%" in progress_html([(0.5, "You")])
