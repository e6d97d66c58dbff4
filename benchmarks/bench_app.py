"""The voting app under real voters: Chromium through Playwright, one browser context per voter, think time.

Per step (voters x stored votes): votes/min, vote -> confirmed and Next -> new pair p50/p95 (seconds, in the
browser: from the click until the page shows the new state, never a state the old page also had), the app
server's and the browsers' CPU per confirmed vote (ms; CPU times of the server process and of every Chromium
process, over the same window: far less sensitive to a busy machine than the latencies; the browsers' is what
limits many voters on a small machine), and lost votes (confirmed in the browser but not stored). Then a profile of one vote (two reruns) in-process, by package. Optionally the
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
import cProfile
import json
import os
import pstats
import random
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd

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

ROOT = Path(__file__).resolve().parents[1]
# the measured voters click as soon as a pair shows: no minimum time on the pair (its check still runs)
os.environ.setdefault("PREFLAB_MIN_SECONDS", "0")


def _vote_a(at):  # noqa: ANN001, ANN202
    """AppTest's "A is better" button: its key carries the round's id (``vote_A-<id>``; older checkouts: ``vote_A``)."""
    return [b for b in at.button if (b.key or "").split("-")[0] == "vote_A"][0]
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


def synthetic_votes(items: list[str], start: int, stop: int, n_voters: int = 1000) -> pd.DataFrame:
    """Votes ``start`` .. ``stop - 1`` on ``items`` by ``n_voters`` synthetic voters (vote k: voter k mod
    n_voters, its (k // n_voters)-th item, a new round each time the voter has seen every item, so the unique
    key holds), random pairs of the demo's five models, the left side winning every other vote."""
    models = np.array(["atlas-terse", "beacon-verbose", "comet-sloppy", "delta-padded", "ember-balanced"])
    k = np.arange(start, stop)
    rng = np.random.default_rng(start)
    a = rng.integers(0, 5, len(k))
    b = (a + rng.integers(1, 5, len(k))) % 5
    turn = k // n_voters
    left, right = models[a], models[b]
    return pd.DataFrame({
        "voter": np.char.add("bulk-", (k % n_voters).astype(str)), "dataset": "demo",
        "item_id": np.asarray(items, dtype=object)[turn % len(items)], "round": turn // len(items) + 1,
        "model_left": left, "model_right": right, "shown_order": np.where(left < right, "xy", "yx"),
        "outcome": "win", "winner_model": np.where(k % 2 == 1, left, right), "voted_at": 1.7e9 + k,
        "source": "bench"})


def seed(url: str, stored: int) -> float:
    """The demo dataset and its votes, then synthetic votes up to ``stored`` (:func:`synthetic_votes`, bulk
    loaded: :func:`voting.bulk.bulk_insert_votes`); returns the seconds it took."""
    from voting.bulk import bulk_insert_votes
    from voting.store import count_rows, open_store
    from voting.votes import seed_demo

    t0 = time.perf_counter()
    engine = open_store(url)
    seed_demo(engine, ROOT / "data" / "demo" / "items.jsonl", ROOT / "data" / "demo" / "battles.jsonl")
    have = count_rows(engine)
    with engine.connect() as conn:
        items = [r[0] for r in conn.exec_driver_sql("SELECT item_id FROM items ORDER BY item_id")]
    if stored > have:
        bulk_insert_votes(engine, synthetic_votes(items, have, stored))
    engine.dispose()
    return time.perf_counter() - t0


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


def _package(file: str) -> str:
    """The top-level package of a profiled function's file ("built-ins" for C functions)."""
    if file == "~":
        return "built-ins (C: sqlite3, I/O, locks)"
    path = Path(file)
    for marker in ("site-packages", "python3.11", "python3.12"):
        if marker in path.parts:
            rest = path.parts[path.parts.index(marker) + 1:]
            return f"stdlib {rest[0].removesuffix('.py')}" if marker != "site-packages" else rest[0]
    return path.relative_to(ROOT).parts[0] if path.is_relative_to(ROOT) else path.name


def profile_one_vote(url: str) -> list[list[object]]:
    """cProfile of one vote and Next (two reruns) through AppTest, in this process: own time by package."""
    from streamlit.testing.v1 import AppTest

    os.environ["PREFLAB_DB"] = url
    from voting.access import issue_invite
    from voting.store import open_store

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.text_input(key="invite_code").input(issue_invite(open_store(url), "profiler"))
    at.button[0].click().run()
    _vote_a(at).click().run()  # warm: caches filled
    at.button(key="next").click().run()
    import voting.app

    voting.app.warm_imports().join()  # the app's background import (JAX) is done: a server's steady state
    prof = cProfile.Profile()

    def on_thread(*_: object) -> None:  # AppTest runs the page script in its own thread: profile that one only
        sys.setprofile(None)  # (not a thread the app or a library starts meanwhile)
        if threading.current_thread().name == "ScriptRunner.scriptThread":
            prof.enable()

    threading.setprofile(on_thread)
    _vote_a(at).click().run()
    at.button(key="next").click().run()
    threading.setprofile(None)
    prof.create_stats()
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    by: dict[str, float] = {}
    for (file, _, _), (_, _, tottime, _, _) in stats.items():
        key = _package(file)
        by[key] = by.get(key, 0.0) + tottime
    total = sum(by.values())
    top = [[k, f"{1000 * v:.1f}", f"{v / total:.0%}"] for k, v in sorted(by.items(), key=lambda kv: -kv[1])[:8]]
    return [*top, ["all (the two reruns)", f"{1000 * total:.1f}", "100%"]]


RERUN_SCRIPT = """
import os, sys, time, statistics
from streamlit.testing.v1 import AppTest
os.environ["PREFLAB_DB"] = sys.argv[1]
at = AppTest.from_file(os.path.join(sys.argv[2], "app.py"), default_timeout=300).run()
try:  # invite sessions (an older checkout: a free-text name)
    from voting.access import issue_invite
    from voting.store import open_store
    at.text_input(key="invite_code").input(issue_invite(open_store(sys.argv[1]), "rerun-timer"))
except ImportError:
    at.text_input[0].input("rerun-timer")
at.button[0].click().run()
times = []
for k in range(int(sys.argv[3]) + 1):
    t0 = time.process_time()
    [b for b in at.button if (b.key or "").split("-")[0] == "vote_A"][0].click().run(); at.button(key="next").click().run()
    times.append(time.process_time() - t0)
print(1000 * statistics.median(times[1:]))
"""


def rerun_cost(url: str, app_root: Path, votes: int = 8) -> float:
    """Median CPU ms of one vote + Next (two reruns, AppTest in a fresh process) of ``app_root``'s app:
    the per-click cost without browsers, comparable across checkouts (before/after)."""
    env = {**os.environ, "PYTHONPATH": str(app_root)}
    out = subprocess.run([sys.executable, "-c", RERUN_SCRIPT, url, str(app_root), str(votes)], env=env,
                         capture_output=True, text=True, check=True, cwd=app_root)
    return float(out.stdout.strip().splitlines()[-1])


def _date_window(at) -> None:  # noqa: ANN001 - one day: the first
    at.multiselect(key="lb_voters").set_value([])
    first = at.date_input(key="lb_dates").value[0]
    at.date_input(key="lb_dates").set_value((first, first)).run()


#: What the leaderboard benchmark does, one after another: (label, action on the page).
LEADERBOARD_STEPS = (
    ("first render (fresh process, start-up import warm-up done: JIT compile, fit)",
     lambda at, _: at.switch_page("voting/pages/leaderboard.py").run()),
    ("again (cached fit)", lambda at, _: at.switch_page("voting/pages/leaderboard.py").run()),
    ("after a new vote (refit)", lambda at, _: at.run()),
    ("category filter", lambda at, _: at.multiselect(key="lb_categories").set_value(
        [at.multiselect(key="lb_categories").options[0]]).run()),
    ("+ one voter", lambda at, voter: at.multiselect(key="lb_voters").set_value([voter]).run()),
    ("- voter, + one-day window", lambda at, _: _date_window(at)),
    ("+ exclude a model", lambda at, _: at.multiselect(key="lb_exclude").set_value(["comet-sloppy"]).run()),
)


def leaderboard_render(n_votes: int, kinds: tuple[str, ...] = ("postgresql",)) -> list[list[object]]:
    """The leaderboard page (AppTest, this process) over ``n_votes`` stored votes: the first render in a fresh
    process (imports, JIT compile, fit), again (cached fit), after a new vote (refit), and with each filter
    (a new fit each); wall and this process's CPU seconds (the database server's CPU is not in it)."""
    from streamlit.testing.v1 import AppTest

    from tests.harness.pg_server import temporary_postgres
    from voting.store import Vote, open_store, record_vote, vote_summary

    rows = []
    for kind in kinds:
        with tempfile.TemporaryDirectory() as tmp, (temporary_postgres() if kind == "postgresql"
                                                     else contextlib.nullcontext(f"sqlite:///{tmp}/lb.db")) as url:
            t_seed = seed(url, n_votes)
            os.environ["PREFLAB_DB"] = url
            engine = open_store(url)
            voter = vote_summary(engine)["voters"][-1]
            at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600).run()
            import voting.app

            voting.app.warm_imports().join()  # as when an admin opens the leaderboard after the server started
            for label, act in LEADERBOARD_STEPS:
                if label.startswith("after a new vote"):
                    record_vote(engine, Vote("lb-bench", "demo", "demo-001", "atlas-terse", "comet-sloppy", "A"))
                t0, c0 = time.perf_counter(), time.process_time()
                act(at, voter)
                assert not at.exception, at.exception
                rows.append([kind, f"{n_votes:,}", label, f"{time.perf_counter() - t0:.2f}",
                             f"{time.process_time() - c0:.2f}", f"{t_seed:.0f}"])
            engine.dispose()
    return rows


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
                rows.append([db, f"{stored:,}", n, f"{r['per_min']:.0f}", f"{pct(r['vote'], 50)} / {pct(r['vote'], 95)}",
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
