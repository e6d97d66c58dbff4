"""The voting app under real voters: Chromium through Playwright, one browser context per voter, think time.

Per step (voters x stored votes): votes/min, vote -> confirmed and Next -> new pair p50/p95 (seconds, in the
browser: from the click until the page shows the new state, never a state the old page also had), the app
server's and the browsers' CPU per confirmed vote (ms; CPU times of the server process and of every Chromium
process, over the same window: far less sensitive to a busy machine than the latencies; the browsers' is what
limits many voters on a small machine), and lost votes (confirmed in the browser but not stored). Then a profile
of one vote (two reruns) in-process, by package (:mod:`benchmarks.bench_app_server`). Optionally the
leaderboard page's render times with many stored votes (``--leaderboard``).

The demo dataset in SQLite or a throw-away PostgreSQL (``--db sqlite,postgresql``); ``--stored`` adds
synthetic votes first (1k / 100k / 1M, 1,000 voters; bulk loaded, about 30 s for 1M). Voters sign in with invite
links. The server is ``streamlit run`` with the flags of ``preflab app`` (``--app-root`` serves another
checkout, e.g. main, with its own flags: a before/after on the same machine).

    python -m benchmarks.bench_app --voters 1,5,10,20,30 --stored 1000,100000,1000000 --db sqlite,postgresql
    python -m benchmarks.bench_app --voters 1 --stored 1000 --seconds 20 --db sqlite,postgresql   # a smoke run
    python -m benchmarks.bench_app --voters 0 --leaderboard 1000000 --leaderboard-db postgresql,sqlite

Prints Markdown tables (and writes benchmarks/results/bench_app.md).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

from benchmarks.bench_app_server import ROOT, leaderboard_render, profile_one_vote, rerun_cost, seed
from benchmarks.common import write_table
from tests.harness.chromium import ARGS, CHROMIUM  # the suite's flags

# A fresh round of another item: the pair's data-item, or an older checkout's item marker (--app-root main).
FRESH_ITEM = """(old) => {
  const vote = document.querySelector('.st-key-vote_A button');
  const pair = document.querySelector('.preflab-pair[data-item]'), box = document.querySelector('.st-key-item_marker');
  if (!vote || vote.closest("[data-stale='true']")) return null;
  let id = null;
  if (pair) id = pair.closest("[data-stale='true']") ? null : pair.getAttribute('data-item');
  else if (box && !box.querySelector("[data-stale='true']")) id = box.innerText.replace(/^\\s*Item\\s+/, '').trim();
  return id && id !== old ? id : null;
}"""



FRESH_NEXT = """() => { const b = document.querySelector('.st-key-next button');
  return b && !b.closest("[data-stale='true']") && document.body.textContent.includes('Vote saved'); }"""
# Waits on a page predicate only when the page changed (a MutationObserver; at most one check a frame), not on
# every animation frame as Playwright's wait_for_function does: 30 tabs polling at 60 Hz through long waits are
# browser CPU no real voter spends, and the more the machine lags the more they poll. Resolves with the value.
ON_CHANGE = """([arg, ms]) => new Promise((resolve, reject) => {
  const f = (PREDICATE);
  let obs = null, timer = null;
  const check = () => {
    const v = f(arg);
    if (v) { if (obs) obs.disconnect(); clearTimeout(timer); resolve(v); }
    return v;
  };
  if (check()) return;
  let queued = false;
  obs = new MutationObserver(() => {
    if (!queued) { queued = true; requestAnimationFrame(() => { queued = false; check(); }); }
  });
  obs.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  timer = setTimeout(() => { obs.disconnect(); reject(new Error("timed out")); }, ms);
})"""


POLL_EVERY_FRAME = False  # --poll-every-frame: Playwright's own wait (the harness before; for an A/B)


async def when(page, predicate: str, arg: object = None, timeout_ms: int = 180_000) -> object:  # noqa: ANN001
    """Wait until ``predicate(arg)`` (JavaScript) is truthy in ``page``, checked on each change of the page."""
    if POLL_EVERY_FRAME:
        return await (await page.wait_for_function(predicate, arg=arg, timeout=timeout_ms)).json_value()
    return await page.evaluate(ON_CHANGE.replace("PREDICATE", predicate), [arg, timeout_ms])


def _healthy(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as r:
            return r.read().strip() == b"ok"
    except OSError:
        return False


def start_server(url: str, app_root: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "PREFLAB_DB": url, "PYTHONPATH": str(app_root)}
    flags = json.loads(subprocess.run(
        [sys.executable, "-c", "import json; from preflab_cli.voting_cmds import STREAMLIT_FLAGS as F; "
                               "print(json.dumps(F))"], env=env, capture_output=True, text=True, check=True).stdout)
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(app_root / "app.py"), *flags,
                             "--server.address", "127.0.0.1", "--server.port", str(port)], cwd=app_root, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    end = time.monotonic() + 120
    while not _healthy(base):
        if proc.poll() is not None or time.monotonic() > end:
            raise RuntimeError("the app server did not start")
        time.sleep(0.3)
    return proc


async def voter(browser, base: str, name: str, clock: dict, think: tuple[float, float], out: dict) -> None:  # noqa: ANN001
    ctx = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await ctx.new_page()
    page.set_default_timeout(180_000)
    await page.goto(f"{base}/?invite={name}")  # an invite link (``name`` is the token): signed in on load
    item = await when(page, FRESH_ITEM)
    clock["ready"] += 1
    if clock["ready"] == clock["voters"]:  # the measured window starts when every voter is logged in
        clock["until"] = time.monotonic() + clock["seconds"]
        clock["on_go"]()
        clock["go"].set()
    await clock["go"].wait()
    while time.monotonic() < clock["until"]:
        await asyncio.sleep(random.uniform(*think))
        t0 = time.perf_counter()
        await page.locator(".st-key-vote_A button").click()
        await when(page, FRESH_NEXT)
        out["vote"].append(time.perf_counter() - t0)
        out["confirmed"] += 1
        await asyncio.sleep(random.uniform(0.2, 0.6))
        t0 = time.perf_counter()
        await page.locator(".st-key-next button").click()
        item = await when(page, FRESH_ITEM, item)
        out["next"].append(time.perf_counter() - t0)
    return ctx  # closed by drive after the window's CPU is read (a closed context's renderer takes its CPU time)


async def drive(base: str, tokens: list[str], seconds: float, think: tuple[float, float], on_go, on_end) -> dict:  # noqa: ANN001
    from playwright.async_api import async_playwright

    out = {"vote": [], "next": [], "confirmed": 0}
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        n = len(tokens)
        clock = {"ready": 0, "voters": n, "seconds": seconds, "go": asyncio.Event(), "until": 0.0,
                 "on_go": on_go}
        contexts = await asyncio.gather(*(voter(browser, base, tokens[k], clock, think, out) for k in range(n)))
        on_end()
        for ctx in contexts:
            await ctx.close()
        await browser.close()
    return out


def chromium_cpu() -> dict[tuple[int, str], float]:
    """CPU seconds (user + system) of every Chromium process this process started (through Playwright's
    driver): the browser, its renderers, GPU/compositor and utility processes; by (process id, type)."""
    import psutil

    cpu = {}
    for proc in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "chrom" in proc.name():
                kind = next((a[7:] for a in proc.cmdline() if a.startswith("--type=")), "browser")
                t = proc.cpu_times()
                cpu[proc.pid, kind] = t.user + t.system
    return cpu


def step(url: str, app_root: Path, voters: int, seconds: float, think: tuple[float, float]) -> dict:
    import psutil

    from voting.access import issue_invite
    from voting.store import count_rows, open_store

    engine = open_store(url)
    run = f"{time.time_ns() % 10**9:09d}"  # new voters each step: the demo has 40 items, a voter sees each once
    tokens = [issue_invite(engine, f"bench-{run}-{k}") for k in range(voters)]  # invited voters (no rate limit)
    engine.dispose()
    port = random.randint(20_000, 40_000)
    proc = start_server(url, app_root, port)
    try:
        server = psutil.Process(proc.pid)
        before = count_rows(open_store(url))
        marks: dict = {}
        res = asyncio.run(drive(f"http://127.0.0.1:{port}", tokens, seconds, think,
                                lambda: marks.update(cpu0=server.cpu_times(), b0=chromium_cpu(), t0=time.monotonic()),
                                lambda: marks.update(cpu1=server.cpu_times(), b1=chromium_cpu(), t1=time.monotonic())))
        cpu0, cpu1, wall = marks["cpu0"], marks["cpu1"], marks["t1"] - marks["t0"]
        b0 = marks["b0"]
        by_kind: dict[str, float] = {}
        for key, t in marks["b1"].items():  # a process new in the window: all its CPU
            by_kind[key[1]] = by_kind.get(key[1], 0.0) + t - b0.get(key, 0.0)
        browser_cpu = sum(by_kind.values())
        stored = count_rows(open_store(url)) - before
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    cpu = (cpu1.user + cpu1.system) - (cpu0.user + cpu0.system)
    votes = max(res["confirmed"], 1)
    return {"votes": res["confirmed"], "stored": stored, "per_min": res["confirmed"] / wall * 60,
            "vote": res["vote"], "next": res["next"], "cpu_ms": 1000 * cpu / votes, "cpu_share": cpu / wall,
            "browser_ms": 1000 * browser_cpu / votes, "browser_share": browser_cpu / wall,
            "browser_by_kind": {k: 1000 * v / votes for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])}}


def pct(xs: list[float], q: float) -> str:
    return f"{np.percentile(xs, q):.2f}" if xs else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--voters", default="1,5,10,20,30", help="comma-separated voter counts (0 = none)")
    ap.add_argument("--stored", default="1000,100000,1000000", help="comma-separated stored-vote counts")
    ap.add_argument("--db", default="sqlite", help="stores for the voter table: sqlite,postgresql (a throw-away "
                                                   "PostgreSQL server each)")
    ap.add_argument("--seconds", type=float, default=120, help="duration of each step")
    ap.add_argument("--think", default="2,6", help="think time before a vote, min,max seconds")
    ap.add_argument("--app-root", type=Path, default=ROOT, help="checkout whose app to serve (before/after)")
    ap.add_argument("--leaderboard", type=int, default=0, help="also time the leaderboard with this many votes "
                                                               "in PostgreSQL")
    ap.add_argument("--leaderboard-db", default="postgresql", help="stores for --leaderboard: postgresql,sqlite")
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--rerun-cost", action="store_true", help="only the CPU ms of one vote + Next per stored count "
                                                             "(AppTest, no browser), for --app-root")
    ap.add_argument("--poll-every-frame", action="store_true", help="wait with Playwright's wait_for_function "
                                                                      "(a check every frame), as before")
    args = ap.parse_args()
    global POLL_EVERY_FRAME  # noqa: PLW0603
    POLL_EVERY_FRAME = args.poll_every_frame
    think = tuple(float(x) for x in args.think.split(","))
    voters = [int(v) for v in args.voters.split(",") if int(v) > 0]
    rows, profile, load0 = [], [], os.getloadavg()[0]
    if args.rerun_cost:
        cost = []
        for stored in [int(s) for s in args.stored.split(",")]:
            with tempfile.TemporaryDirectory() as tmp:
                seed(f"sqlite:///{tmp}/bench.db", stored)
                cost.append([f"{stored:,}", f"{rerun_cost(f'sqlite:///{tmp}/bench.db', args.app_root):.0f}"])
        write_table("bench_app_rerun", f"CPU of one vote + Next (two reruns, AppTest) of {args.app_root}",
                    ["stored votes", "CPU ms (median)"], cost)
        return
    from tests.harness.pg_server import temporary_postgres

    steps = [(db, int(s)) for db in args.db.split(",") for s in args.stored.split(",")] if voters else []
    for db, stored in steps:
        with tempfile.TemporaryDirectory() as tmp, (temporary_postgres() if db == "postgresql"
                                                     else contextlib.nullcontext(f"sqlite:///{tmp}/bench.db")) as url:
            t_seed = seed(url, stored)
            print(f"{db}: {stored:,} stored votes seeded in {t_seed:.1f} s", flush=True)
            for n in voters:
                r = step(url, args.app_root, n, args.seconds, think)
                rows.append([db, f"{stored:,}", n, f"{r['per_min']:.0f}",
                             f"{pct(r['vote'], 50)} / {pct(r['vote'], 95)}",
                             f"{pct(r['next'], 50)} / {pct(r['next'], 95)}", f"{r['cpu_ms']:.0f}",
                             f"{r['browser_ms']:.0f}", f"{r['cpu_share']:.0%}", f"{r['browser_share']:.0%}",
                             r["votes"] - r["stored"]])
                print("| " + " | ".join(map(str, rows[-1])) + " |", flush=True)  # each step as it ends
                print("  browser CPU per vote by process type (ms): " + ", ".join(
                    f"{k} {v:.0f}" for k, v in r["browser_by_kind"].items()), flush=True)
            if not args.no_profile and args.app_root == ROOT:  # the last step's (most stored votes) is kept
                profile = profile_one_vote(url)
    text = ""
    if rows:
        text += write_table("bench_app", f"Voting app, real Chromium voters ({args.seconds:.0f} s per step, think "
                            f"{args.think} s, demo dataset, {os.cpu_count()} cores, load {load0:.1f} at the start)",
                            ["store", "stored votes", "voters", "votes/min", "vote → confirmed p50 / p95 (s)",
                             "Next → new pair p50 / p95 (s)", "server CPU per vote (ms)",
                             "browser CPU per vote (ms)", "server CPU", "browser CPU", "lost votes"], rows)
    if profile:
        text += write_table("bench_app_profile", "Where one vote's two reruns spend server CPU (cProfile, own time)",
                            ["package", "ms", "share"], profile)
    if args.leaderboard:
        kinds = tuple(args.leaderboard_db.split(","))
        text += write_table("bench_app_leaderboard", f"Leaderboard page (AppTest, 200 bootstrap resamples, "
                            f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at the start)",
                            ["store", "stored votes", "render", "wall s", "CPU s (app process)", "seeding (s)"],
                            leaderboard_render(args.leaderboard, kinds))
    if rows:  # the voter table with the profile and leaderboard beside it
        (Path(__file__).parent / "results" / "bench_app.md").write_text(text)


if __name__ == "__main__":
    main()
