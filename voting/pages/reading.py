"""What makes a long, real answer readable on the vote page: Markdown rules for :mod:`voting.pages.pair_html`
(tables that scroll sideways, indentation kept, each block's direction from its own text) and the length shown
over each answer. Pure functions of the text; no Streamlit here.
"""

from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.rules_inline import newline as _newline_rule

from preflab.text import word_count

#: Blocks whose writing direction the browser takes from their own first strong character (``dir="auto"``):
#: an Arabic or Hebrew paragraph reads right-to-left next to an English one; code stays left-to-right.
DIRECTED = frozenset({"paragraph_open", "heading_open", "blockquote_open", "bullet_list_open", "ordered_list_open",
                      "list_item_open", "table_open", "th_open", "td_open"})
TAB = 4  # columns a tab indents by, as in CommonMark
_NBSP = "\u00a0"


def length_label(text: str) -> str:
    """``"1,234 words"`` (``"1 word"``)."""
    n = word_count(text)
    return f"{n:,} word{'' if n == 1 else 's'}"


def _keep_indent(state, silent: bool) -> bool:  # noqa: ANN001 - markdown-it's inline rule signature
    """A line break inside a paragraph keeps the next line's indentation (CommonMark drops it: a poem's
    indented lines, an outline typed with spaces, lost their shape). The spaces become no-break spaces."""
    pos = state.pos
    if state.src[pos] != "\n":
        return False
    end = pos + 1
    while end < state.posMax and state.src[end] in " \t":
        end += 1
    indent = sum(TAB if c == "\t" else 1 for c in state.src[pos + 1:end])
    if not _newline_rule(state, silent):
        return False
    if indent and not silent:
        state.pending += _NBSP * indent
    return True


def _directions(state) -> None:  # noqa: ANN001 - markdown-it's core rule signature
    for token in state.tokens:
        if token.type in DIRECTED:
            token.attrSet("dir", "auto")


def _table_open(self, tokens, idx, options, env) -> str:  # noqa: ANN001 - markdown-it's render rule signature
    return '<div class="pf-table">' + self.renderToken(tokens, idx, options, env)


def _table_close(self, tokens, idx, options, env) -> str:  # noqa: ANN001
    return self.renderToken(tokens, idx, options, env) + "</div>"


def add_reading_rules(md: MarkdownIt) -> MarkdownIt:
    """Tables in a ``pf-table`` wrapper (it scrolls sideways: cells never break a word or a number), line
    indentation kept outside code, ``dir="auto"`` on every text block."""
    md.inline.ruler.at("newline", _keep_indent)
    md.core.ruler.push("preflab_directions", _directions)
    md.add_render_rule("table_open", _table_open)
    md.add_render_rule("table_close", _table_close)
    return md
