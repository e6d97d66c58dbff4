"""A vote-writing process for the storage stress tests and ``benchmarks/bench_votes.py``.

``python -m tests.harness.vote_writer URL VOTER N [--items M] [--sleep S]`` casts N votes on items
``s00000``.. (dataset ``stress``), one transaction each, and prints each committed vote's id and
write latency (seconds) as ``id latency`` lines, flushed, so a parent that kills it knows what committed;
``ready`` once the store is open, ``start``/``end`` wall-clock times around the writes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from voting.store import Vote, open_store, record_vote

MODELS = ("model-x", "model-y")


def stress_items(n: int):  # noqa: ANN201
    """An :class:`voting.items.ItemSet` of ``n`` items answered by two models (dataset for the writers)."""
    import pandas as pd

    from voting.items import load_items

    rows = [{"item_id": f"s{i:05d}", "prompt": f"p{i}", "model": m, "answer": f"{m} on {i}"}
            for i in range(n) for m in MODELS]
    return load_items(pd.DataFrame(rows))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("voter")
    ap.add_argument("n", type=int)
    ap.add_argument("--sleep", type=float, default=0.0)
    ap.add_argument("--go", help="wait for this file to exist before writing (a start barrier)")
    args = ap.parse_args(argv)
    engine = open_store(args.url)
    print("ready", flush=True)
    while args.go and not os.path.exists(args.go):
        time.sleep(0.002)
    print(f"start {time.time():.6f}", flush=True)
    for i in range(args.n):
        left, right = MODELS if i % 2 else MODELS[::-1]
        vote = Vote(args.voter, "stress", f"s{i:05d}", left, right, "A" if i % 3 else "tie", time.time())
        t0 = time.perf_counter()
        vote_id = record_vote(engine, vote)
        sys.stdout.write(f"{vote_id} {time.perf_counter() - t0:.6f}\n")
        sys.stdout.flush()
        if args.sleep:
            time.sleep(args.sleep)
    print(f"end {time.time():.6f}", flush=True)
    engine.dispose()


if __name__ == "__main__":
    main()
