"""Keyboard voting: a queue in the browser that never carries a key over to a pair the voter has not seen.

Streamlit's button shortcuts act only on buttons on screen, so a key pressed while the page redraws
(``1`` then ``n`` 150 ms later) hit nothing. This script (our own; model output never becomes HTML) takes
the shortcut keys in the capture phase, queues each with the pair on screen when it was pressed, and presses
the next queued key's button only once a new run has drawn the page and that button is on screen, enabled
and not stale. Each key carries the round it was pressed under: the pair on screen, or, for a key pressed less
than :data:`BURST_MS` after the one before (typed ahead, faster than anyone reads a new pair), that key's round.
A key is dropped, with a visible note, when its turn comes under another pair (``s`` then ``1``: the ``1`` was
meant for the skipped pair, even when the next pair is drawn 30 ms after the ``s``), and a round-bound key
(a vote or Skip) presses only the button drawn for its own round (the buttons' keys carry the round, so the
server's round check refuses it once that round is gone): typing ahead never votes on a pair nobody has read,
whatever the minimum time on a pair. ``1`` then ``n`` still works (both under the same pair). A key whose button
does not come within 20 s (a very busy server) is dropped with a visible note too.

Cheap in the browser, where 30 voters' tabs share the server's cores: the installer's HTML is the same on every
run (Streamlit then leaves it alone instead of replacing it), each run only updates a tiny run-marker element,
and the queue checks for its button only while keys are waiting (no timer when the queue is empty).
"""

from __future__ import annotations

import html
import inspect
import json

import streamlit as st

#: a key pressed less than this many milliseconds after the previous key belongs to that key's round
BURST_MS = 300
# Runs in the app's page, once per tab (a redraw of the same HTML does not run it again).
_QUEUE = """
(() => {
  const w = window;
  w.__preflabKeys = %(keys)s;
  w.__preflabBound = %(bound)s;  // buttons whose Streamlit key is their name, a dash and their round
  w.__preflabInstalls = (w.__preflabInstalls || 0) + 1;  // tests: once per tab, not once per run
  if (w.__preflabQueue) return;
  w.__preflabQueue = [];
  w.__preflabPumps = 0;  // checks made (tests: none while the queue is empty)
  const doc = w.document;
  const note = (text) => {
    let el = doc.getElementById("preflab-keyq");
    if (!el) {
      if (!text) return;
      el = doc.createElement("div"); el.id = "preflab-keyq";
      el.style.cssText = "position:fixed;right:16px;bottom:16px;z-index:99999;padding:6px 10px;" +
        "border-radius:6px;background:#31333f;color:#fff;font:14px sans-serif;pointer-events:none";
      doc.body.appendChild(el);
    }
    el.textContent = text; el.style.display = text ? "block" : "none";
  };
  // the run that drew the page (a marker each run updates); null while a new run has not drawn it yet
  const marker = () => doc.querySelector(".st-key-keyboard_queue [data-preflab-run]");
  const run = () => {
    const m = marker();
    return m && !m.closest("[data-stale='true']") ? m.getAttribute("data-preflab-run") : null;
  };
  // the pair on screen (its round), stale or not: what the voter was looking at
  const pair = () => { const m = marker(); return m ? m.getAttribute("data-preflab-pair") : null; };
  w.__preflabDropped = 0;  // keys dropped because the pair changed (tests)
  const target = (entry) => {
    const name = w.__preflabKeys[entry.key];
    const own = w.__preflabBound.includes(name) ? "-" + entry.pair : "";  // only its own round's button
    const b = doc.querySelector(".st-key-" + CSS.escape(name + own) + " button");
    if (!b || b.disabled || b.closest("[data-stale='true']")) return null;
    return b;
  };
  let waitRun = null, since = 0, clickedAt = 0, timer = 0, shownUntil = 0;
  const step = (q) => {
    // the last press has not redrawn the page yet (give up waiting after 20 s: a run that drew nothing)
    const now = run();
    if (waitRun !== null && (now === null || now === waitRun) && Date.now() - clickedAt < 20000) return;
    if (now !== null && q[0].pair !== pair()) {  // pressed under another pair: never vote on this one
      w.__preflabDropped += 1; since = 0; shownUntil = Date.now() + 4000;
      note("Key '" + q.shift().key + "' dropped: a new pair came. Read it first.");
      return;
    }
    const b = now === null ? null : target(q[0]);
    const keys = () => q.map((e) => e.key).join(" ");
    if (!b) {
      if (!since) since = Date.now();
      if (Date.now() - since > 20000) {
        note("Key '" + q.shift().key + "' did nothing here"); since = 0; shownUntil = Date.now() + 4000;
      }
      else note("Queued: " + keys());
      return;
    }
    q.shift(); since = 0; waitRun = now; clickedAt = Date.now(); b.click();
    if (q.length) note("Queued: " + keys()); else if (Date.now() >= shownUntil) note("");
  };
  const pump = () => {
    timer = 0; w.__preflabPumps += 1;
    const q = w.__preflabQueue;
    if (q.length) step(q);
    if (q.length) timer = w.setTimeout(pump, 25);  // keys are waiting: look again soon
    else if (Date.now() >= shownUntil) note("");
    else w.setTimeout(() => { if (!w.__preflabQueue.length) note(""); }, shownUntil - Date.now());
  };
  // the Undo button's countdown, in the browser: a server rerun a second per voter cost far more
  let undoTimer = 0;
  w.__preflabUndo = (left) => {
    const end = Date.now() + 1000 * left;
    w.clearInterval(undoTimer);
    const tick = () => {
      const b = doc.querySelector(".st-key-undo button");
      if (!b) { w.clearInterval(undoTimer); return; }
      const s = Math.round((end - Date.now()) / 1000);
      const walk = doc.createTreeWalker(b, NodeFilter.SHOW_TEXT);
      for (let t = walk.nextNode(); t; t = walk.nextNode()) {
        if (t.nodeValue.startsWith("Undo (")) t.nodeValue = s > 0 ? "Undo (" + s + " s left)" : "Undo (window closed)";
      }
      if (s <= 0) { b.disabled = true; w.clearInterval(undoTimer); }
    };
    undoTimer = w.setInterval(tick, 1000);
  };
  // a link in model output (voting.pages.pair_html) opens a new tab: st.html's sanitiser drops target, and
  // leaving the page would lose the voter's round
  doc.addEventListener("click", (e) => {
    const a = e.target && e.target.closest && e.target.closest(".preflab-pair a[href]");
    if (!a || e.defaultPrevented || e.button !== 0) return;
    e.preventDefault();
    w.open(a.href, "_blank", "noopener,noreferrer");
  }, true);
  w.addEventListener("keydown", (e) => {
    const key = (e.key || "").toLowerCase();
    if (!w.__preflabKeys || !(key in w.__preflabKeys) || e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target, tag = t && t.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || (t && t.isContentEditable)) return;
    e.preventDefault(); e.stopImmediatePropagation();
    if (e.repeat) return;
    const at = Date.now(), last = w.__preflabLast;  // typed ahead: the previous key's round
    const round = last && at - last.at < %(burst)d ? last.pair : pair();
    w.__preflabLast = {at: at, pair: round};
    w.__preflabQueue.push({key: key, pair: round}); if (!timer) pump();
  }, true);
})();
"""
_IFRAME = """<script>
const w = window.parent, s = w.document.createElement("script");
s.textContent = %s;
w.document.head.appendChild(s);
</script>"""


