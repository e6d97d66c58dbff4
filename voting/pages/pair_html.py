"""The prompt and the two answers as one block of HTML, rendered on the server (markdown-it-py).

Why: Streamlit's ``st.markdown`` parses Markdown in every voter's browser (react-markdown, a syntax
highlighter for fenced code, KaTeX, one React subtree per element), which cost most of a tab's CPU for a
new pair. Here the server turns each text into HTML once (cached) and the page shows it in one ``st.html``
element: the browser only sets its HTML when a new pair comes.

Safety: model output is never HTML, and loads nothing: an image (inline, reference-style, ``//host``, in a table)
becomes a link labelled ``[image: its description]`` that the browser never fetches (an answer's image could track
voters before the vote, with the page as Referer, and breaks in an offline room). The parser runs with raw HTML off,
so ``<script>`` and ``<img onerror>`` become text; links only keep safe schemes (markdown-it's ``validateLink``
refuses ``javascript:``, ``vbscript:``, ``file:`` and non-image ``data:``) and open in a new tab (the page's script
in :mod:`voting.pages.keyboard`: the sanitiser drops ``target``); fenced code is escaped and shown plain (no syntax
colouring, no diagram for ``mermaid``, no maths). Streamlit sanitises ``st.html`` with DOMPurify as a second layer.
"""

from __future__ import annotations

import functools
import html

from markdown_it import MarkdownIt

from voting.pages.reading import add_reading_rules, length_label

