"""Style control: a contextual Bradley-Terry model with style features fitted jointly with the ratings.

Per battle, ``d = theta_a - theta_b + f . beta`` where each feature is ``(a - b) / (a + b + 1)`` of a
per-side total (answer length, markdown headers, list items, bold spans), z-scored over the battles.
The ratings are then 'style-adjusted': what remains after length and markdown are explained
(Chatbot Arena, 'Does style matter?', LMSYS blog, Aug 2024; Li et al. 2024). Ties use the same
likelihoods as :mod:`arena.bt.likelihood`. Parameters ``z = [theta (K), beta (F), psi]``.
The bootstrap resamples battles (multinomial counts per battle) and refits by chord-Newton, vmapped
(ties counted half: on battles laid out in pair blocks with float32 corrections, :mod:`arena.style.refit`);
replicates that do not converge, or whose resample breaks Ford's condition, are flagged for exclusion.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from statistics import NormalDist
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from arena.bootstrap.intervals import percentile_interval, usable_replicates
from arena.bootstrap.poisson import PoissonTable
from arena.bootstrap.weights import WeightKind, draw_weights
from arena.bt import likelihood as bt
from arena.bt.diagnostics import replicate_separation
from arena.io.battles import Battles
from arena.jax_setup import float64
from arena.style import block_fit
from arena.style import refit as sr
from arena.style.features import StyleRows, usable_features


def _unpack(z: jax.Array, rows: StyleRows, n_models: int):
    n_feat = rows.features.shape[1]
    beta = z[n_models:n_models + n_feat]
    d = z[rows.a] - z[rows.b] + jnp.tensordot(rows.features, beta, axes=(1, 0))
    return d, z[-1]


def _select(values: jax.Array, outcome: jax.Array) -> jax.Array:
    onehot = jax.nn.one_hot(outcome, 3)
    return jnp.sum(values * onehot.reshape(onehot.shape[:1] + (1,) * (values.ndim - 2) + (3,)), axis=-1)


@float64
def style_loss(z: jax.Array, rows: StyleRows, n_models: int, ties: str = "half",
               ridge: float = bt.DEFAULT_RIDGE) -> jax.Array:
    """Negative log-likelihood of the battles under the contextual BT model, plus the strength ridge."""
    d, psi = _unpack(z, rows, n_models)
    nll = -jnp.sum(_select(bt.outcome_log_probs(d, psi, ties), rows.outcome))
    pin = 0.5 * psi**2 if ties == "half" else 0.0
    return nll + 0.5 * ridge * jnp.sum(z[:n_models] ** 2) + pin


@float64
def style_gradient(z: jax.Array, rows: StyleRows, n_models: int, ties: str = "half",
                   ridge: float = bt.DEFAULT_RIDGE, weights: jax.Array | None = None) -> jax.Array:
    """Gradient of :func:`style_loss` with per-battle ``weights``; batched when z is (size, R), weights (N, R)."""
    d, psi = _unpack(z, rows, n_models)
    w = 1.0 if weights is None else weights
    if ties == "half":  # closed form: sigmoid(d) - y with y = 1, 0, 1/2
        y = jnp.asarray([1.0, 0.0, 0.5])[rows.outcome].reshape((-1,) + (1,) * (d.ndim - 1))
        s_d, g_psi = w * (jax.nn.sigmoid(d) - y), z[-1]
    else:
        _, g_d, g_p, *_ = bt.outcome_derivatives(d, psi, ties)
        s_d = -w * _select(g_d, rows.outcome)
        g_psi = -jnp.sum(w * _select(g_p, rows.outcome), axis=0)
    g_theta = jnp.zeros((n_models,) + d.shape[1:]).at[rows.a].add(s_d).at[rows.b].add(-s_d)
    g_theta = g_theta + ridge * z[:n_models]
    g_beta = jnp.tensordot(rows.features, s_d, axes=(0, 0))
    return jnp.concatenate([g_theta, g_beta, g_psi[None]])


def _assemble_style(rows: StyleRows, n_models: int, m_dd, m_dp, m_pp) -> jax.Array:
    """(size x size) matrix of per-battle blocks: d depends on theta_a, theta_b and every beta."""
    n_feat = rows.features.shape[1]
    size = n_models + n_feat + 1
    out = bt.assemble(rows.a, rows.b, size, m_dd, m_dp, m_pp)
    f = jnp.asarray(rows.features)
    t_beta = jnp.zeros((n_models, n_feat)).at[rows.a].add(m_dd[:, None] * f).at[rows.b].add(-m_dd[:, None] * f)
    sl = slice(n_models, n_models + n_feat)
    out = out.at[:n_models, sl].add(t_beta).at[sl, :n_models].add(t_beta.T)
    out = out.at[sl, sl].add(f.T @ (m_dd[:, None] * f))
    fp = f.T @ m_dp
    return out.at[sl, -1].add(fp).at[-1, sl].add(fp)


@float64
def style_hessian(z: jax.Array, rows: StyleRows, n_models: int, ties: str = "half",
                  ridge: float = bt.DEFAULT_RIDGE) -> jax.Array:
    """Hessian of :func:`style_loss`."""
    d, psi = _unpack(z, rows, n_models)
    _, _, _, h_dd, h_dp, h_pp = bt.outcome_derivatives(d, psi, ties)
    o = rows.outcome
    h = _assemble_style(rows, n_models, -_select(h_dd, o), -_select(h_dp, o), -_select(h_pp, o))
    h = h + jnp.diag(jnp.zeros(h.shape[0]).at[:n_models].set(ridge))
    return h.at[-1, -1].add(1.0) if ties == "half" else h


@float64
def style_meat(z: jax.Array, rows: StyleRows, n_models: int, ties: str = "half") -> jax.Array:
    """Sum over battles of the score outer product (the sandwich meat)."""
    d, psi = _unpack(z, rows, n_models)
    _, g_d, g_p, *_ = bt.outcome_derivatives(d, psi, ties)
    sd, sp = _select(g_d, rows.outcome), _select(g_p, rows.outcome)
    if ties == "half":
        sp = jnp.zeros_like(sp)
    return _assemble_style(rows, n_models, sd * sd, sd * sp, sp * sp)


def clustered_style_meat(z: np.ndarray, rows: StyleRows, n_models: int, clusters: np.ndarray,
                         ties: str = "half") -> np.ndarray:
    """:func:`style_meat` with clusters (N,) codes as the unit: ``G / (G - 1) sum_c s_c s_c^T`` over each
    cluster's summed score (Liang & Zeger 1986), as :func:`arena.bt.units.cluster_score_outer`."""
    from scipy.sparse import coo_matrix

    d, psi = _unpack(jnp.asarray(z), rows, n_models)
    _, g_d, g_p, *_ = bt.outcome_derivatives(d, psi, ties)
    sd = np.asarray(_select(g_d, rows.outcome))
    sp = np.zeros_like(sd) if ties == "half" else np.asarray(_select(g_p, rows.outcome))
    n, n_feat = sd.size, rows.features.shape[1]
    size = n_models + n_feat + 1
    battle = np.arange(n)
    cols = [np.asarray(rows.a), np.asarray(rows.b)] + [np.full(n, n_models + f) for f in range(n_feat)]
    vals = [sd, -sd] + [sd * np.asarray(rows.features)[:, f] for f in range(n_feat)]
    cols.append(np.full(n, size - 1))
    vals.append(sp)
    scores = coo_matrix((np.concatenate(vals), (np.tile(battle, len(cols)), np.concatenate(cols))),
                        shape=(n, size)).tocsr()
    g = int(clusters.max()) + 1
    member = coo_matrix((np.ones(n), (np.asarray(clusters), battle)), shape=(g, n)).tocsr()
    per = member @ scores
    return np.asarray((per.T @ per).todense()) * (g / max(g - 1, 1))