def keyboard_queue(keys: dict[str, str], pair: str = "", bound: tuple[str, ...] = ()) -> None:
    """Install (once per browser tab) the key queue; ``keys`` maps a key to the Streamlit key of the
    container of its button; ``pair`` names the pair on screen (a key acts only under the pair it was
    pressed under); the buttons named in ``bound`` have the Streamlit key ``<name>-<pair>``, and a key
    presses only the one of the round it was pressed under.

    The installer is the same HTML on every run; each run writes its number and the pair into a marker
    element, which tells the queue the page was redrawn."""
    run = st.session_state["_key_run"] = st.session_state.get("_key_run", 0) + 1
    script = _QUEUE % {"keys": json.dumps(keys), "bound": json.dumps(list(bound)), "burst": BURST_MS}
    with st.container(key="keyboard_queue", height=1, border=False):
        if "unsafe_allow_javascript" in inspect.signature(st.html).parameters:  # Streamlit >= 1.50: no iframe
            st.html(f"<script>{script}</script>", unsafe_allow_javascript=True)
        else:
            import streamlit.components.v1 as components

            components.html(_IFRAME % json.dumps(script), height=0)
        st.html(f'<span data-preflab-run="{run}" data-preflab-pair="{html.escape(pair, quote=True)}"></span>')


def undo_countdown(seconds_left: float, vote_id: object) -> None:
    """Count the Undo button's label down in the browser (the key queue's script does it), from
    ``seconds_left``; ``vote_id`` makes each vote's element new. Without JavaScript in st.html (Streamlit
    < 1.50) the label stays as drawn; the server enforces the window either way."""
    if "unsafe_allow_javascript" in inspect.signature(st.html).parameters:
        st.html(f"<script>/* vote {json.dumps(str(vote_id))} */ window.__preflabUndo && "
                f"window.__preflabUndo({seconds_left:.1f})</script>", unsafe_allow_javascript=True)