PAIR_CLASS = "preflab-pair"  # tests and the benchmark find the pair by it
# Equal answer boxes that scroll, the vote bar still on a 1280x900 screen; colours that suit both themes.
# Last rule: Streamlit fades a rerunning fragment's old elements (opacity over 1 s after 0.5 s); on a busy
# server that is ~60 frames per click in every voter's tab (measured: 10 voters, 200 -> 184 ms of browser CPU
# per vote). The vote page keeps them as they are; the running indicator still shows.
CSS = """<style>
.preflab-pair h4 {font-size: 1.25rem; font-weight: 600; margin: 0 0 .5rem 0; padding: .5rem 0 0 0;
  line-height: 1.2}
.preflab-pair .pf-bars {display: flex; flex-wrap: wrap; column-gap: 2rem; margin: 0 0 .5rem 0}
.preflab-pair .pf-bar {font-size: .875rem; margin: 0 0 .5rem 0; flex: 1 1 14rem}
.preflab-pair .pf-bar p {font-size: .875rem; margin: 0 0 .25rem 0}
.preflab-pair .pf-track {height: .5rem; border-radius: .25rem; background: rgba(128, 128, 128, .08); overflow: hidden}
.preflab-pair .pf-fill {height: 100%%; background: rgb(28, 131, 225)}
.preflab-pair .pf-item {font-size: .875rem; opacity: .6; margin: 0 0 .5rem 0}
.preflab-pair .pf-box {border: 1px solid rgba(128, 128, 128, .3); border-radius: .5rem; padding: .75rem 1rem;
  overflow: auto; overflow-wrap: anywhere; box-sizing: border-box; scroll-margin-top: 4rem}
.preflab-pair .pf-prompt.pf-long {height: %(prompt)dpx}
.preflab-pair .pf-answer {height: min(%(answer)dpx, max(12rem, 100vh - 33rem))}
.preflab-pair .pf-cols {display: flex; gap: 1rem; margin-top: .5rem}
.preflab-pair .pf-col {flex: 1 1 0; min-width: 0}
.preflab-pair .pf-head {display: flex; align-items: baseline; gap: .75rem; flex-wrap: wrap}
.preflab-pair .pf-head h4 {padding-top: .25rem}
.preflab-pair .pf-len, .preflab-pair .pf-pos {font-size: .875rem; opacity: .7}
.preflab-pair summary {list-style: none; cursor: pointer; font-size: .875rem; color: rgb(28, 131, 225)}
.preflab-pair summary::-webkit-details-marker {display: none}
.preflab-pair details[open] > summary .pf-closed, .preflab-pair details:not([open]) > summary .pf-opened
  {display: none}
.preflab-pair .pf-both {margin-top: .5rem}
.preflab-pair .pf-col:has(> .pf-head details[open]) .pf-answer,
  .preflab-pair .pf-answers:has(> details.pf-both[open]) .pf-answer {height: auto}
.preflab-pair .pf-table {overflow-x: auto; margin: 0 0 .75rem 0}
.preflab-pair .pf-table table {margin: 0}
.preflab-pair .pf-box table {overflow-wrap: normal; word-break: normal}
@media (max-width: 640px) {
  .preflab-pair .pf-cols {flex-direction: column}
  .preflab-pair .pf-answer {height: min(%(answer)dpx, 45vh)}
}
.preflab-pair .pf-box > :first-child {margin-top: 0}
.preflab-pair .pf-box > :last-child {margin-bottom: 0}
.preflab-pair p, .preflab-pair ul, .preflab-pair ol, .preflab-pair pre, .preflab-pair table,
  .preflab-pair blockquote {margin: 0 0 .75rem 0}
.preflab-pair .pf-box h1, .preflab-pair .pf-box h2, .preflab-pair .pf-box h3, .preflab-pair .pf-box h4,
  .preflab-pair .pf-box h5, .preflab-pair .pf-box h6 {font-weight: 600; margin: .75rem 0 .5rem 0; padding: 0;
  line-height: 1.3}
.preflab-pair .pf-box h1 {font-size: 1.5rem} .preflab-pair .pf-box h2 {font-size: 1.35rem}
.preflab-pair .pf-box h3 {font-size: 1.2rem} .preflab-pair .pf-box h4 {font-size: 1.1rem}
.preflab-pair code {font-family: "Source Code Pro", monospace; font-size: .85em;
  background: rgba(128, 128, 128, .12); border-radius: .25rem; padding: .1em .25em}
.preflab-pair pre {background: rgba(128, 128, 128, .12); border-radius: .5rem; padding: .75rem 1rem;
  overflow-x: auto}
.preflab-pair pre code {background: none; padding: 0; white-space: pre}
.preflab-pair blockquote {border-left: 3px solid rgba(128, 128, 128, .4); padding-left: .75rem; margin-left: 0}
.preflab-pair table {border-collapse: collapse}
.preflab-pair th, .preflab-pair td {border: 1px solid rgba(128, 128, 128, .3); padding: .25rem .5rem}
.preflab-pair ul, .preflab-pair ol {padding-left: 1.5rem}
[class*='st-key-pf_scripts'], [data-testid='stLayoutWrapper']:has(> [class*='st-key-pf_scripts']) {display: none}
[data-stale='true'] {transition: none !important; opacity: 1 !important}
</style>"""


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "breaks": True}).enable(["table", "strikethrough"])

    def link_open(self, tokens, idx, options, env):  # noqa: ANN001, ANN202 - opened in a new tab (keyboard.py)
        tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
        return self.renderToken(tokens, idx, options, env)

    def image(self, tokens, idx, options, env):  # noqa: ANN001, ANN202 - a labelled link, never an <img>
        token = tokens[idx]
        alt = self.renderInlineAsText(token.children or [], options, env) or "no description"
        label = html.escape(f"[image: {alt}]")
        src = token.attrGet("src") or ""
        if not src:  # markdown-it drops a src its validateLink refuses (javascript:, ...)
            return f'<span class="pf-image">{label}</span>'
        return (f'<a class="pf-image" href="{html.escape(str(src), quote=True)}" rel="noopener noreferrer nofollow">'
                f"{label}</a>")

    md.add_render_rule("link_open", link_open)
    md.add_render_rule("image", image)
    return add_reading_rules(md)


_MD = _parser()


@functools.lru_cache(maxsize=4096)
def markdown_html(text: str) -> str:
    """A prompt's or an answer's Markdown as safe HTML: raw HTML shown as text, single line breaks kept
    (a limerick stays five lines), code escaped and plain."""
    return _MD.render(text)