@float64
@partial(jax.jit, static_argnames=("n_models", "ties", "max_iter"))
def style_newton(z0: jax.Array, rows: StyleRows, n_models: int, ties: str = "half",
                 ridge: float = bt.DEFAULT_RIDGE, tol: float = 1e-9, max_iter: int = 100):
    """Newton's method with step halving on :func:`style_loss`; returns (z, converged)."""
    scale = tol * (1.0 + rows.a.shape[0])

    def step(state):
        z, it, _ = state
        delta = jnp.linalg.solve(bt.condition(style_hessian(z, rows, n_models, ties, ridge), n_models),
                                 style_gradient(z, rows, n_models, ties, ridge))
        f0 = style_loss(z, rows, n_models, ties, ridge)

        def worse(t):
            f = style_loss(z - t * delta, rows, n_models, ties, ridge)
            return (~jnp.isfinite(f) | (f > f0 + 1e-12 * jnp.abs(f0))) & (t > 1e-6)

        t = jax.lax.while_loop(worse, lambda t: t * 0.5, 1.0)
        z_new = z - t * delta
        done = jnp.max(jnp.abs(style_gradient(z_new, rows, n_models, ties, ridge))) < scale
        return z_new, it + 1, done

    z, _, done = jax.lax.while_loop(lambda s: (~s[2]) & (s[1] < max_iter), step,
                                    (jnp.asarray(z0, jnp.float64), 0, False))
    return z, done


