"""The LC leaderboard: an LC table in, raw and length-controlled win rates with bootstrap intervals out.

Reads a validated LC table (:mod:`arena.lc.data`), fits the GLM (:mod:`arena.lc.fit`) and its bootstrap
(:mod:`arena.lc.bootstrap`), and applies AlpacaEval's divergence rule (Dubois et al. 2024).
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from arena.jax_setup import float64
from arena.lc.bootstrap import LCStart, bootstrap_lc, cold_start, fit_lc_jit, hyper_from_penalty
from arena.lc.data import table_to_grid
from arena.lc.fit import LCData, LCPenalty


def is_extreme_change(raw: np.ndarray, lc: np.ndarray, abs_diff: float = 10.0, rel_diff: float = 4.0) -> np.ndarray:
    """AlpacaEval's divergence rule (in percent): LC below ``min(raw - raw/rel, raw - abs)`` or above
    ``max(raw + (100 - raw)/rel, raw + abs)`` signals a likely GLM failure."""
    raw, lc = np.asarray(raw, float), np.asarray(lc, float)
    too_small = lc < np.minimum(raw - raw / rel_diff, raw - abs_diff)
    too_large = lc > np.maximum(raw + (100 - raw) / rel_diff, raw + abs_diff)
    return too_small | too_large


class LCDivergenceWarning(UserWarning):
    """The LC win rate moved far from the raw one (AlpacaEval's rule): the GLM may have failed for that model."""


@float64
def lc_leaderboard(table: pd.DataFrame, *, n_bootstrap: int = 1000, level: float = 0.95, seed: int = 0,
                   difficulty: pd.Series | None = None, gamed: pd.DataFrame | None = None,
                   penalty: LCPenalty = LCPenalty(), reference: str | None = None,
                   warn: bool = True) -> pd.DataFrame:
    """Raw and length-controlled win rates (percent) per model from a validated LC table (see :mod:`arena.lc.data`).

    ``difficulty`` (instruction -> gamma) replaces the joint estimate; ``gamed`` is an LC table of baseline
    rewrites judged against the baseline (AlpacaEval's regulariser). ``reference`` names a model to
    re-reference the LC win rate to (AlpacaEval's ``predict_winrate``: ``mean sigmoid(dtheta + dpsi * gamma)``),
    reported as ``lc_vs_reference``. Bootstrap replicates refit everything (:mod:`arena.lc.bootstrap`).
    Columns: ``model, raw_win_rate, raw_se, lc_win_rate, lc_se, lc_lower, lc_upper, avg_length, n,
    length_coef, difficulty_coef, extreme_change``; sorted by LC win rate.
    """
    models, instructions, arr = table_to_grid(table)
    data = LCData(*(jnp.asarray(arr[k]) for k in ("y", "model_len", "baseline_len", "mask")))
    given = None
    if difficulty is not None:
        missing = [i for i in instructions if i not in difficulty.index]
        if missing:
            raise ValueError(f"difficulty table lacks {len(missing)} instruction(s), e.g. {missing[0][:60]!r}; "
                             "supply gamma for every instruction or let it be estimated")
        given = jnp.asarray(difficulty.reindex(instructions).to_numpy(float))
    gamed_data = _gamed_data(gamed, instructions)
    if gamed_data.y.shape[0]:  # the real rows replace their Gaussian stand-in
        penalty = replace(penalty, length=0.0, difficulty=0.0)
    hyper = hyper_from_penalty(penalty)
    fixed = given is not None
    fit = fit_lc_jit(data, gamed_data, jnp.ones(len(instructions)), hyper,
                     cold_start(len(models), len(instructions), hyper, given), fixed)
    gamma = fit["gamma"]
    if float(jnp.max(fit["grad_norm"])) > 1e-5 or not bool(fit["joint_ok"]):
        warnings.warn(f"LC GLM did not converge (max |gradient| {float(jnp.max(fit['grad_norm'])):.2e}, "
                      f"joint fit converged: {bool(fit['joint_ok'])})", RuntimeWarning, stacklevel=3)
    mask = np.asarray(data.mask)
    y, n = np.asarray(data.y), mask.sum(axis=1)
    raw_var = ((y - np.asarray(fit["raw"])[:, None]) ** 2 * mask).sum(axis=1) / (n - 1)
    out = pd.DataFrame({
        "model": models,
        "raw_win_rate": 100 * np.asarray(fit["raw"]),
        "raw_se": 100 * np.sqrt(raw_var / n),  # AlpacaEval's standard_error: sem of the soft preferences
        "lc_win_rate": 100 * np.asarray(fit["lc"]),
        "avg_length": (arr["model_len"] * arr["mask"]).sum(axis=1) / n,
        "n": n.astype(int),
        "length_coef": np.asarray(fit["params"][:, 1]),
        "difficulty_coef": np.asarray(fit["params"][:, 2]),
    })
    n_fallback = n_unconverged = 0
    if n_bootstrap > 0:
        start = LCStart(fit["joint"], gamma, fit["params"])
        boot = bootstrap_lc(data, gamed_data, hyper, start, n_bootstrap, seed, fixed_gamma=fixed)
        n_fallback, n_unconverged = boot["n_fallback"], boot["n_unconverged"]
        lc_boot = 100 * boot["lc"][boot["converged"]]
        if n_unconverged and warn:
            warnings.warn(f"{n_unconverged} of {n_bootstrap} LC bootstrap refits did not converge and are left "
                          "out of the SE and interval", RuntimeWarning, stacklevel=3)
        alpha = (1 - level) / 2
        out["lc_se"] = lc_boot.std(axis=0, ddof=1)
        out["lc_lower"], out["lc_upper"] = np.quantile(lc_boot, [alpha, 1 - alpha], axis=0)
    else:
        out["lc_se"] = out["lc_lower"] = out["lc_upper"] = np.nan
    if reference is not None:
        if reference not in models:
            raise ValueError(f"reference model '{reference}' is not among the models {models}")
        ref = fit["params"][models.index(reference)]
        out["lc_vs_reference"] = [100 * float(jnp.mean(jax.nn.sigmoid(p[0] - ref[0] + (p[2] - ref[2]) * gamma)))
                                  for p in fit["params"]]
    out["extreme_change"] = is_extreme_change(out["raw_win_rate"], out["lc_win_rate"])
    if warn and out["extreme_change"].any():
        bad = out[out["extreme_change"]]
        warnings.warn("LC win rate is very different from the raw one (a sign of GLM failure) for: "
                      + ", ".join(f"{r.model} ({r.lc_win_rate:.1f}% vs raw {r.raw_win_rate:.1f}%)"
                                  for r in bad.itertuples()), LCDivergenceWarning, stacklevel=3)
    cols = ["model", "raw_win_rate", "raw_se", "lc_win_rate", "lc_se", "lc_lower", "lc_upper", "avg_length", "n",
            "length_coef", "difficulty_coef", "extreme_change"] + (["lc_vs_reference"] if reference else [])
    out = out[cols].sort_values("lc_win_rate", ascending=False, ignore_index=True)
    out.attrs.update(baseline=str(table["baseline"].iloc[0]), n_instructions=len(instructions),
                     length_prior_centre=float(fit["beta0"]),
                     joint_length_coefs=dict(zip(models, np.asarray(fit["joint_beta"]).tolist(), strict=True)),
                     level=level, n_bootstrap=n_bootstrap, bootstrap_fallbacks=n_fallback,
                     bootstrap_unconverged=n_unconverged,
                     difficulty=pd.Series(np.asarray(gamma), index=instructions, name="difficulty"))
    return out


def _gamed_data(gamed: pd.DataFrame | None, instructions: list[str]) -> LCData:
    """Gamed-baseline rows on the main instruction axis ((variants, instructions); empty when none)."""
    if gamed is None or gamed.empty:
        z = jnp.zeros((0, len(instructions)))
        return LCData(z, z, z, z)
    variants, g_instr, arr = table_to_grid(gamed[gamed["instruction"].isin(instructions)])
    pos = np.array([instructions.index(i) for i in g_instr])
    full = {k: np.zeros((len(variants), len(instructions))) for k in arr}
    for k, v in arr.items():
        full[k][:, pos] = v
    return LCData(*(jnp.asarray(full[k]) for k in ("y", "model_len", "baseline_len", "mask")))
