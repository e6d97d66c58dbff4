"""Keyboard voting that loses no key press: a queue in the browser.

Streamlit's button shortcuts act only on buttons on screen, so a key pressed while the page redraws
(``1`` then ``n`` 150 ms later) hit nothing. This script (our own, in a same-origin component iframe; model
output never becomes HTML) takes the shortcut keys in the capture phase, queues them and presses the next
queued key's button only once a new run has drawn the page and that button is on screen, enabled and not
stale. A key whose button does not come within 20 s (a very busy server) is dropped with a visible note.
"""

from __future__ import annotations

import json

import streamlit as st

# Runs in the app's page (the parent), installed once: code defined in the component's iframe would die with
# the iframe, which every run replaces.
_QUEUE = """
(() => {
  const w = window;
  if (w.__preflabQueue) return;
  w.__preflabQueue = [];
  const doc = w.document;
  const note = (text) => {
    let el = doc.getElementById("preflab-keyq");
    if (!el) {
      el = doc.createElement("div"); el.id = "preflab-keyq";
      el.style.cssText = "position:fixed;right:16px;bottom:16px;z-index:99999;padding:6px 10px;" +
        "border-radius:6px;background:#31333f;color:#fff;font:14px sans-serif;pointer-events:none";
      doc.body.appendChild(el);
    }
    el.textContent = text; el.style.display = text ? "block" : "none";
  };
  const target = (key) => {
    const b = doc.querySelector(".st-key-" + w.__preflabKeys[key] + " button");
    if (!b || b.disabled || b.closest("[data-stale='true']")) return null;
    return b;
  };
  let waitRun = null, since = 0, clickedAt = 0;
  const pump = () => {
    const q = w.__preflabQueue;
    if (!q.length) { note(""); return; }
    // the last press has not redrawn the page yet (give up waiting after 20 s: a run that drew nothing)
    if (waitRun !== null && w.__preflabRun === waitRun && Date.now() - clickedAt < 20000) return;
    const b = target(q[0]);
    if (!b) {
      if (!since) since = Date.now();
      if (Date.now() - since > 20000) { note("Key '" + q.shift() + "' did nothing here"); since = 0; }
      else note("Queued: " + q.join(" "));
      return;
    }
    q.shift(); since = 0; waitRun = w.__preflabRun; clickedAt = Date.now(); b.click();
    note(q.length ? "Queued: " + q.join(" ") : "");
  };
  w.addEventListener("keydown", (e) => {
    const key = (e.key || "").toLowerCase();
    if (!w.__preflabKeys || !(key in w.__preflabKeys) || e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target, tag = t && t.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || (t && t.isContentEditable)) return;
    e.preventDefault(); e.stopImmediatePropagation();
    if (!e.repeat) { w.__preflabQueue.push(key); pump(); }
  }, true);
  w.setInterval(pump, 25);
})();
"""
_SCRIPT = """<script>
const w = window.parent;
w.__preflabKeys = %(keys)s;
w.__preflabRun = %(run)s;
if (!w.__preflabQueue) {
  const s = w.document.createElement("script");
  s.textContent = %(queue)s;
  w.document.head.appendChild(s);
}
</script>"""


def keyboard_queue(keys: dict[str, str]) -> None:
    """Install (once per browser tab) the key queue; ``keys`` maps a key to the Streamlit key of its button.

    Each run draws the component with a new run number, which tells the queue the page was redrawn.
    """
    run = st.session_state["_key_run"] = st.session_state.get("_key_run", 0) + 1
    with st.container(key="keyboard_queue", height=1, border=False):
        html = _SCRIPT % {"keys": json.dumps(keys), "run": run, "queue": json.dumps(_QUEUE)}
        if hasattr(st, "iframe"):  # Streamlit >= 1.52 (components.v1.html is deprecated)
            st.iframe(html, height=1)
        else:
            import streamlit.components.v1 as components

            components.html(html, height=0)
