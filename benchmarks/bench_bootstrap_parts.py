"""CPU seconds per part of bench_rank's many-model case: 1M battles, ``--models`` models, sandwich +
``--replicates`` bootstrap refits, each part run alone (serially) with the library's own calls, then the whole
``rank_battles(df, ci="both", n_bootstrap=1000, min_battles=0)`` that bench_rank times.

Parts: the full-data fit (Newton), the conditioned Hessian, the sandwich, the Poisson/multinomial draws (int16),
the signed battle matrices (host) and the chord-Newton refits (XLA, chunks of the production size). CPU time
counts every thread (XLA uses both cores); on a shared machine it is steadier than wall time (load printed).

    python -m benchmarks.bench_bootstrap_parts --models 1000
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import numpy as np

from benchmarks.bench_rank import make_w1


def _clock() -> tuple[float, float]:
    return time.process_time(), time.perf_counter()


def _since(t0: tuple[float, float]) -> tuple[float, float]:
    cpu, wall = _clock()
    return cpu - t0[0], wall - t0[1]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", type=int, default=1000)
    p.add_argument("--replicates", type=int, default=300, help="replicates for the per-part timings")
    p.add_argument("--runs", type=int, default=2, help="warm end-to-end runs")
    args = p.parse_args(argv)

    jax.config.update("jax_enable_x64", True)  # (this process is ours: its own JAX code in float64 too)
    from arena.bootstrap import dense as refit
    from arena.bootstrap import refits as bs
    from arena.bootstrap import weights as wt
    from arena.bootstrap.poisson import PoissonTable
    from arena.bt import likelihood as bt
    from arena.io.battles import aggregate, load_battles
    from arena.leaderboard import rank_battles
    from arena.leaderboard_options import IntervalOptions

    k = args.models
    df = make_w1(k=k)
    print(f"{k} models, load average {os.getloadavg()[0]:.1f}")
    data = bt.pair_data(aggregate(load_battles(df)))
    x0 = bt.initial_x(data, k, "half")
    parts = {
        "fit": lambda: bt.fit(x0, data).x,
        "conditioned Hessian": lambda: bt.conditioned_hessian(x, data),
        "sandwich": lambda: bt.sandwich_covariance(x, data),
    }
    x = np.asarray(bt.fit(x0, data).x)
    for name, fn in parts.items():
        jax.block_until_ready(fn())  # compiled
        t0 = _clock()
        jax.block_until_ready(fn())
        print(f"{name:<24} cpu {_since(t0)[0]:6.2f} s")
    h_inv = np.linalg.inv(np.asarray(bt.conditioned_hessian(x, data)))
    flat = np.asarray(data.counts).ravel()
    live = np.flatnonzero(flat)
    layout = refit.dense_layout(data, live, k)
    table = PoissonTable(flat[live])
    n_rep = args.replicates // wt.BLOCK * wt.BLOCK
    t0 = _clock()
    draws = [wt.block_weights(flat[live], 0, b, wt.BLOCK, "multinomial", table, integer=True)
             for b in range(n_rep // wt.BLOCK)]
    print(f"{'draws':<24} cpu {_since(t0)[0] / n_rep * 1e3:6.2f} ms a replicate")
    t0 = _clock()
    mats = [refit.signed_battles(layout, w) for w in draws]
    print(f"{'signed battles':<24} cpu {_since(t0)[0] / n_rep * 1e3:6.2f} ms a replicate ({mats[0][0].dtype})")
    per = max(1, bs.chunk_size(live.size, k, None, dense=True) // wt.BLOCK)
    chunks = [(np.concatenate([m for m, _ in mats[i:i + per]]), np.concatenate([s for _, s in mats[i:i + per]]))
              for i in range(0, len(mats) - per + 1, per)]
    xh, hi = jax.device_put(x), jax.device_put(h_inv)
    jax.block_until_ready(refit.refit_signed_chunk(*chunks[0], xh, hi))  # compiled
    t0 = _clock()
    for m, s in chunks:
        jax.block_until_ready(refit.refit_signed_chunk(m, s, xh, hi))
    cpu, wall = _since(t0)
    n_done = len(chunks) * per * wt.BLOCK
    print(f"{'refits (XLA)':<24} cpu {cpu / n_done * 1e3:6.2f} ms a replicate (wall {wall / n_done * 1e3:.2f}; "
          f"chunks of {per * wt.BLOCK})")
    rank_battles(df, IntervalOptions(ci="both", n_bootstrap=1000), min_battles=0)  # compiled
    for _ in range(args.runs):
        t0 = _clock()
        rank_battles(df, IntervalOptions(ci="both", n_bootstrap=1000), min_battles=0)
        cpu, wall = _since(t0)
        print(f"{'end to end, 1000 refits':<24} cpu {cpu:6.2f} s, wall {wall:.2f} s "
              f"(load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
