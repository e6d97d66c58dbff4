"""Benchmark: simultaneous Battle page voters (Chromium contexts) against two llama.cpp servers.

Each voter types a prompt, waits for both answers, votes (key 1-4 at random) and waits for the reveal, for
``BENCH_ROUNDS`` battles. Reported: the vote's latency (key press to "Vote saved"), p50 / p95, and how many
battles were stored voted, failed or abandoned (a lost battle is a vote cast but not stored). The servers
queue requests (``--interrupt_requests false``): llama-cpp-python's default stops a running answer when
another request arrives. Run: ``.venv/bin/python -m benchmarks.bench_battle_voters``.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import time

import sqlalchemy as sa

from benchmarks.bench_battle import battle_app
from benchmarks.common import write_table
from voting.access import issue_invite
from voting.battles import BATTLE_DATASET, battles_t
from voting.store import load_votes

VOTERS = int(os.environ.get("BENCH_VOTERS", "10"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "2"))
FRESH_BAR = """() => { const b = document.querySelector('[class*=st-key-battle_tie_] button');
  return b && !b.closest("[data-stale='true']"); }"""


async def voter(browser, base: str, token: str, k: int, latencies: list[float], errors: list[str]) -> None:  # noqa: ANN001
    ctx = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await ctx.new_page()
    page.set_default_timeout(600_000)
    rng = random.Random(k)
    try:
        await page.goto(f"{base}/battle?invite={token}")
        await page.get_by_text("Your prompt").wait_for()
        for r in range(ROUNDS):
            await page.locator("textarea").fill(f"Voter {k}, question {r}: name a fruit and say why you like it.")
            await page.get_by_role("button", name="Send").click()
            await page.wait_for_function(FRESH_BAR)
            await page.locator("textarea").blur()
            t0 = time.perf_counter()
            await page.locator("body").press(rng.choice("1234"))
            await page.get_by_text("Vote saved").wait_for()
            latencies.append(time.perf_counter() - t0)
    except Exception as e:  # noqa: BLE001  (a benchmark reports what went wrong and carries on)
        errors.append(f"voter {k}: {type(e).__name__}: {str(e)[:120]}")
    finally:
        await ctx.close()


async def drive(base: str, tokens: list[str]) -> tuple[list[float], list[str], float]:
    from playwright.async_api import async_playwright

    latencies: list[float] = []
    errors: list[str] = []
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                          args=["--headless", "--no-sandbox", "--disable-gpu"])
        t0 = time.perf_counter()
        await asyncio.gather(*(voter(browser, base, t, k, latencies, errors) for k, t in enumerate(tokens)))
        wall = time.perf_counter() - t0
        await browser.close()
    return latencies, errors, wall


def main() -> None:
    with battle_app("max_tokens = 32\ntimeout = 240", interrupt=False) as (base, engine):
        tokens = [issue_invite(engine, f"voter-{k}") for k in range(VOTERS)]
        latencies, errors, wall = asyncio.run(drive(base, tokens))
        with engine.connect() as conn:
            status = dict(conn.execute(sa.select(battles_t.c.status, sa.func.count())
                                       .group_by(battles_t.c.status)).all())
        votes = len(load_votes(engine, BATTLE_DATASET))
    q = statistics.quantiles(latencies, n=20) if len(latencies) >= 2 else [float("nan")] * 19
    rows = [[VOTERS, ROUNDS, len(latencies), votes, status.get("voted", 0), status.get("failed", 0),
             status.get("abandoned", 0), f"{statistics.median(latencies):.3f}" if latencies else "-",
             f"{q[18]:.3f}", f"{wall:.1f}"]]
    notes = (f"Two llama.cpp servers (SmolLM2-135M, one thread each, requests queued), Streamlit and {VOTERS} "
             f"Chromium contexts on the same 2 shared cores (1-minute load average {os.getloadavg()[0]:.1f} at the "
             "end). Vote latency: key press to the reveal. Target: p95 <= 1 s, no lost battles (votes cast = "
             "votes stored).")
    if errors:
        notes += " Errors: " + "; ".join(errors)
    write_table("bench_battle_voters", "Simultaneous Battle page voters",
                ["voters", "battles each", "votes cast", "votes stored", "voted", "failed", "abandoned",
                 "vote p50 s", "vote p95 s", "wall s"], rows, notes=notes)


if __name__ == "__main__":
    main()