def _bars(progress: list[tuple[float, str]]) -> str:
    """Progress bars (fraction done, label) drawn still: Streamlit's ``st.progress`` animates each change,
    frames that cost every voter's browser more than the new pair itself."""
    return '<div class="pf-bars">' + "".join(
        f'<div class="pf-bar" data-bar="{k}"><p>{html.escape(label)}</p><div class="pf-track">'
        f'<div class="pf-fill" style="width: {100 * min(max(done, 0.0), 1.0):.1f}%"></div></div></div>'
        for k, (done, label) in enumerate(progress)) + "</div>"



def progress_html(progress: list[tuple[float, str]]) -> str:
    """The progress bars alone (the page's first screen has no pair: the judging criteria, or nothing left)."""
    return CSS % {"prompt": 0, "answer": 0} + f'<div class="{PAIR_CLASS}">{_bars(progress)}</div>'


def _toggle(cls: str, closed: str, opened: str) -> str:
    """A show-more switch without script: an empty ``<details>`` whose state the CSS reads (``:has``); a
    new pair is new HTML, so it starts closed."""
    return (f'<details class="{cls}"><summary><span class="pf-closed">{closed}</span>'
            f'<span class="pf-opened">{opened}</span></summary></details>')


WAIT = '<p class="pf-wait">…</p>'  # an answer that has not started yet


def answers_html(answer_a: str, answer_b: str, *, box_attrs: str = "", box_class: str = "", empty: str = "") -> str:
    """Answers A and B side by side (stacked on a phone) in equal boxes that scroll, each headed by its length
    and an Expand switch, with one switch to read both full height (inside a ``PAIR_CLASS`` block after
    :data:`CSS`). ``box_attrs``/``box_class`` go on each answer box (the Battle page marks its streaming state);
    an empty answer shows ``empty``."""
    boxes = "".join(
        f'<div class="pf-col"><div class="pf-head"><h4>{side}</h4><span class="pf-len" data-side="{side}">'
        f'{length_label(text)}</span><span class="pf-pos" data-side="{side}"></span>'
        f'{_toggle("pf-expand", "Expand", "Collapse")}</div>'
        f'<div class="pf-box pf-answer{" " + box_class if box_class else ""}" data-side="{side}"{box_attrs}>'
        f'{markdown_html(text) if text else empty}</div></div>'
        for side, text in (("A", answer_a), ("B", answer_b)))
    both = _toggle("pf-both", "Read both full height", "Back to side-by-side boxes")
    return f'<div class="pf-answers">{both}<div class="pf-cols">{boxes}</div></div>'


def pair_html(item_id: str, prompt: str, answer_a: str, answer_b: str, *, progress: list[tuple[float, str]],
              prompt_height: int, answer_height: int) -> str:
    """The progress bars, the prompt (in a box of ``prompt_height`` px when long) and answers A and B
    (:func:`answers_html`) in boxes of at most ``answer_height`` px; ``data-item`` carries the item id (what the
    page's tests wait on)."""
    long_prompt = len(prompt) > 300 or prompt.count("\n") > 4
    return (CSS % {"prompt": prompt_height, "answer": answer_height}
            + f'<div class="{PAIR_CLASS}" data-item="{html.escape(item_id, quote=True)}">'
            + f'{_bars(progress)}<h4>Prompt</h4>'
            + f'<p class="pf-item">Item {html.escape(item_id)} · press <kbd>?</kbd> for the keyboard shortcuts</p>'
            + f'<div class="pf-box pf-prompt{" pf-long" if long_prompt else ""}">{markdown_html(prompt)}</div>'
            + f'{answers_html(answer_a, answer_b)}</div>')


def turn_html(answer_a: str, answer_b: str, *, done: bool, answer_height: int) -> str:
    """One Battle turn's two answers as the Vote page shows answers (:func:`answers_html`); each box is a
    ``pf-battle`` with ``data-done`` 0 while it streams, 1 once both finished."""
    return (CSS % {"prompt": 0, "answer": answer_height} + f'<div class="{PAIR_CLASS}">'
            + answers_html(answer_a, answer_b, box_attrs=f' data-done="{int(done)}"', box_class="pf-battle",
                           empty="" if done else WAIT)
            + "</div>")
