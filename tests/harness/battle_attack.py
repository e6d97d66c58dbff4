"""Two attacks on the open Battle page from real Chromium (``streamlit run app.py``, open voting, the models a
stdlib fake OpenAI-compatible server on loopback), shared by ``benchmarks/attack_battle_browser.py`` (timed runs,
a table) and ``tests/voting/test_battle_attacks_browser.py`` (the limits hold; waits on state only).

- :func:`many_guests`: browser contexts from one address, each minting a guest id, pressing Send as fast as
  the page lets them (New round after each answered battle; a new context, so a new guest id, after each
  refusal) until a stop condition.
- :func:`many_tabs`: one guest in N tabs, every prompt typed, then Send pressed in all tabs together.

What counts is read from the store and the fake server (:func:`counts`): battles started, turns claimed,
model calls, guest ids issued; the page's own words only tell a worker what happened to its press.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import os
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa

from tests.harness.chromium import ARGS, CHROMIUM

FLAGS = ["--server.headless", "true", "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
NAMES = ("zephyrine-7b", "quokka-13b")
VOTE = "[class*=st-key-battle_A_] button"
#: What the page says for each refusal (voting.pages.battle.REFUSED, voting.pages.voter_gate), by reason.
SAID = {"address": "coming from your network", "voter": "prompts a minute", "guests": "anonymous voters have started",
        "spend": "spending limit"}
OUTCOME = """([seen, voteSel, said]) => {
  if (document.querySelector("[data-stale='true']")) return null;
  const vote = document.querySelector(voteSel);
  if (vote) { const k = vote.closest("[class*=st-key-battle_A_]").className.match(/st-key-battle_A_\\w+/)[0];
              if (!seen.includes(k)) return "started " + k; }
  for (const a of document.querySelectorAll("[data-testid='stAlert']")) {
    for (const [reason, words] of Object.entries(said)) if (a.innerText.includes(words)) return reason; }
  return null;
}"""


@dataclass
class Arena:
    """A running arena: its URL, store and fake model server."""

    base: str
    engine: sa.Engine
    api: object


@contextmanager
def arena(folder: Path, **env: str) -> Iterator[Arena]:
    """An open-voting arena of two fake models on a fresh SQLite store in ``folder``; ``env``: PREFLAB_* limits."""
    from tests.judge.api_fakes import ApiFake
    from tests.voting.browser_app import streamlit_server
    from voting.store import open_store

    with ApiFake() as api:
        (folder / "roster.toml").write_text("".join(
            f'[[model]]\nname = "{n}"\nspec = "local:{api.url}#{n}"\nmax_tokens = 24\n\n' for n in NAMES))
        url = f"sqlite:///{folder / 'votes.db'}"
        engine = open_store(url)
        settings = {"PREFLAB_DB": url, "PREFLAB_ARENA": str(folder / "roster.toml"), "PREFLAB_ACCESS": "open",
                    "PREFLAB_LOCAL_API_KEY": "sk-local-battle-0123456789", "PREFLAB_MIN_SECONDS": "0", **env}
        with streamlit_server(folder, settings, FLAGS) as base:
            yield Arena(base, engine, api)


def counts(a: Arena) -> dict[str, int]:
    """Battles started, turns claimed (each reserved in the spend table), model calls, guest ids issued."""
    from voting.tables import battles_t, guests_t, spend_t

    with a.engine.connect() as conn:
        n = {name: conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()
             for name, t in (("battles", battles_t), ("turns", spend_t), ("guest ids", guests_t))}
        n["answering"] = conn.execute(sa.select(sa.func.count()).where(battles_t.c.status == "answering")).scalar_one()
    n["model calls"] = sum(1 for path, _, _ in a.api.log if path == "/v1/chat/completions")  # type: ignore[attr-defined]
    return n


async def _outcome(page, seen: list[str]) -> str:  # noqa: ANN001
    """What the page settled on after a press: "started battle_A_<id>_<turn>" (a vote bar not seen before) or
    the refusal's reason (its warning)."""
    handle = await page.wait_for_function(OUTCOME, arg=[seen, VOTE, SAID], timeout=300_000, polling=100)
    return await handle.json_value()


SIGNED_IN = """(said) => {
  if (document.querySelector("textarea")) return "in";
  for (const a of document.querySelectorAll("[data-testid='stAlert']")) if (a.innerText.includes(said)) return "guests";
  return null;
}"""