@float64
@partial(jax.jit, static_argnames=("n_models", "ties", "max_iter"))
def style_refit_chunk(weights: jax.Array, z_hat: jax.Array, h_inv: jax.Array, rows: StyleRows, n_models: int,
                      ties: str = "half", ridge: float = bt.DEFAULT_RIDGE, tol: float = 1e-9,
                      max_iter: int = 50):
    """Chord-Newton refits for battle weights (N, R), replicates on the trailing axis; (R, size), ok."""
    z0 = jnp.broadcast_to(z_hat[:, None], (z_hat.shape[0], weights.shape[1]))

    def body(state):
        z, it, _ = state
        step = h_inv @ style_gradient(z, rows, n_models, ties, ridge, weights)
        return z - step, it + 1, jnp.max(jnp.abs(step), axis=0)

    z, _, last = jax.lax.while_loop(lambda s: jnp.any(s[2] >= tol) & (s[1] < max_iter), body,
                                    (z0, 0, jnp.full(weights.shape[1], jnp.inf)))
    return z.T, (last < tol) & jnp.all(jnp.isfinite(z), axis=0)


def battle_weights(n: int, seed: int, replicate: int, kind: WeightKind = "multinomial",
                   clusters: np.ndarray | None = None, table: PoissonTable | None = None) -> np.ndarray:
    """Resampling counts per battle for one replicate (its own random stream: chunking never matters).

    ``clusters`` (N,) integer codes make the unit a cluster (e.g. the prompt): clusters are drawn with
    replacement and each battle weighs its cluster's count (Davison & Hinkley 1997, 3.8, cluster bootstrap).
    Multinomial(m, 1/m each) over the m units is drawn as Poisson(1) counts corrected to the total
    (:func:`arena.bootstrap.weights.draw_weights`), from a shared Poisson ``table`` for ``np.ones(m)`` when given.
    """
    rng = np.random.default_rng([seed, replicate, 7])
    m = n if clusters is None else int(clusters.max()) + 1
    ones = np.ones(m)
    table = table if table is not None and table.size == m else PoissonTable(ones)
    w = draw_weights(ones, 1, rng, kind, table)[0]
    return w if clusters is None else w[clusters]


_style_hessian = jax.jit(lambda z, rows, k, ties, ridge: style_hessian(z, rows, k, ties, ridge),
                         static_argnums=(2, 3))
_style_meat = jax.jit(lambda z, rows, k, ties: style_meat(z, rows, k, ties), static_argnums=(2, 3))


@partial(jax.jit, static_argnames=("n_models", "ties"))
def _refit_replicate_rows(w: jax.Array, z_hat: jax.Array, h_inv: jax.Array, rows: StyleRows, n_models: int,
                          ties: str, ridge: float):
    """:func:`style_refit_chunk` for weights (R, N): rows stack contiguously on the host (no strided copy)."""
    return style_refit_chunk(w.T, z_hat, h_inv, rows, n_models, ties, ridge)


class StyleFit(NamedTuple):
    """Style-controlled fit in the leaderboard's shape: ``x = [theta, psi]`` and matching cov/replicates."""

    x: np.ndarray
    covariance: np.ndarray | None
    replicates: np.ndarray | None
    coefficients: pd.DataFrame
    source: str
    warnings: tuple[str, ...] = ()
    converged: bool = True
    rep_converged: np.ndarray | None = None
    rep_separated: np.ndarray | None = None
    rep_outside: np.ndarray | None = None


