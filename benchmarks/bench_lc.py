"""Benchmark: length-controlled win rates on 805 instructions x 60 synthetic models, 1000 bootstrap refits.

Also one GLM fit against scikit-learn's ``LogisticRegression`` on the same design (soft labels as two
weighted rows, L2 penalty, no intercept), and all 60 per-model fits (one vmapped call vs a loop of sklearn).
Run: ``.venv/bin/python -m benchmarks.bench_lc``; writes ``benchmarks/results/bench_lc.md``.
"""

from __future__ import annotations

import os
import time

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from scipy.special import expit
from sklearn.linear_model import LogisticRegression

from arena.lc.bootstrap import LCStart, bootstrap_lc, cold_start, fit_lc_jit, hyper_from_penalty
from arena.lc.data import table_from_frame, table_to_grid
from arena.lc.fit import (
    LCData,
    LCGrid,
    LCPenalty,
    Prior,
    fit_all_models,
    fit_difficulty,
    fit_model_glm,
    lc_leaderboard,
    no_gamed_rows,
    tanh_std_delta_len,
)
from benchmarks.common import best_of, write_table

N_INSTR, N_MODELS, N_BOOT = 805, 60, 1000


def synthetic_table(seed: int = 0) -> pd.DataFrame:
    """805 x 60 rows from the LC GLM (soft labels = the true probabilities)."""
    rng = np.random.default_rng(seed)
    gamma = rng.normal(0, 0.8, N_INSTR)
    base = rng.lognormal(7.5, 0.5, N_INSTR)
    frames = []
    for m in range(N_MODELS):
        out = base * np.exp(rng.normal(0, 0.5) + rng.normal(0, 0.4, N_INSTR))
        d = out - base
        p = expit(rng.normal(-1.5, 1.0) + 1.5 * np.tanh(d / d.std(ddof=1)) + gamma + rng.normal(0, 0.5, N_INSTR))
        frames.append(pd.DataFrame({"instruction": [f"q{i}" for i in range(N_INSTR)], "model": f"m{m:02d}",
                                    "preference": p, "output_length": out, "baseline_length": base}))
    return table_from_frame(pd.concat(frames, ignore_index=True), "synthetic")


