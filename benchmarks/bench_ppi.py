"""PPI++ leaderboard benchmark: 100 models, 1,000,000 judge verdicts, 20,000 human votes (10,000 items x 2).

Times the statistics from item cells: the tuned PPI++ fit with sandwich intervals, and 1,000 stratified
bootstrap refits (best of several runs; the machine is shared). Item building from frames
(:func:`arena.ppi_board.build_items`) is timed separately. Run: ``python -m benchmarks.bench_ppi``.
Target (issue 15): fit + sandwich + 1,000 bootstrap refits <= 5 s on 2 cores.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pandas as pd

from benchmarks.common import best_of, write_table


def make_frames(k: int = 100, n_judge: int = 1_000_000, n_items: int = 10_000, votes: int = 2, seed: int = 0):
    """Human battles (``n_items`` items x ``votes``) and judge rows (one per judged item, hard labels)."""
    rng = np.random.default_rng(seed)
    s = rng.normal(0, 1, k)
    a = rng.integers(0, k, n_judge)
    b = (a + rng.integers(1, k, n_judge)) % k
    e = rng.normal(0, 1.5, n_judge)
    pj = 1 / (1 + np.exp(-(s[a] - s[b] + e + 0.3)))
    judge_win = np.where(rng.random(n_judge) < pj, "model_a", "model_b")
    names = np.array([f"model-{i:03d}" for i in range(k)], dtype=object)
    qid = np.arange(n_judge).astype(str)
    judge = pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": judge_win, "question_id": qid})
    h = np.repeat(np.arange(n_items), votes)
    ph = 1 / (1 + np.exp(-(s[a[h]] - s[b[h]] + e[h])))
    human = pd.DataFrame({"model_a": names[a[h]], "model_b": names[b[h]],
                          "winner": np.where(rng.random(h.size) < ph, "model_a", "model_b"), "question_id": qid[h]})
    return human, judge


def main() -> None:
    from arena import ppi, ppi_board
    from arena.data import load_battles

    human, judge = make_frames()
    hb = load_battles(human)
    t0 = time.perf_counter()
    items, _ = ppi_board.build_items(hb, judge)
    t_build = time.perf_counter() - t0

    def stats():
        fit = ppi.fit_ppi(items)
        ppi.bootstrap_ppi(items, fit.x, fit.lam, n_bootstrap=1000, seed=0)
        return fit

    fit = stats()  # compile
    t_fit = best_of(lambda: ppi.fit_ppi(items), 3)
    t_all = best_of(stats, 3)
    load = os.getloadavg()[0]
    write_table("bench_ppi", "PPI++ leaderboard: 100 models, 1M judge verdicts, 20k human votes", [
        "step", "seconds (best of 3)"], [
        ["build item cells from frames (once)", f"{t_build:.2f}"],
        ["PPI++ fit (tuned lambda) + sandwich", f"{t_fit:.2f}"],
        ["fit + sandwich + 1,000 bootstrap refits", f"{t_all:.2f}"]],
        notes=f"lambda {fit.lam:.3f}; {items.n_labelled:,.0f} labelled and {items.n_unlabelled:,.0f} unlabelled "
              f"items in {len(items.l_mult):,} + {len(items.u_mult):,} cells (padded); load average {load:.1f} "
              f"on {os.cpu_count()} cores. Target <= 5 s.")


if __name__ == "__main__":
    main()
