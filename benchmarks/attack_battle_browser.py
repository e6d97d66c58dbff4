"""Attack: the open Battle page from real Chromium, against the app's default limits (issue 36, section 4).

(a) ``BENCH_WORKERS`` (3) attackers from one address (loopback), each in a new browser context, so a new guest
id, after every refusal, pressing Send as fast as the page answers (New round after each answered battle) for
``BENCH_SECONDS`` (57) s; (b) one guest in ``BENCH_TABS`` (16) tabs pressing Send together. Each attack runs on
its own fresh store and server (the models: a stdlib fake OpenAI-compatible server on loopback). Counted from
the store and the fake server: battles started, turns claimed, model calls, guest ids issued. Before: issue
36's figures on the main of that day (no per-address limit, a count and insert in separate statements).
Run: ``.venv/bin/python -m benchmarks.attack_battle_browser``; the table goes to
``benchmarks/results/attack_battle_browser.md``.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path

from benchmarks.common import write_table
from tests.harness.battle_attack import arena, load_average, many_guests, many_tabs, timed, wait_answered
from tests.harness.chromium import CHROMIUM

SECONDS = float(os.environ.get("BENCH_SECONDS", "57"))
WORKERS = int(os.environ.get("BENCH_WORKERS", "3"))
TABS = int(os.environ.get("BENCH_TABS", "16"))


def attack_guests() -> tuple[dict, object, float]:
    with tempfile.TemporaryDirectory() as d, arena(Path(d)) as a:
        t0 = time.monotonic()
        tally = asyncio.run(many_guests(a.base, WORKERS, timed(SECONDS)))
        seconds = time.monotonic() - t0
        return wait_answered(a), tally, seconds


def attack_tabs() -> tuple[dict, object]:
    with tempfile.TemporaryDirectory() as d, arena(Path(d)) as a:
        said = asyncio.run(many_tabs(a.base, TABS))
        return wait_answered(a), said


def main() -> None:
    load_before = load_average()
    got, tally, seconds = attack_guests()
    load_mid = load_average()
    tabs, said = attack_tabs()
    rows = [
        [f"{WORKERS} browsers, a new context (guest id) after each refusal, Send as fast as the page answers, "
         f"{seconds:.0f} s", "90 battles, 180 model calls in 57 s",
         f"{got['battles']} battles, {got['model calls']} model calls; {got['guest ids']} guest ids "
         f"({tally.sign_ins['refused']} sign-ins refused); presses: {dict(tally.presses)}",
         "20 prompts a minute per address, 6 per guest, 20 guest ids an hour per address"],
        [f"one guest, {TABS} tabs pressing Send together", "9 started",
         f"{tabs['battles']} started, {tabs['model calls']} model calls; tabs: {dict(said)}",
         "6 prompts a minute per guest"],
    ]
    notes = (f"Debian's Chromium ({CHROMIUM}), headless, one address (127.0.0.1); load average "
             f"(1, 5, 15 min) before: {load_before}, after (a): {load_mid}, after (b): {load_average()}; "
             f"{os.cpu_count()} CPUs. Before: issue 36 on that day's main.")
    write_table("attack_battle_browser", "Battle page attacks in Chromium (default limits)",
                ["attack", "before", "now", "limit"], rows, notes)


if __name__ == "__main__":
    main()
