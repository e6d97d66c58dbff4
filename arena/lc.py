"""Length-controlled (LC) win rates: the AlpacaEval GLM (Dubois et al. 2024, arXiv:2404.04475) in JAX.

For model ``m`` judged against a fixed baseline on instruction ``i`` with soft preference ``y`` in [0, 1]
(probability that the model's output is preferred), the GLM is

    logit P(model preferred) = theta_m + beta_m * tanh(s_mi) + psi_m * gamma_i

with ``s_mi`` the character-length difference (model minus baseline) divided by its standard deviation over
model ``m``'s rows, and ``gamma_i`` an instruction-difficulty estimated jointly over all models (or supplied).
The LC win rate is the mean predicted preference with the length term set to zero.

Two fitting stages, both exact cross-entropy on probabilities (no duplicated rows):

1. :func:`fit_difficulty` — one joint fit over all models: per-model ``theta``, one pooled length slope and
   a ridge-penalised ``gamma`` per instruction.
2. :func:`fit_model_glm` — per model (vmapped), a Newton fit of ``(theta, beta, psi)``. AlpacaEval keeps
   this fit sane with a penalty and with "gamed" verbose/concise rewrites of the baseline (weight 0.2 split
   over the variants) that share ``beta`` and ``psi`` but have no model term. We do the same when gamed
   rows are given; without them the ridge pulls ``beta`` to the pooled judge length slope and ``psi`` to 1
   (the other models stand in for the gamed baseline as the anchor of the length effect).

Arrays are (models, instructions) grids with a 0/1 ``mask`` for missing rows; bootstrap replicates are
multinomial instruction counts that multiply the mask, so every refit is one vmapped call.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

import arena._jax  # noqa: F401  (x64 and the compilation cache)
from arena.lc_data import table_to_grid

Array = jax.Array


@dataclass(frozen=True)
class LCPenalty:
    """Regularisation of the LC GLM (ridge strengths; the loss is a sum over rows, so they count as rows).

    ``length``/``difficulty`` pull each model's ``beta``/``psi`` towards the pooled length slope and 1;
    ``theta`` shrinks the model term to 0 (off by default); ``instruction`` is the ridge on ``gamma`` in the
    joint difficulty fit (0.5 = a standard-normal prior on each instruction's difficulty); ``gamed_weight`` is
    AlpacaEval's total weight of the gamed-baseline rows (0.2).
    """

    theta: float = 0.0
    length: float = 10.0
    difficulty: float = 10.0
    instruction: float = 0.5
    gamed_weight: float = 0.2


class LCGrid(NamedTuple):
    """Soft labels ``y``, ``tanh(std_delta_len)`` and a 0/1 ``mask``, each (models, instructions)."""

    y: Array
    tanh_len: Array
    mask: Array


class Prior(NamedTuple):
    """Centre and strength of the stage-2 ridge: ``(theta0, beta0, psi0)`` and their penalties."""

    centre: Array
    strength: Array


def soft_cross_entropy(eta: Array, y: Array) -> Array:
    """Cross-entropy of probability ``y`` against ``sigmoid(eta)``, exact for soft labels (no row duplication)."""
    return -(y * jax.nn.log_sigmoid(eta) + (1.0 - y) * jax.nn.log_sigmoid(-eta))


def tanh_std_delta_len(model_len: Array, baseline_len: Array, mask: Array) -> Array:
    """``tanh((len_model - len_baseline) / sd)`` per model row, sd over that model's rows (ddof=1), as AlpacaEval.

    AlpacaEval uses baseline minus model; tanh is odd, so only the sign of ``beta`` differs.
    Reference: Dubois et al. 2024, eq. (2).
    """
    delta = (model_len - baseline_len) * mask
    n = mask.sum(axis=-1, keepdims=True)
    mean = delta.sum(axis=-1, keepdims=True) / n
    sd = jnp.sqrt((((delta - mean) * mask) ** 2).sum(axis=-1, keepdims=True) / (n - 1))
    return jnp.tanh(delta / jnp.where(sd > 0, sd, 1.0)) * mask


def difficulty_loss(params: tuple[Array, Array, Array], grid: LCGrid, ridge: float) -> Array:
    """Stage-1 joint loss: ``logit p_mi = theta_m + beta * tanh_mi + gamma_i``, ridge ``ridge * |gamma|^2``.

    Reference: Dubois et al. 2024, sec. 3 (instruction difficulty shared across models).
    """
    theta, beta, gamma = params
    eta = theta[:, None] + beta * grid.tanh_len + gamma[None, :]
    return (grid.mask * soft_cross_entropy(eta, grid.y)).sum() + ridge * jnp.sum(gamma**2)


def fit_difficulty(grid: LCGrid, ridge: float, gamma: Array | None = None) -> tuple[Array, Array]:
    """Joint fit over all models; returns ``(gamma, pooled_beta)``. With ``gamma`` given it is kept fixed.

    Newton's method with step halving on :func:`difficulty_loss`. The Hessian's instruction block is
    diagonal, so each step solves only a (models + 1) Schur complement: O(models x instructions) per step.
    """
    fixed = gamma is not None
    g0 = jnp.asarray(gamma, float) if fixed else jnp.zeros(grid.y.shape[1])
    return _solve_difficulty(grid, jnp.asarray(ridge, float), g0, fixed)


@partial(jax.jit, static_argnames=("fixed", "max_iter"))
def _solve_difficulty(grid: LCGrid, ridge: Array, gamma0: Array, fixed: bool,
                      max_iter: int = 100) -> tuple[Array, Array]:
    n_models = grid.y.shape[0]
    t, m = grid.tanh_len, grid.mask
    scale = 1e-10 * (1.0 + m.sum())

    def loss(a: Array, g: Array) -> Array:
        return difficulty_loss((a[:n_models], a[n_models], g), grid, ridge)

    def grads(a: Array, g: Array):
        p = jax.nn.sigmoid(a[:n_models, None] + a[n_models] * t + g[None, :])
        r, w = m * (p - grid.y), m * p * (1 - p)
        g_a = jnp.concatenate([r.sum(1), (r * t).sum()[None]])
        g_g = r.sum(0) + 2 * ridge * g
        return g_a, g_g, w

    def step(state):
        a, g, it, _ = state
        g_a, g_g, w = grads(a, g)
        wt = w * t
        h_aa = jnp.diag(jnp.concatenate([w.sum(1), (wt * t).sum()[None]]))
        h_aa = h_aa.at[:n_models, n_models].set(wt.sum(1)).at[n_models, :n_models].set(wt.sum(1))
        if fixed:
            d_a, d_g = jnp.linalg.solve(h_aa, g_a), jnp.zeros_like(g)
        else:
            b = jnp.concatenate([w, wt.sum(0)[None]])  # (models + 1, instructions) off-diagonal block
            d = w.sum(0) + 2 * ridge  # diagonal instruction block
            schur = h_aa - (b / d) @ b.T
            d_a = jnp.linalg.solve(schur, g_a - b @ (g_g / d))
            d_g = (g_g - b.T @ d_a) / d
        f0 = loss(a, g)

        def worse(u):
            return (loss(a - u * d_a, g - u * d_g) > f0) & (u > 1e-4)

        u = jax.lax.while_loop(worse, lambda u: u * 0.5, 1.0)
        a, g = a - u * d_a, g - u * d_g
        g_a, g_g, _ = grads(a, g)
        done = jnp.maximum(jnp.max(jnp.abs(g_a)), 0.0 if fixed else jnp.max(jnp.abs(g_g))) < scale
        return a, g, it + 1, done

    state = (jnp.zeros(n_models + 1), gamma0, 0, False)
    a, g, _, _ = jax.lax.while_loop(lambda s: (~s[3]) & (s[2] < max_iter), step, state)
    return g, a[n_models]


def _design(tanh_len: Array, gamma: Array, is_model: float) -> Array:
    """Rows ``[is_model, tanh_len, gamma]`` of the stage-2 design."""
    return jnp.stack([jnp.full_like(tanh_len, is_model), tanh_len, gamma], axis=-1)


def model_loss(params: Array, y: Array, tanh_len: Array, weight: Array, gamma: Array,
               gamed: LCGrid, gamed_weight: float, prior: Prior) -> Array:
    """Stage-2 loss for one model: weighted soft cross-entropy on its rows and on the gamed-baseline rows, plus ridge.

    Gamed rows (baseline rewrites judged against the baseline) share ``beta``/``psi`` and have no model term
    (Dubois et al. 2024, sec. 3.2 "regularisation"). ``params = (theta, beta, psi)``.
    """
    eta = _design(tanh_len, gamma, 1.0) @ params
    eta_g = _design(gamed.tanh_len, jnp.broadcast_to(gamma, gamed.y.shape), 0.0) @ params
    n_gamed = max(gamed.y.shape[0], 1)
    return ((weight * soft_cross_entropy(eta, y)).sum()
            + gamed_weight / n_gamed * (gamed.mask * soft_cross_entropy(eta_g, gamed.y)).sum()
            + jnp.sum(prior.strength * (params - prior.centre) ** 2))


def _stacked_rows(y: Array, tanh_len: Array, weight: Array, gamma: Array, gamed: LCGrid,
                  gamed_weight: float) -> tuple[Array, Array, Array]:
    """Design, labels and weights of one model's rows followed by the gamed-baseline rows."""
    xg = _design(gamed.tanh_len, jnp.broadcast_to(gamma, gamed.y.shape), 0.0).reshape(-1, 3)
    wg = gamed_weight / max(gamed.y.shape[0], 1) * gamed.mask.reshape(-1)
    return (jnp.concatenate([_design(tanh_len, gamma, 1.0), xg]), jnp.concatenate([y, gamed.y.reshape(-1)]),
            jnp.concatenate([weight, wg]))


def _irls(params: Array, xs: Array, ys: Array, w: Array, prior: Prior) -> tuple[Array, Array]:
    p = jax.nn.sigmoid(xs @ params)
    grad = xs.T @ (w * (p - ys)) + 2 * prior.strength * (params - prior.centre)
    hess = (xs * (w * p * (1 - p))[:, None]).T @ xs + 2 * jnp.diag(prior.strength)
    return grad, hess


def _grad_hess(params: Array, y: Array, tanh_len: Array, weight: Array, gamma: Array,
               gamed: LCGrid, gamed_weight: float, prior: Prior) -> tuple[Array, Array]:
    """Analytic gradient and Hessian of :func:`model_loss` (IRLS form ``X^T W X``)."""
    return _irls(params, *_stacked_rows(y, tanh_len, weight, gamma, gamed, gamed_weight), prior)


def fit_model_glm(y: Array, tanh_len: Array, weight: Array, gamma: Array, gamed: LCGrid,
                  gamed_weight: float, prior: Prior, start: Array, n_iter: int = 25) -> tuple[Array, Array]:
    """Newton fit of one model's ``(theta, beta, psi)``; returns ``(params, |gradient|_inf)``.

    Steps are capped at length 5 so near-separable soft labels cannot overshoot. Reference: IRLS for the
    logistic GLM (McCullagh & Nelder 1989, sec. 4.4) with the AlpacaEval design (Dubois et al. 2024).
    """
    xs, ys, w = _stacked_rows(y, tanh_len, weight, gamma, gamed, gamed_weight)

    def step(_: int, params: Array) -> Array:
        grad, hess = _irls(params, xs, ys, w, prior)
        delta = jnp.linalg.solve(hess + 1e-9 * jnp.eye(3), grad)
        norm = jnp.linalg.norm(delta)
        return params - delta * jnp.minimum(1.0, 5.0 / jnp.maximum(norm, 1e-12))

    params = jax.lax.fori_loop(0, n_iter, step, start)
    grad, _ = _irls(params, xs, ys, w, prior)
    return params, jnp.max(jnp.abs(grad))


def lc_win_rate(params: Array, gamma: Array, weight: Array) -> Array:
    """Mean predicted preference with the length term zeroed: ``mean_i sigmoid(theta + psi * gamma_i)``.

    Reference: Dubois et al. 2024, eq. (3).
    """
    p = jax.nn.sigmoid(params[0] + params[2] * gamma)
    return (weight * p).sum() / weight.sum()


def raw_win_rate(y: Array, weight: Array) -> Array:
    """AlpacaEval's win rate: mean soft preference (ties count 0.5), here with row weights."""
    return (weight * y).sum() / weight.sum()


def fit_all_models(grid: LCGrid, weight: Array, gamma: Array, gamed: LCGrid, gamed_weight: float,
                   prior: Prior, start: Array, n_iter: int = 25) -> dict[str, Array]:
    """Fit every model (vmapped) under per-row ``weight`` (models, instructions); LC and raw win rates too."""

    def one(y: Array, t: Array, w: Array, p0: Array) -> tuple[Array, Array, Array, Array]:
        params, gnorm = fit_model_glm(y, t, w, gamma, gamed, gamed_weight, prior, p0, n_iter)
        return params, gnorm, lc_win_rate(params, gamma, w), raw_win_rate(y, w)

    params, gnorm, lc, raw = jax.vmap(one)(grid.y, grid.tanh_len, weight, start)
    return {"params": params, "grad_norm": gnorm, "lc": lc, "raw": raw}


_fit_all = jax.jit(fit_all_models, static_argnames=("n_iter",))


def bootstrap_counts(key: Array, n_bootstrap: int, n_instr: int) -> Array:
    """Multinomial instruction counts, (n_bootstrap, n_instr): resampling instructions with replacement."""
    idx = jax.random.randint(key, (n_bootstrap, n_instr), 0, n_instr)
    return jax.vmap(lambda r: jnp.bincount(r, length=n_instr))(idx).astype(jnp.float64)


def bootstrap_lc(grid: LCGrid, gamma: Array, gamed: LCGrid, gamed_weight: float, prior: Prior,
                 start: Array, n_bootstrap: int, seed: int = 0, chunk: int = 20,
                 n_iter: int = 4) -> dict[str, Array]:
    """Refit all models on ``n_bootstrap`` instruction resamples (paired across models), vmapped in chunks.

    Refits warm-start from the full-data ``start``: ``n_iter`` Newton steps (4 reach machine precision on
    AlpacaEval-sized data); replicates whose gradient is still above ``1e-6`` are refitted with 25 steps
    and counted in ``n_fallback``. ``gamma`` and the prior stay at their full-data values.
    Returns ``lc``, ``raw`` (n_bootstrap, models), ``grad_norm`` and ``n_fallback``.
    """
    counts = bootstrap_counts(jax.random.PRNGKey(seed), n_bootstrap, grid.y.shape[1])
    out = _run_chunks(grid, gamma, gamed, gamed_weight, prior, start, counts, chunk, n_iter)
    bad = np.flatnonzero(np.asarray(out["grad_norm"]).max(axis=1) > 1e-6)
    if bad.size:
        redo = _run_chunks(grid, gamma, gamed, gamed_weight, prior, start, counts[bad], chunk, 25)
        out = {k: v.at[bad].set(redo[k]) for k, v in out.items()}
    return {**out, "n_fallback": int(bad.size)}


def _run_chunks(grid: LCGrid, gamma: Array, gamed: LCGrid, gamed_weight: float, prior: Prior, start: Array,
                counts: Array, chunk: int, n_iter: int) -> dict[str, Array]:
    n = counts.shape[0]
    chunk = min(chunk, n)
    n_chunks = -(-n // chunk)
    counts = jnp.concatenate([counts, jnp.ones((n_chunks * chunk - n, counts.shape[1]))])
    out = _bootstrap_chunks(grid, gamma, gamed, gamed_weight, prior, start,
                            counts.reshape(n_chunks, chunk, -1), n_iter)
    return {k: v.reshape(n_chunks * chunk, *v.shape[2:])[:n] for k, v in out.items()}


@partial(jax.jit, static_argnames=("n_iter",))
def _bootstrap_chunks(grid: LCGrid, gamma: Array, gamed: LCGrid, gamed_weight: float, prior: Prior,
                      start: Array, counts: Array, n_iter: int = 4) -> dict[str, Array]:
    def chunk_fit(c: Array) -> dict[str, Array]:
        def rep(ci: Array) -> dict[str, Array]:
            res = fit_all_models(grid, grid.mask * ci[None, :], gamma, gamed, gamed_weight, prior, start, n_iter)
            return {"lc": res["lc"], "raw": res["raw"], "grad_norm": res["grad_norm"]}

        return jax.vmap(rep)(c)

    return jax.lax.map(chunk_fit, counts)


def is_extreme_change(raw: np.ndarray, lc: np.ndarray, abs_diff: float = 10.0, rel_diff: float = 4.0) -> np.ndarray:
    """AlpacaEval's divergence rule (in percent): LC below ``min(raw - raw/rel, raw - abs)`` or above
    ``max(raw + (100 - raw)/rel, raw + abs)`` signals a likely GLM failure."""
    raw, lc = np.asarray(raw, float), np.asarray(lc, float)
    too_small = lc < np.minimum(raw - raw / rel_diff, raw - abs_diff)
    too_large = lc > np.maximum(raw + (100 - raw) / rel_diff, raw + abs_diff)
    return too_small | too_large


class LCDivergenceWarning(UserWarning):
    """The LC win rate moved far from the raw one (AlpacaEval's rule): the GLM may have failed for that model."""


def lc_leaderboard(table: pd.DataFrame, *, n_bootstrap: int = 1000, level: float = 0.95, seed: int = 0,
                   difficulty: pd.Series | None = None, gamed: pd.DataFrame | None = None,
                   penalty: LCPenalty = LCPenalty(), reference: str | None = None,
                   warn: bool = True) -> pd.DataFrame:
    """Raw and length-controlled win rates (percent) per model from a validated LC table (see :mod:`arena.lc_data`).

    ``difficulty`` (instruction -> gamma) replaces the joint estimate; ``gamed`` is an LC table of baseline
    rewrites judged against the baseline (AlpacaEval's regulariser). ``reference`` names a model to
    re-reference the LC win rate to (AlpacaEval's ``predict_winrate``: ``mean sigmoid(dtheta + dpsi * gamma)``),
    reported as ``lc_vs_reference``. Columns: ``model, raw_win_rate, raw_se, lc_win_rate, lc_se, lc_lower,
    lc_upper, avg_length, n, length_coef, difficulty_coef, extreme_change``; sorted by LC win rate.
    """
    models, instructions, arr = table_to_grid(table)
    mask = jnp.asarray(arr["mask"])
    grid = LCGrid(jnp.asarray(arr["y"]), tanh_std_delta_len(jnp.asarray(arr["model_len"]),
                                                             jnp.asarray(arr["baseline_len"]), mask), mask)
    given = None
    if difficulty is not None:
        missing = [i for i in instructions if i not in difficulty.index]
        if missing:
            raise ValueError(f"difficulty table lacks {len(missing)} instruction(s), e.g. {missing[0][:60]!r}; "
                             "supply gamma for every instruction or let it be estimated")
        given = jnp.asarray(difficulty.reindex(instructions).to_numpy(float))
    gamma, beta_pooled = fit_difficulty(grid, penalty.instruction, given)
    gamed_grid = _gamed_grid(gamed, instructions)
    prior = Prior(jnp.array([0.0, float(beta_pooled), 1.0]),
                  jnp.array([penalty.theta, penalty.length, penalty.difficulty], dtype=float))
    start = jnp.tile(prior.centre, (len(models), 1))
    fit = _fit_all(grid, mask, gamma, gamed_grid, penalty.gamed_weight, prior, start)
    if float(jnp.max(fit["grad_norm"])) > 1e-5:
        warnings.warn(f"LC GLM did not converge (max |gradient| {float(jnp.max(fit['grad_norm'])):.2e})",
                      RuntimeWarning, stacklevel=2)
    y, n = np.asarray(grid.y), np.asarray(mask).sum(axis=1)
    raw_var = ((y - np.asarray(fit["raw"])[:, None]) ** 2 * np.asarray(mask)).sum(axis=1) / (n - 1)
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
    if n_bootstrap > 0:
        boot = bootstrap_lc(grid, gamma, gamed_grid, penalty.gamed_weight, prior, fit["params"], n_bootstrap, seed)
        lc_boot = 100 * np.asarray(boot["lc"])
        alpha = (1 - level) / 2
        out["lc_se"] = lc_boot.std(axis=0, ddof=1)
        out["lc_lower"], out["lc_upper"] = np.quantile(lc_boot, [alpha, 1 - alpha], axis=0)
        n_fallback = boot["n_fallback"]
    else:
        out["lc_se"] = out["lc_lower"] = out["lc_upper"] = np.nan
        n_fallback = 0
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
                                  for r in bad.itertuples()), LCDivergenceWarning, stacklevel=2)
    cols = ["model", "raw_win_rate", "raw_se", "lc_win_rate", "lc_se", "lc_lower", "lc_upper", "avg_length", "n",
            "length_coef", "difficulty_coef", "extreme_change"] + (["lc_vs_reference"] if reference else [])
    out = out[cols].sort_values("lc_win_rate", ascending=False, ignore_index=True)
    out.attrs.update(baseline=str(table["baseline"].iloc[0]), n_instructions=len(instructions),
                     pooled_length_coef=float(beta_pooled), level=level, n_bootstrap=n_bootstrap,
                     bootstrap_fallbacks=n_fallback,
                     difficulty=pd.Series(np.asarray(gamma), index=instructions, name="difficulty"))
    return out


def no_gamed_rows(n_instr: int) -> LCGrid:
    """An empty gamed-baseline grid (0, n_instr): no AlpacaEval rewrites of the baseline."""
    z = jnp.zeros((0, n_instr))
    return LCGrid(z, z, z)


def _gamed_grid(gamed: pd.DataFrame | None, instructions: list[str]) -> LCGrid:
    """Gamed-baseline rows on the main instruction axis ((variants, instructions); empty when none)."""
    if gamed is None or gamed.empty:
        return no_gamed_rows(len(instructions))
    variants, g_instr, arr = table_to_grid(gamed[gamed["instruction"].isin(instructions)])
    pos = np.array([instructions.index(i) for i in g_instr])
    full = {k: np.zeros((len(variants), len(instructions))) for k in arr}
    for k, v in arr.items():
        full[k][:, pos] = v
    mask = jnp.asarray(full["mask"])
    t = tanh_std_delta_len(jnp.asarray(full["model_len"]), jnp.asarray(full["baseline_len"]), mask)
    return LCGrid(jnp.asarray(full["y"]), t, mask)