def battle_edges(rows: StyleRows, n_models: int):
    """Beat-or-tied digraph edges of the battles: (src, dst) per unique edge and the sparse (edges, N)
    map that turns per-battle weights (N, R) into edge weights (see :func:`arena.bt.diagnostics.strong_groups`)."""
    from scipy.sparse import coo_matrix

    a, b, o = (np.asarray(v, np.int64) for v in (rows.a, rows.b, rows.outcome))
    n = a.size
    src, dst = np.concatenate([a, b]), np.concatenate([b, a])
    live = np.concatenate([o != 1, o != 0])  # a beat-or-tied b unless b won; b -> a unless a won
    keys, inverse = np.unique(src[live] * n_models + dst[live], return_inverse=True)
    battle = np.concatenate([np.arange(n), np.arange(n)])[live]
    spread = coo_matrix((np.ones(inverse.size), (inverse, battle)), shape=(keys.size, n)).tocsr()
    return keys // n_models, keys % n_models, spread


@float64
def style_fit(battles: Battles, *, features: Sequence[str] | None = None, ties: str = "half",
              ridge: float = bt.DEFAULT_RIDGE, n_bootstrap: int = 200, sandwich: bool = True, seed: int = 0,
              weights: WeightKind = "multinomial", level: float = 0.95, device: jax.Device | None = None,
              chunk: int | None = None, progress: Callable[[int], None] | None = None,
              clusters: np.ndarray | None = None, item_codes: np.ndarray | None = None) -> StyleFit:
    """Fit the contextual BT model; sandwich and/or bootstrap intervals for everything.

    The bootstrap resamples battles, or the clusters of ``clusters`` (N,) codes 0..C-1 (e.g. prompts); the
    sandwich is clustered by ``item_codes`` (N,) when given (:mod:`arena.bt.units`).
    """
    k = len(battles.models)
    features, rows, source, notes = usable_features(battles, features, k)
    n_feat = len(features)
    put = (lambda a: jax.device_put(a, device)) if device is not None else jnp.asarray
    rows_d = StyleRows(*(put(np.asarray(v)) for v in rows))
    z0 = np.zeros(k + n_feat + 1)
    z0[-1] = bt.initial_psi(float(np.mean(rows.outcome == 2)), ties)
    blocks = fd = None
    if ties == "half":  # battles in pair blocks (arena.style.refit): no per-battle scatter
        blocks = sr.make_blocks(rows.a, rows.b, rows.features, rows.outcome)
        fd = block_fit.full_data(blocks, put)
        z, done = block_fit.block_newton(put(z0), fd, k, len(rows.a), ridge)
        hess = block_fit.block_hessian_jit(z, fd, k, ridge)
    else:
        z, done = style_newton(put(z0), rows_d, k, ties, ridge)
        hess = _style_hessian(z, rows_d, k, ties, ridge)
    if not bool(done):
        msg = "the style-controlled Newton fit stopped without converging (max 100 iterations)"
        warnings.warn(msg, RuntimeWarning, stacklevel=3)
        notes.append(msg)
    h_inv = np.linalg.inv(np.asarray(bt.condition(hess, k)))
    cov = None
    if sandwich:
        if item_codes is not None:
            meat = clustered_style_meat(np.asarray(z), rows, k, item_codes, ties)
        else:
            meat = block_fit.block_meat_jit(z, fd, k) if ties == "half" else _style_meat(z, rows_d, k, ties)
        cov = h_inv @ np.asarray(meat) @ h_inv
        cov = (cov + cov.T) / 2
    reps = rep_ok = rep_sep = rep_out = None
    if n_bootstrap and ties == "half":  # float32 corrections, float64 finish
        fx = sr.fixed_arrays(blocks, np.asarray(z), k, put)
        reps, rep_ok, rep_sep, rep_out = sr.bootstrap_blocks(
            blocks, fx, z, put(h_inv), k, n=len(rows.a), n_bootstrap=n_bootstrap, seed=seed, kind=weights,
            ridge=ridge, clusters=clusters, chunk=chunk or min(n_bootstrap, 50), put=put, progress=progress,
            fallback=lambda w: _weighted_newton(z, rows, w, k, ties, ridge))
    elif n_bootstrap:
        plan = _RowBootstrap(n_bootstrap, seed, weights, clusters, chunk, put, progress)
        reps, rep_ok, rep_sep, rep_out = _bootstrap_rows(plan, z, h_inv, rows, rows_d, k, ties, ridge)
    z = np.asarray(z)
    keep = np.r_[np.arange(k), k + n_feat]
    coef = _coefficient_table(features, z[k:k + n_feat], None if cov is None else cov[k:k + n_feat, k:k + n_feat],
                              None if reps is None else reps[usable_replicates(rep_ok, rep_sep, ridge), k:k + n_feat],
                              level)
    return StyleFit(z[keep], None if cov is None else cov[np.ix_(keep, keep)],
                    None if reps is None else reps[:, keep], coef, source, tuple(notes), bool(done),
                    rep_ok, rep_sep, rep_out)


