"""Reading rules of the vote page's Markdown (voting.pages.reading) and the pair's length labels and switches."""

from __future__ import annotations

from voting.pages.pair_html import markdown_html, pair_html
from voting.pages.reading import length_label, word_count


def test_word_count_counts_words_not_markdown_syntax():
    assert word_count("| Model | 50.0 |\n|---|---|\n| a | **bold** |") == 4
    assert word_count("> one two\n\n- three") == 3
    assert word_count("") == 0 and length_label("x") == "1 word" and length_label("a " * 1234) == "1,234 words"


def test_tables_sit_in_a_wrapper_that_scrolls_and_cells_never_break_mid_token():
    out = markdown_html("| Model | 50.0 |\n|---|---|\n| a | b |")
    assert out.startswith('<div class="pf-table"><table dir="auto">') and out.rstrip().endswith("</table>\n</div>")
    css = pair_html("q", "p", "a", "b", progress=[], prompt_height=130, answer_height=300)
    assert ".pf-table {overflow-x: auto" in css and ".pf-box table {overflow-wrap: normal; word-break: normal}" in css


def test_indentation_outside_code_is_kept_and_code_is_untouched():
    out = markdown_html("first\n    indented\n\tTabbed\nlast\n\n```\n    code\n```")
    assert "first<br />\n" + "\u00a0" * 4 + "indented<br />\n" + "\u00a0" * 4 + "Tabbed<br />\nlast" in out
    assert "<pre><code>    code\n</code></pre>" in out


def test_every_text_block_takes_its_direction_from_its_text_and_code_does_not():
    out = markdown_html("# عنوان\n\nשלום\n\n> quote\n\n- item\n\n1. one\n\n```\nx\n```")
    for tag in ("<h1 dir=\"auto\">", "<p dir=\"auto\">", "<blockquote dir=\"auto\">", "<ul dir=\"auto\">",
                "<li dir=\"auto\">", "<ol dir=\"auto\">"):
        assert tag in out, tag
    assert "<pre><code>" in out


def test_each_answer_shows_its_length_and_the_switches_need_no_script():
    out = pair_html("q", "Why?", "one two three", "word", progress=[(0.5, "You: 1 of 2 items")],
                    prompt_height=130, answer_height=300)
    assert '<span class="pf-len" data-side="A">3 words</span>' in out and ">1 word</span>" in out
    assert out.count('<details class="pf-expand">') == 2 and out.count('<details class="pf-both">') == 1
    assert "<script" not in out and "onclick" not in out
    assert '<div class="pf-bar" data-bar="0"><p>You: 1 of 2 items</p>' in out
    assert "@media (max-width: 640px)" in out and "flex-direction: column" in out
