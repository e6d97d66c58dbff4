"""Where one Chromium voter's CPU goes on the vote page: per phase, per process, per script.

One voter (Playwright, 1280x900) votes and goes Next ``--votes`` times (after two warm-up cycles). Printed:
the Chromium CPU (all its processes) of the vote phase (click -> reveal, + 0.5 s) and of the Next phase
(click -> new pair, + 0.5 s), per cycle; the idle CPU of the vote page and of the reveal (the Undo countdown
ticking); with ``--js``, the renderer's JavaScript by script and by function (CDP ``Profiler``, sampled;
``(program)`` is the renderer's native work: style, layout, paint); with ``--trace``, the self time of
trace events by thread (CDP tracing). Profiling costs CPU itself: compare ``--js`` runs with ``--js`` runs.

    python -m benchmarks.bench_app_browser --votes 12 --app-root ../main      # a before/after: run both
    python -m benchmarks.bench_app_browser --votes 8 --js
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import random
import tempfile
import time
from pathlib import Path

from benchmarks.bench_app import FRESH_ITEM, FRESH_NEXT, ROOT, chromium_cpu, start_server, when
from benchmarks.bench_app_server import seed
from tests.harness.browser_trace import js_self, self_times
from tests.harness.chromium import ARGS, CHROMIUM

CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline", "v8", "blink", "toplevel", "cc",
              "viz"]


def _cpu() -> float:
    return sum(chromium_cpu().values())


async def _cycle(page, item: str) -> tuple[float, float, str]:  # noqa: ANN001
    """One vote and Next; the Chromium CPU seconds of each phase (each + 0.5 s for the last paints)."""
    c0 = _cpu()
    await page.locator(".st-key-vote_A button").click()
    await when(page, FRESH_NEXT)
    await asyncio.sleep(0.5)
    c1 = _cpu()
    await page.locator(".st-key-next button").click()
    item = await when(page, FRESH_ITEM, item)
    await asyncio.sleep(0.5)
    return c1 - c0, _cpu() - c1, item


async def _idle_cpu(page, item: str) -> tuple[float, float, str]:  # noqa: ANN001
    """Chromium's CPU per second on an idle vote page and on an idle reveal (its Undo countdown); the next item."""
    await asyncio.sleep(2)
    c0 = _cpu()
    await asyncio.sleep(10)
    idle_vote = _cpu() - c0
    await page.locator(".st-key-vote_A button").click()
    await when(page, FRESH_NEXT)
    await asyncio.sleep(1)
    c0 = _cpu()
    await asyncio.sleep(10)
    idle_reveal = _cpu() - c0
    await page.locator(".st-key-next button").click()
    return idle_vote, idle_reveal, await when(page, FRESH_ITEM, item)


def _print_js(profile: dict, votes: int) -> None:
    by_script, by_function = js_self(profile)
    print("JavaScript (sampled self time, ms per cycle) by script:")
    for name, us in by_script.most_common(16):
        print(f"  {us / 1000 / votes:7.1f}  {name}")
    print("... by function:")
    for name, us in by_function.most_common(25):
        print(f"  {us / 1000 / votes:7.1f}  {name}")


def _print_trace(events: list, votes: int) -> None:
    print("trace events (self time, ms per cycle) by thread:")
    for (thread, name), us in collections.Counter(self_times(events)).most_common(30):
        print(f"  {us / 1000 / votes:7.1f}  {thread}: {name}")


async def profile(base: str, token: str, votes: int, js: bool, trace: bool) -> None:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        ctx = await browser.new_context(viewport={"width": 1280, "height": 900})
        page = await ctx.new_page()
        await page.goto(f"{base}/?invite={token}")
        item = await when(page, FRESH_ITEM)
        for _ in range(2):  # warm: lazy chunks loaded, caches filled
            item = (await _cycle(page, item))[2]
        idle_vote, idle_reveal, item = await _idle_cpu(page, item)
        cdp = await ctx.new_cdp_session(page)
        if js:
            await cdp.send("Profiler.enable")
            await cdp.send("Profiler.setSamplingInterval", {"interval": 200})
            await cdp.send("Profiler.start")
        if trace:
            await browser.start_tracing(page=page, categories=CATEGORIES)
        start, vote_cpu, next_cpu = chromium_cpu(), 0.0, 0.0
        for _ in range(votes):
            await asyncio.sleep(1.0)
            v, n, item = await _cycle(page, item)
            vote_cpu, next_cpu = vote_cpu + v, next_cpu + n
        end = chromium_cpu()
        kinds: dict[str, float] = collections.Counter()
        for key, t in end.items():
            kinds[key[1]] += t - start.get(key, 0.0)
        ms = 1000 / votes
        print(f"Chromium CPU per vote cycle: {sum(kinds.values()) * ms:.0f} ms (vote phase {vote_cpu * ms:.0f}, "
              f"Next phase {next_cpu * ms:.0f}; " + ", ".join(f"{k} {v * ms:.0f}" for k, v in kinds.items()) + ")")
        print(f"idle: vote page {idle_vote * 100:.1f} ms/s, reveal (Undo countdown) {idle_reveal * 100:.1f} ms/s")
        if js:
            _print_js((await cdp.send("Profiler.stop"))["profile"], votes)
        if trace:
            _print_trace(json.loads(await browser.stop_tracing())["traceEvents"], votes)
        await browser.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--votes", type=int, default=12, help="measured vote cycles")
    ap.add_argument("--app-root", type=Path, default=ROOT, help="checkout whose app to serve (before/after)")
    ap.add_argument("--js", action="store_true", help="sample the renderer's JavaScript (CDP Profiler)")
    ap.add_argument("--trace", action="store_true", help="trace events by thread (CDP tracing)")
    args = ap.parse_args()
    from voting.access import issue_invite
    from voting.store import open_store

    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        seed(url, 1000)
        token = issue_invite(open_store(url), f"profiler-{time.time_ns() % 10**9}")
        port = random.randint(20_000, 40_000)
        proc = start_server(url, args.app_root, port)
        try:
            asyncio.run(profile(f"http://127.0.0.1:{port}", token, args.votes, args.js, args.trace))
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