class _RowBootstrap(NamedTuple):
    """How the battle-level bootstrap runs: replicates, seed, weight kind, clusters, chunk, device, progress."""

    n_bootstrap: int
    seed: int
    weights: WeightKind
    clusters: np.ndarray | None
    chunk: int | None
    put: Callable
    progress: Callable[[int], None] | None


def _bootstrap_rows(plan: _RowBootstrap, z, h_inv: np.ndarray, rows: StyleRows, rows_d: StyleRows, k: int,
                    ties: str, ridge: float) -> tuple[np.ndarray, ...]:
    """Replicates re-weighting battles (tie models other than half): (replicates, converged, separated,
    outside), weights drawn two chunks ahead on threads while the device refits."""
    n, n_bootstrap, put, clusters = len(rows.a), plan.n_bootstrap, plan.put, plan.clusters
    chunk = plan.chunk or int(max(1, min(n_bootstrap, (1 << 30) // (80 * n))))
    out, flags = [], []
    src, dst, spread = battle_edges(rows, k)
    table = PoissonTable(np.ones(n if clusters is None else int(clusters.max()) + 1))
    starts = list(range(0, n_bootstrap, chunk))
    with ThreadPoolExecutor(2) as pool:
        def submit(c0: int):
            return [pool.submit(battle_weights, n, plan.seed, r, plan.weights, clusters, table)
                    for r in range(c0, min(c0 + chunk, n_bootstrap))]

        pending = [submit(c0) for c0 in starts[:2]]  # at most two chunks of weights ahead
        for c, _ in enumerate(starts):
            w = np.stack([f.result() for f in pending.pop(0)])
            if c + 2 < len(starts):
                pending.append(submit(starts[c + 2]))
            zr, ok = _refit_replicate_rows(put(w), z, put(h_inv), rows_d, k, ties, ridge)
            zr, ok = np.array(zr), np.array(ok)
            for r in np.flatnonzero(~ok):  # rare: refit by full Newton with those weights
                zr[r], ok[r] = _weighted_newton(z, rows, w[r], k, ties, ridge)
            out.append(zr)
            flags.append((ok, *replicate_separation(k, src, dst, spread @ w.T)))
            if plan.progress:
                plan.progress(w.shape[0])
    rep_ok, rep_sep, rep_out = (np.concatenate(f) for f in zip(*flags, strict=True))
    return np.concatenate(out), rep_ok, rep_sep, rep_out


def _weighted_newton(z0, rows: StyleRows, w: np.ndarray, k: int, ties: str, ridge: float
                     ) -> tuple[np.ndarray, bool]:
    """Full Newton for one replicate: battles repeated by their resampling counts; (z, converged)."""
    rep = np.repeat(np.arange(len(w)), w.astype(int))
    sub = StyleRows(rows.a[rep], rows.b[rep], rows.features[rep], rows.outcome[rep])
    z, done = style_newton(jnp.asarray(z0), StyleRows(*map(jnp.asarray, sub)), k, ties, ridge)
    return np.asarray(z), bool(done)


def _coefficient_table(features, beta, cov, reps, level) -> pd.DataFrame:
    """Style coefficients (log-odds per standard deviation of the feature) with their intervals."""
    t = pd.DataFrame({"coefficient": beta}, index=pd.Index(list(features), name="feature"))
    if cov is not None:
        se = np.sqrt(np.clip(np.diag(cov), 0, None))
        z = NormalDist().inv_cdf(0.5 + level / 2)
        t["se"], t["lower_sandwich"], t["upper_sandwich"] = se, beta - z * se, beta + z * se
    if reps is not None:  # fewer than 2 usable replicates (every resample separated): nothing is known
        t["lower_bootstrap"], t["upper_bootstrap"] = (percentile_interval(reps, level) if len(reps) >= 2
                                                      else (-np.inf, np.inf))
    primary = "bootstrap" if reps is not None else "sandwich"
    if f"lower_{primary}" in t:
        t["lower"], t["upper"] = t[f"lower_{primary}"], t[f"upper_{primary}"]
    return t
