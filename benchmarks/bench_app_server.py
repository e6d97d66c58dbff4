"""The app benchmark's server-side parts: where one vote's server time goes (cProfile by package), what a rerun
costs (AppTest), and the leaderboard page's render time at growing vote counts. :mod:`benchmarks.bench_app`
runs them and prints their tables."""

from __future__ import annotations

import contextlib
import cProfile
import os
import pstats
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
# the measured voters click as soon as a pair shows: no minimum time on the pair (its check still runs)
os.environ.setdefault("PREFLAB_MIN_SECONDS", "0")


def _vote_a(at):  # noqa: ANN001, ANN202
    """AppTest's "A is better" button: its key carries the round's id (``vote_A-<id>``; older checkouts: ``vote_A``)."""
    return [b for b in at.button if (b.key or "").split("-")[0] == "vote_A"][0]


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
    [b for b in at.button if (b.key or "").split("-")[0] == "vote_A"][0].click().run()
    at.button(key="next").click().run()
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