def main() -> None:
    jax.config.update("jax_enable_x64", True)  # (this process is ours: its own JAX code in float64 too)
    table = synthetic_table()
    _, _, arr = table_to_grid(table)
    mask = jnp.asarray(arr["mask"])
    grid = LCGrid(jnp.asarray(arr["y"]), tanh_std_delta_len(jnp.asarray(arr["model_len"]),
                                                             jnp.asarray(arr["baseline_len"]), mask), mask)
    pen = LCPenalty()
    gamma = fit_difficulty(grid, pen.instruction).gamma
    prior = Prior(jnp.array([0.0, pen.length_centre, 1.0]), jnp.array([pen.theta, pen.length, pen.difficulty]))
    gamed = no_gamed_rows(N_INSTR)
    data = LCData(*(jnp.asarray(arr[k]) for k in ("y", "model_len", "baseline_len", "mask")))
    no_gamed = LCData(*(jnp.zeros((0, N_INSTR)),) * 4)
    hyper = hyper_from_penalty(pen)
    full = fit_lc_jit(data, no_gamed, jnp.ones(N_INSTR), hyper, cold_start(N_MODELS, N_INSTR, hyper))
    boot_start = LCStart(full["joint"], full["gamma"], full["params"])
    start = jnp.tile(prior.centre, (N_MODELS, 1))
    fit_all = jax.jit(fit_all_models)
    fit_all(grid, mask, gamma, gamed, 0.2, prior, start)

    t_cold0 = time.perf_counter()
    lc_leaderboard(table, n_bootstrap=N_BOOT, warn=False)
    t_first = time.perf_counter() - t_cold0
    t_total = best_of(lambda: lc_leaderboard(table, n_bootstrap=N_BOOT, warn=False), repeat=2)
    t_diff = best_of(lambda: jax.block_until_ready(fit_difficulty(grid, pen.instruction)))
    t_fit = best_of(lambda: jax.block_until_ready(fit_all(grid, mask, gamma, gamed, 0.2, prior, start)))
    t_boot = best_of(lambda: jax.block_until_ready(
        bootstrap_lc(data, no_gamed, hyper, boot_start, N_BOOT, seed=1)["lc"]), repeat=2)

    # One model, ridge towards 0 on (theta, beta, psi) == sklearn L2 with C = 1/(2*lambda).
    lam = 1.0
    y, t, g = grid.y[0], grid.tanh_len[0], gamma
    p0 = Prior(jnp.zeros(3), jnp.full(3, lam))
    one = jax.jit(lambda: fit_model_glm(y, t, jnp.ones(N_INSTR), g, gamed, 0.0, p0, jnp.zeros(3)))
    ours = np.asarray(one()[0])
    t_one = best_of(lambda: jax.block_until_ready(one()), repeat=20)
    x = np.column_stack([np.ones(N_INSTR), np.asarray(t), np.asarray(g)])
    xx, yy = np.vstack([x, x]), np.r_[np.ones(N_INSTR), np.zeros(N_INSTR)]
    ww = np.r_[np.asarray(y), 1 - np.asarray(y)]

    def sk_fit(w=ww):
        return LogisticRegression(C=1 / (2 * lam), fit_intercept=False, tol=1e-10, max_iter=1000).fit(
            xx, yy, sample_weight=w)

    sk = sk_fit()
    t_sk = best_of(sk_fit, repeat=20)
    diff = float(np.max(np.abs(ours - sk.coef_[0])))

    def sk_all():
        for m in range(N_MODELS):
            ym = np.asarray(grid.y[m])
            xm = np.column_stack([np.ones(N_INSTR), np.asarray(grid.tanh_len[m]), np.asarray(g)])
            LogisticRegression(C=1 / (2 * lam), fit_intercept=False, tol=1e-10, max_iter=1000).fit(
                np.vstack([xm, xm]), yy, sample_weight=np.r_[ym, 1 - ym])

    t_sk_all = best_of(sk_all, repeat=2)
    p0_all = Prior(jnp.zeros(3), jnp.full(3, lam))
    t_ours_all = best_of(lambda: jax.block_until_ready(
        fit_all(grid, mask, gamma, gamed, 0.0, p0_all, jnp.zeros((N_MODELS, 3)))["lc"]), repeat=5)

    cpu = os.cpu_count()
    load = os.getloadavg()[0]
    rows = [
        ["LC leaderboard end to end (joint difficulty + 60 fits + 1000 bootstrap refits), warm", f"{t_total:.2f}",
         "", "target <= 10 s"],
        ["same, first call in a fresh process (includes XLA compile / cache load)", f"{t_first:.2f}", "", ""],
        ["joint instruction-difficulty fit (Newton + Schur complement, 925 parameters)", f"{t_diff:.3f}", "", ""],
        ["60 per-model GLM fits (one vmapped Newton call)", f"{t_fit:.4f}", "", ""],
        [f"{N_BOOT} bootstrap refits of everything (joint fit + 60 GLMs; vmapped, chunks of 20)", f"{t_boot:.2f}", "", ""],
        ["one GLM fit (805 soft-label rows): preflab Newton (jit)", f"{t_one * 1e3:.2f} ms", "1.0x", ""],
        ["one GLM fit: scikit-learn LogisticRegression (lbfgs, 1610 weighted rows)", f"{t_sk * 1e3:.2f} ms",
         f"{t_sk / t_one:.1f}x slower", f"max coef diff {diff:.1e}"],
        ["60 fits: preflab (one vmapped call)", f"{t_ours_all * 1e3:.1f} ms", "1.0x", ""],
        ["60 fits: scikit-learn loop", f"{t_sk_all * 1e3:.1f} ms", f"{t_sk_all / t_ours_all:.1f}x slower", ""],
    ]
    write_table("bench_lc", f"LC win rates: {N_INSTR} instructions x {N_MODELS} models, {N_BOOT} bootstrap refits",
                ["step", "time (s unless noted)", "ratio", "note"], rows,
                notes=f"Machine: {cpu} CPU cores shared with other jobs (load average {load:.1f} at the end), "
                      f"JAX {jax.__version__} on CPU, float64. Best of 2-20 runs. Bootstrap refits warm-start "
                      "from the full-data fit: the joint difficulty fit (length sd, gamma, per-model slopes) is refitted "
                      "in every replicate (8 chord-Newton steps), then 4 Newton steps per model (damped Newton and 25 "
                      "steps if a gradient stays large).")


if __name__ == "__main__":
    main()
