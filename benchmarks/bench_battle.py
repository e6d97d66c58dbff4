"""Benchmark: the Battle page's streaming overhead with one voter in Chromium, two llama.cpp servers.

For each battle the page records (``performance.now()``, in the browser) when Send was clicked and every
change of answer A's box; the app stores each answer's time to first token as the client saw it from the
server (``first_token_s``, from the request's start). Reported: time to first visible token minus the
server's time to first token (the page's overhead: the rerun, storing the battle, the websocket, drawing),
and the longest gap between two visible updates of a streaming answer. Targets: p50 overhead <= 0.15 s,
no gap over 0.25 s. Run: ``.venv/bin/python -m benchmarks.bench_battle``; writes ``results/bench_battle.md``.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from benchmarks.bench_app import ROOT, start_server
from benchmarks.common import write_table
from llm.local_server import free_port, llama_server, smollm2_gguf
from voting.access import issue_invite
from voting.battles import battles_t, open_battles
from voting.store import open_store

BATTLES = int(os.environ.get("BENCH_BATTLES", "6"))
OBSERVE = """() => { window.__pfT0 = performance.now(); window.__pfSeen = [];
  const look = () => { const b = document.querySelector(".pf-battle[data-side='A'][data-done='0'] .pf-text");
    if (b) window.__pfSeen.push([performance.now() - window.__pfT0, b.innerText.length]); };
  if (window.__pfObs) window.__pfObs.disconnect();
  window.__pfObs = new MutationObserver(look);
  window.__pfObs.observe(document.body, {subtree: true, childList: true, characterData: true}); }"""


@contextmanager
def battle_app(model_fields: str, **server_options) -> Iterator[tuple[str, Engine]]:
    """The app with a Battle roster of two llama.cpp servers (SmolLM2, one thread each) over a fresh store,
    open to invited voters: yields (base URL, the store). ``model_fields``: more TOML lines for each model."""
    with tempfile.TemporaryDirectory() as tmp, llama_server(smollm2_gguf(), n_threads=1, **server_options) as u1, \
            llama_server(smollm2_gguf(), n_threads=1, **server_options) as u2:
        roster = Path(tmp) / "roster.toml"
        roster.write_text("".join(f'[[model]]\nname = "m{i}"\nspec = "local:{u}#smollm2"\ntemperature = 0.0\n'
                                  f"{model_fields}\n\n" for i, u in enumerate((u1, u2))))
        url = f"sqlite:///{tmp}/votes.db"
        engine = open_battles(open_store(url))
        os.environ.update(PREFLAB_ARENA=str(roster), PREFLAB_ACCESS="invite", PREFLAB_ARENA_PER_MINUTE="100",
                          PREFLAB_ARENA_PER_ADDRESS="1000", PREFLAB_MIN_SECONDS="0")  # one address; timing the vote
        port = free_port()
        proc = start_server(url, ROOT, port)
        try:
            yield f"http://127.0.0.1:{port}", engine
        finally:
            proc.terminate()
            proc.wait()


def main() -> None:
    from playwright.sync_api import sync_playwright

    rows, overheads, gaps = [], [], []
    with battle_app("max_tokens = 96") as (base, engine):
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                        args=["--headless", "--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(180_000)
            page.goto(f"{base}/battle?invite={issue_invite(engine, 'bench')}")
            page.get_by_text("Your prompt").wait_for()
            for k in range(BATTLES):
                page.locator("textarea").fill(f"Tell me about the number {k} in three sentences.")
                page.evaluate(OBSERVE)
                page.get_by_role("button", name="Send").click()
                page.wait_for_function("""() => {
                    const b = document.querySelector('[class*=st-key-battle_tie_] button');
                    return b && !b.closest("[data-stale='true']"); }""")
                seen = [(t / 1000, n) for t, n in page.evaluate("window.__pfSeen") if n > 0]
                with engine.connect() as conn:
                    meta = conn.execute(sa.select(battles_t.c.answer_meta).order_by(
                        battles_t.c.created_at.desc()).limit(1)).scalar_one()
                server_ttft = json.loads(meta)[-1]["a"]["first_token_s"]
                first = seen[0][0] if seen else float("nan")
                times = [t for t, _ in seen]
                gap = max((b - a for a, b in zip(times, times[1:], strict=False)), default=float("nan"))
                overheads.append(first - server_ttft)
                gaps.append(gap)
                rows.append([k + 1, f"{first:.3f}", f"{server_ttft:.3f}", f"{first - server_ttft:.3f}",
                             f"{gap:.3f}", len(seen)])
                page.locator("textarea").blur()
                page.locator("body").press("3")
                page.get_by_text("Vote saved").wait_for()
            browser.close()
    rows.append(["p50", "", "", f"{statistics.median(overheads):.3f}", f"{statistics.median(gaps):.3f}", ""])
    write_table("bench_battle", "Battle page streaming overhead (one voter)",
                ["battle", "first visible token s (from Send)", "server first token s", "overhead s",
                 "longest gap between updates s", "visible updates"], rows,
                notes="Two llama.cpp servers (SmolLM2-135M, one thread each), Streamlit and Chromium on the same "
                f"2 shared cores (1-minute load average {os.getloadavg()[0]:.1f} at the end). The server's first "
                "token is timed from the request's start, so the overhead includes the rerun after Send, storing "
                "the battle and drawing the boxes. Targets: p50 overhead <= 0.15 s, no gap over 0.25 s.")


if __name__ == "__main__":
    main()