async def _sign_in(browser, base: str):  # noqa: ANN001, ANN202
    """A new context on /battle, "Start voting": (context, page) signed in as a new guest, or (context, None)
    when the address has had its guest ids. A press the page never acted on (the form still there, the page
    idle, no ``guest=`` in the URL) is made again: on a loaded machine a click can be lost, and a second press in
    one browser session can never mint a second id (the session's guest id is given back)."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    from tests.voting.browser_app import IDLE

    ctx = await browser.new_context(viewport={"width": 1280, "height": 800})
    page = await ctx.new_page()
    await page.goto(base + "/battle")
    start = page.get_by_role("button", name="Start voting")
    for _ in range(6):
        await page.wait_for_function(IDLE, timeout=300_000, polling=100)
        await start.click()
        for _ in range(10):  # up to 5 minutes for a page at work
            try:
                got = await page.wait_for_function(SIGNED_IN, arg=SAID["guests"], timeout=30_000, polling=100)
                return ctx, page if await got.json_value() == "in" else None
            except PlaywrightTimeout:
                pass
            if "guest=" not in page.url and await start.count() and await page.evaluate(IDLE):
                break  # idle, the form unchanged: the press was lost
    raise AssertionError(f"'Start voting' was never acted on: {(await page.inner_text('body'))[-600:]}")


async def _press(page, prompt: str, seen: list[str]) -> str:  # noqa: ANN001
    await page.locator("textarea").fill(prompt)
    await page.get_by_role("button", name="Send").click()
    said = await _outcome(page, seen)
    if said.startswith("started"):
        seen.append(said.split()[1])
        await page.locator(".st-key-battle_new_round button").click()
        await page.wait_for_function("(v) => !document.querySelector(v) && !document.querySelector("
                                     "\"[data-stale='true']\")", arg=VOTE, timeout=300_000)
    return said.split()[0]


@dataclass
class Tally:
    """What the workers' presses met, by outcome ("started", or a refusal's reason), and guest sign-ins."""

    presses: collections.Counter = field(default_factory=collections.Counter)
    sign_ins: collections.Counter = field(default_factory=collections.Counter)


async def _guest_worker(browser, base: str, k: int, tally: Tally, stop: Callable[[Tally], bool]) -> None:  # noqa: ANN001
    n = 0
    while not stop(tally):
        ctx, page = await _sign_in(browser, base)
        tally.sign_ins["in" if page else "refused"] += 1
        seen: list[str] = []
        while page is not None and not stop(tally):
            n += 1
            said = await _press(page, f"Attack {k}-{n}: what is {n} + {k}?", seen)
            tally.presses[said] += 1
            if said != "started":
                break  # refused: a new context, so a new guest id
        await ctx.close()


async def many_guests(base: str, workers: int, stop: Callable[[Tally], bool]) -> Tally:
    """``workers`` attackers from one address, each in a new browser context per guest id, pressing Send as fast
    as the page answers until ``stop(tally)``."""
    from playwright.async_api import async_playwright

    tally = Tally()
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        await asyncio.gather(*(_guest_worker(browser, base, k, tally, stop) for k in range(workers)))
        await browser.close()
    return tally


async def many_tabs(base: str, tabs: int) -> collections.Counter:
    """One guest in ``tabs`` tabs of one context: every prompt typed, then Send in all together; what each tab
    settled on."""
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        ctx, first = await _sign_in(browser, base)
        assert first is not None, "no guest id for the first tab"
        await first.wait_for_function("() => location.search.includes('guest=')")
        pages = [first] + [await ctx.new_page() for _ in range(tabs - 1)]
        for page in pages[1:]:
            await page.goto(first.url)
        for k, page in enumerate(pages):
            await page.locator("textarea").fill(f"Tab {k}: what is {k} squared?")
        await asyncio.gather(*(page.get_by_role("button", name="Send").click() for page in pages))
        said = await asyncio.gather(*(_outcome(page, []) for page in pages))
        await browser.close()
    return collections.Counter(s.split()[0] for s in said)


def wait_answered(a: Arena, timeout: float = 300) -> dict[str, int]:
    """The counts once no battle is still being answered (every started call has reached the fake)."""
    from tests.voting.conftest import wait_for

    wait_for(lambda: counts(a)["answering"] == 0, timeout=timeout)
    return counts(a)


def run(make: Callable[[], Coroutine]) -> object:
    """``asyncio.run`` of the coroutine ``make()`` returns, in a thread of its own: the tests' sync Playwright
    (the module's ``browser`` fixture) may already run an event loop in this one."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def timed(stop_after: float) -> Callable[[Tally], bool]:
    """A stop condition: ``stop_after`` seconds from now (the benchmark's; the test stops on state)."""
    end = time.monotonic() + stop_after
    return lambda _: time.monotonic() >= end
