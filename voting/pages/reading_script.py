"""The vote page's reading helpers in the browser: back to the top of the pair when a new pair comes (after
Next, Skip or a withdrawn vote the voter's view sat at the old bar), the voter's progress updated at the vote
(the pair's HTML is not sent again then), the sidebar closed on a phone after a dataset is chosen, and a
keyboard-help overlay on ``?``, and how far each answer box has been scrolled (``NN% read``, beside its
length, so the two positions are easy to compare).

One script, installed once per tab (the installer's HTML is the same on every run, so Streamlit leaves it);
each call below is a tiny element whose text changes only when it must run again. Our own code only: the
values passed in are JSON, never model output. The elements sit in a hidden container (no gap in the layout).
"""

from __future__ import annotations

import inspect
import json

import streamlit as st

#: Streamlit >= 1.50 runs a script in ``st.html``; older ones get the page without these helpers.
SCRIPTS = "unsafe_allow_javascript" in inspect.signature(st.html).parameters

HIDDEN = "pf_scripts"  # the key prefix of the containers; pair_html's CSS hides them
_INSTALL = """
(() => {
  const w = window, doc = w.document;
  if (w.__preflabReading) return;
  let lastPair = null;
  const shown = (el) => { const r = el.getBoundingClientRect(); return r.top >= 0 && r.top < w.innerHeight / 2; };
  const help = (keys) => {
    let el = doc.getElementById("preflab-help");
    if (el) { el.remove(); return; }
    el = doc.createElement("div"); el.id = "preflab-help"; el.setAttribute("role", "dialog");
    el.setAttribute("aria-label", "Keyboard shortcuts");
    el.style.cssText = "position:fixed;inset:0;z-index:100000;display:flex;align-items:center;" +
      "justify-content:center;background:rgba(0,0,0,.45)";
    const box = doc.createElement("div");
    box.style.cssText = "background:#fff;color:#31333f;border-radius:8px;padding:16px 24px;" +
      "font:15px sans-serif;min-width:260px;max-width:90vw";
    const h = doc.createElement("h3"); h.textContent = "Keyboard shortcuts"; h.style.margin = "0 0 8px 0";
    box.appendChild(h);
    for (const [key, what] of keys) {
      const row = doc.createElement("div"); row.style.margin = "4px 0";
      const k = doc.createElement("kbd"); k.textContent = key;
      k.style.cssText = "display:inline-block;min-width:1.6em;text-align:center;border:1px solid #aaa;" +
        "border-radius:4px;padding:0 4px;margin-right:10px;font-family:monospace";
      row.appendChild(k); row.appendChild(doc.createTextNode(what)); box.appendChild(row);
    }
    const foot = doc.createElement("div"); foot.style.cssText = "margin-top:10px;opacity:.7";
    foot.textContent = "Esc or ? closes this."; box.appendChild(foot);
    el.appendChild(box); el.addEventListener("click", () => el.remove());
    doc.body.appendChild(el);
  };
  w.__preflabReading = {
    keys: [],
    round: null,  // the round last shown (its vote buttons' keys carry it): what a test can wait on
    newPair(token) {  // a new pair: bring its top (progress, item id, prompt) into view
      const first = lastPair === null;
      lastPair = token;
      w.__preflabReading.round = token;
      if (first) return;
      // Keep it there until the page has settled (the new pair drawn and no element of the run before left:
      // Streamlit marks those data-stale until the run ends, and their removal moves the page), however long
      // a busy machine takes; a newer pair, or the voter scrolling or pressing a key, ends it.
      let mine = true, held = 0;
      const stop = () => { mine = false; };
      for (const e of ["wheel", "touchmove", "keydown", "mousedown"]) doc.addEventListener(e, stop, {once: true});
      const go = () => {
        if (!mine || lastPair !== token) return;
        const pair = doc.querySelector(".preflab-pair[data-item]");
        const fresh = pair && !pair.closest("[data-stale='true']");
        if (fresh && !shown(pair)) pair.scrollIntoView({block: "start"});
        if (fresh && shown(pair) && (!doc.querySelector("[data-stale='true']") || ++held > 600)) return;
        w.requestAnimationFrame(go);
      };
      w.requestAnimationFrame(go);
    },
    mine(label, done) {  // the voter's own progress bar, at the vote
      const bar = doc.querySelector(".preflab-pair .pf-bar[data-bar='0']");
      if (!bar) return;
      bar.querySelector("p").textContent = label;
      bar.querySelector(".pf-fill").style.width = (100 * Math.min(Math.max(done, 0), 1)).toFixed(1) + "%";
    },
    closeSidebarOnPhone() {
      if (w.innerWidth >= 768) return;  // Streamlit's own breakpoint: below it the sidebar covers the page
      const b = doc.querySelector("[data-testid='stSidebarCollapseButton'] button");
      if (b) b.click();
    },
  };
  // how far each answer has been read, beside its length: the two scroll positions side by side
  doc.addEventListener("scroll", (e) => {
    const box = e.target;
    if (!box.classList || !box.classList.contains("pf-answer")) return;
    const pos = box.closest(".pf-col") && box.closest(".pf-col").querySelector(".pf-pos");
    const room = box.scrollHeight - box.clientHeight;
    if (pos) pos.textContent = room > 0 ? Math.round(100 * box.scrollTop / room) + "% read" : "";
  }, {capture: true, passive: true});
  w.addEventListener("keydown", (e) => {
    const t = e.target, tag = t && t.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || (t && t.isContentEditable)) return;
    const open = doc.getElementById("preflab-help");
    if (e.key === "?" || (e.key === "Escape" && open)) { e.preventDefault(); help(w.__preflabReading.keys); }
  }, true);
})();
"""


def _js(code: str) -> str:
    """``code`` as a script element: ``<`` escaped so no value can close the element."""
    return "<script>" + code.replace("</", "<\\/") + "</script>"


def _run(key: str, code: str) -> None:
    if not SCRIPTS:
        return
    with st.container(key=f"{HIDDEN}_{key}", height=1, border=False):
        st.html(_js(code), unsafe_allow_javascript=True)


def _value(obj: object) -> str:
    return json.dumps(obj).replace("<", "\\u003c")


def new_pair(token: str, keys: list[tuple[str, str]]) -> None:
    """Install the script (first call in a tab) and mark a new pair (``token`` names the shown round):
    the view goes back to the top of the pair unless it is there already; ``keys`` feed the help overlay."""
    if not SCRIPTS:
        return
    with st.container(key=f"{HIDDEN}_pair", height=1, border=False):
        st.html(_js(_INSTALL), unsafe_allow_javascript=True)
        st.html(_js(f"window.__preflabReading.keys = {_value(keys)}; "
                    f"window.__preflabReading.newPair({_value(token)})"), unsafe_allow_javascript=True)


def show_mine(label: str, done: float) -> None:
    """Set the voter's own progress bar (its label and fraction) without sending the pair again."""
    _run("mine", f"window.__preflabReading && window.__preflabReading.mine({_value(label)}, {done:.4f})")


def close_sidebar_on_phone(token: str) -> None:
    """Close the sidebar on a phone (it covers the page there); ``token`` changes with each choice."""
    _run("sidebar", f"void {_value(token)}; window.__preflabReading && window.__preflabReading.closeSidebarOnPhone()")
