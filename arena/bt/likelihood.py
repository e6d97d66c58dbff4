"""Bradley-Terry likelihoods (ties counted half, Rao-Kupper, Davidson), Newton fit and sandwich covariance.

Pure functions over arrays. Parameters are one vector ``x`` of length ``K + 1``: natural-log strengths
``theta = x[:K]`` and ``x[K]``, the log of the tie parameter (unused, pinned at 0, for ``ties="half"``).
Data is a :class:`PairData`: unordered model pairs ``i < j`` with counts of (i wins, j wins, tie).

References: Bradley & Terry (1952), Biometrika 39:324; Rao & Kupper (1967), JASA 62:194;
Davidson (1970), JASA 65:317; Hunter (2004), Ann. Stat. 32:384 (existence of the MLE, Ford's condition);
White (1982), Econometrica 50:1 (sandwich covariance).
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple, get_args

import jax
import jax.numpy as jnp
import numpy as np

from arena.bt.ties import initial_psi, tie_parameter_from_psi  # noqa: F401  (initial_psi re-exported)
from arena.io.battles import PairCounts
from arena.jax_setup import float64, stored_jit
from preflab.outcomes import Outcome

Ties = Literal["half", "rao-kupper", "davidson"]
"""Tie models: ties count half a win each, Rao-Kupper's threshold, Davidson's tie share."""
TIES: tuple[str, ...] = get_args(Ties)
DEFAULT_RIDGE = 1e-6
"""Ridge ``ridge/2 * ||theta||^2`` on the strengths: fixes the free additive constant (mean 0) and keeps
the fit finite when a model never lost or never won. Its effect on finite MLEs is far below 1e-3 Elo."""


class PairData(NamedTuple):
    """Unordered pairs ``i < j`` (int32) with ``counts[:, 0]`` i-wins, ``[:, 1]`` j-wins, ``[:, 2]`` ties."""

    i: np.ndarray
    j: np.ndarray
    counts: np.ndarray


class Fit(NamedTuple):
    """Result of :func:`fit`: parameters, Newton iterations used, and whether the gradient test passed."""

    x: jax.Array
    n_iter: jax.Array
    converged: jax.Array


def pair_data(counts: PairCounts) -> PairData:
    """Collapse oriented (a, b, outcome) cells to unordered pairs; both tie kinds are ties.

    Summing multinomial cells gives a multinomial, so bootstrapping the collapsed cells is exact.
    """
    k = max(counts.n_models, 1)
    lo, hi = np.minimum(counts.a, counts.b), np.maximum(counts.a, counts.b)
    a_is_lo = counts.a == lo
    col = np.where(counts.outcome >= 2, 2, np.where((counts.outcome == Outcome.FIRST) == a_is_lo, 0, 1))
    key = lo.astype(np.int64) * k + hi
    pairs, inverse = np.unique(key, return_inverse=True)
    table = np.zeros((len(pairs), 3))
    np.add.at(table, (inverse, col), counts.count)
    pi, pj = np.divmod(pairs, k)
    return PairData(pi.astype(np.int32), pj.astype(np.int32), table)


def initial_x(data: PairData, n_models: int, ties: str) -> np.ndarray:
    """Start point: equal strengths and the tie parameter matching the overall tie share."""
    x = np.zeros(n_models + 1)
    x[-1] = initial_psi(float(data.counts[:, 2].sum() / max(data.counts.sum(), 1.0)), ties)
    return x


@float64
def outcome_log_probs(d: jax.Array, psi: jax.Array, ties: str) -> jax.Array:
    """Log-probabilities of (i wins, j wins, tie) for strength gap ``d = theta_i - theta_j``; shape (..., 3).

    ``half``: BT with a tie scored as half a win each side (Chatbot Arena), so the tie column is
    ``(log s(d) + log s(-d)) / 2``. ``rao-kupper``: ``P(i) = s(d - eta)``, ``eta = exp(psi)``, so
    ``P(tie) = sinh(eta) / (cosh(d) + cosh(eta))``. ``davidson``: ``P(i) = e^{d/2} / D``,
    ``P(tie) = nu / D``, ``D = e^{d/2} + e^{-d/2} + nu``, ``nu = exp(psi)``.
    """
    if ties == "half":
        li, lj = jax.nn.log_sigmoid(d), jax.nn.log_sigmoid(-d)
        return jnp.stack([li, lj, 0.5 * (li + lj)], axis=-1)
    if ties == "rao-kupper":
        eta = jnp.exp(psi)
        li, lj = jax.nn.log_sigmoid(d - eta), jax.nn.log_sigmoid(-d - eta)
        log_sinh = eta + jnp.log1p(-jnp.exp(-2 * eta)) - math.log(2)
        ed = jnp.broadcast_to(eta, d.shape)
        log_cosh_sum = jax.nn.logsumexp(jnp.stack([d, -d, ed, -ed], axis=-1), axis=-1) - math.log(2)
        return jnp.stack([li, lj, log_sinh - log_cosh_sum], axis=-1)
    if ties == "davidson":
        lp = jnp.broadcast_to(psi, d.shape)
        log_den = jax.nn.logsumexp(jnp.stack([d / 2, -d / 2, lp], axis=-1), axis=-1)
        return jnp.stack([d / 2 - log_den, -d / 2 - log_den, lp - log_den], axis=-1)
    raise ValueError(f"unknown ties model {ties!r}; use one of {TIES}")


def _gap(x: jax.Array, data: PairData) -> tuple[jax.Array, jax.Array]:
    return x[data.i] - x[data.j], x[-1]


@float64
def loss(x: jax.Array, data: PairData, ties: str = "half", ridge: float = DEFAULT_RIDGE) -> jax.Array:
    """Negative log-likelihood of the pair counts plus ``ridge/2 * ||theta||^2`` (and ``psi^2/2`` for half).

    Bradley & Terry (1952); ties per :func:`outcome_log_probs`.
    """
    d, psi = _gap(x, data)
    nll = -jnp.sum(data.counts * outcome_log_probs(d, psi, ties))
    pin = 0.5 * psi**2 if ties == "half" else 0.0
    return nll + 0.5 * ridge * jnp.sum(x[:-1] ** 2) + pin


@float64
def outcome_derivatives(d: jax.Array, psi: jax.Array, ties: str):
    """Per row and outcome: log-prob and its first and second derivatives in (d, psi), by nested jvp.

    Returns ``logp, g_d, g_p, h_dd, h_dp, h_pp``, each shaped like ``d`` plus a trailing outcome axis.
    """
    psi_b = jnp.broadcast_to(psi, d.shape)

    def f(d_, p_):
        return outcome_log_probs(d_, p_, ties)

    def first(d_, p_, td, tp):
        return jax.jvp(f, (d_, p_), (td, tp))[1]

    one, zero = jnp.ones_like(d), jnp.zeros_like(d)
    logp, g_d = jax.jvp(f, (d, psi_b), (one, zero))
    h_dd = jax.jvp(lambda a: first(a, psi_b, one, zero), (d,), (one,))[1]
    if ties == "half":  # psi does not enter: its derivatives are exactly zero (and tracing them is slow)
        none = jnp.zeros_like(g_d)
        return logp, g_d, none, h_dd, none, none
    g_p = first(d, psi_b, zero, one)
    h_dp = jax.jvp(lambda b: first(d, b, one, zero), (psi_b,), (one,))[1]
    h_pp = jax.jvp(lambda b: first(d, b, zero, one), (psi_b,), (one,))[1]
    return logp, g_d, g_p, h_dd, h_dp, h_pp


def _pair_derivatives(x: jax.Array, data: PairData, ties: str):
    d, psi = _gap(x, data)
    return outcome_derivatives(d, psi, ties)


@float64
def assemble(i: jax.Array, j: jax.Array, size: int, m_dd, m_dp, m_pp) -> jax.Array:
    """Map per-row 2x2 blocks in (d, psi) onto a size x size matrix, d = theta_i - theta_j, psi = last.

    ``m_dp = m_pp = None``: no psi terms (half ties), the same matrix with five fewer scatters to trace."""
    out = jnp.zeros((size, size))
    out = out.at[i, i].add(m_dd).at[j, j].add(m_dd).at[i, j].add(-m_dd).at[j, i].add(-m_dd)
    if m_dp is None:
        return out
    out = out.at[i, -1].add(m_dp).at[-1, i].add(m_dp).at[j, -1].add(-m_dp).at[-1, j].add(-m_dp)
    return out.at[-1, -1].add(jnp.sum(m_pp))


def _assemble(data: PairData, n_models: int, m_dd, m_dp, m_pp) -> jax.Array:
    return assemble(jnp.asarray(data.i), jnp.asarray(data.j), n_models + 1, m_dd, m_dp, m_pp)


@float64
def gradient(x: jax.Array, data: PairData, ties: str = "half", ridge: float = DEFAULT_RIDGE) -> jax.Array:
    """Gradient of :func:`loss` by scattering per-pair derivatives.

    Also works batched with replicates on the trailing axis: ``x`` (K+1, R) and ``counts`` (P, R, 3); rows
    are gathered and scattered whole, which is much faster on CPU than a vmapped scatter.
    """
    c = data.counts
    if ties == "half":
        return half_gradient(x, data.i, data.j, c[..., 0] + 0.5 * c[..., 2], jnp.sum(c, axis=-1), ridge)
    n = x.shape[0] - 1
    _, g_d, g_p, *_ = _pair_derivatives(x, data, ties)
    s_d = -jnp.sum(c * g_d, axis=-1)
    g_psi = -jnp.sum(c * g_p, axis=(0, c.ndim - 1))
    g = jnp.zeros_like(x).at[data.i].add(s_d).at[data.j].add(-s_d)
    return g.at[-1].set(g_psi).at[:n].add(ridge * x[:n])


@float64
def half_gradient(x: jax.Array, i: jax.Array, j: jax.Array, score: jax.Array, total: jax.Array,
                  ridge: float = DEFAULT_RIDGE) -> jax.Array:
    """:func:`gradient` for ``ties="half"`` from its sufficient statistics per pair: ``score`` = wins of i
    plus half the ties, ``total`` = battles; ``N sigmoid(d) - score`` scattered to i and j (the bootstrap's
    hot path: the statistics are formed once per replicate, outside the iterations)."""
    n = x.shape[0] - 1
    s_d = total * jax.nn.sigmoid(x[i] - x[j]) - score
    g = jnp.zeros_like(x).at[i].add(s_d).at[j].add(-s_d)
    return g.at[-1].set(x[-1]).at[:n].add(ridge * x[:n])


DENSE_MAX_MODELS = 4096
"""Above this a (K, K) matrix per evaluation is too large to be worth it."""


def dense_pairs(n_models: int, n_pairs: int) -> bool:
    """Sum over every ordered pair of models (K^2 fused, vectorised terms) rather than gather and scatter over
    the pairs met (XLA's CPU scatter is serial: ~50 ns a pair) when at least 1/8 of all pairs met."""
    return 1 < n_models <= DENSE_MAX_MODELS and n_models * n_models <= 16 * max(n_pairs, 1)


@float64
def beat_matrix(data: PairData, n_models: int) -> jax.Array:
    """(K, K) ``W``: ``W[a, b]`` = a's wins over b plus half their ties, the half-ties model's sufficient
    statistics (``W + W^T`` battles, ``W 1`` scores); two scatters, once per fit."""
    c = jnp.asarray(data.counts)
    half = 0.5 * c[:, 2]
    w = jnp.zeros((n_models, n_models), c.dtype)
    return w.at[data.i, data.j].add(c[:, 0] + half).at[data.j, data.i].add(c[:, 1] + half)


@float64
def dense_half_loss(x: jax.Array, w: jax.Array, ridge: float = DEFAULT_RIDGE) -> jax.Array:
    """:func:`loss` for half ties from :func:`beat_matrix` ``w``: ``-sum_ab W[a, b] log sigmoid(d_ab)`` (a
    tie's half-win on each side is the tie column of :func:`outcome_log_probs`)."""
    theta = x[:-1]
    nll = -jnp.sum(w * jax.nn.log_sigmoid(theta[:, None] - theta[None, :]))
    return nll + 0.5 * ridge * jnp.sum(theta**2) + 0.5 * x[-1] ** 2


@float64
def dense_half_gradient(x: jax.Array, n: jax.Array, s: jax.Array, ridge: float = DEFAULT_RIDGE) -> jax.Array:
    """:func:`gradient` for half ties from battles ``n = W + W^T`` and scores ``s = W 1``."""
    theta = x[:-1]
    g = jnp.sum(n * jax.nn.sigmoid(theta[:, None] - theta[None, :]), axis=1) - s + ridge * theta
    return jnp.concatenate([g, x[-1:]])


@float64
def dense_half_hessian(x: jax.Array, n: jax.Array, ridge: float = DEFAULT_RIDGE) -> jax.Array:
    """:func:`hessian` for half ties from battles ``n``: the weighted Laplacian of ``n sigma (1 - sigma)``."""
    theta = x[:-1]
    k = theta.shape[0]
    sig = jax.nn.sigmoid(theta[:, None] - theta[None, :])
    m = n * sig * (1 - sig)
    h = jnp.diag(jnp.sum(m, axis=1) + ridge) - m
    return jnp.zeros((k + 1, k + 1), h.dtype).at[:k, :k].set(h).at[k, k].set(1.0)


@float64
def hessian(x: jax.Array, data: PairData, ties: str = "half", ridge: float = DEFAULT_RIDGE) -> jax.Array:
    """Hessian of :func:`loss`: observed information (Bradley & Terry 1952) plus the ridge."""
    n = x.shape[0] - 1
    if ties == "half" and dense_pairs(n, data.i.shape[0]):
        w = beat_matrix(data, n)
        return dense_half_hessian(x, w + w.T, ridge)
    _, _, _, h_dd, h_dp, h_pp = _pair_derivatives(x, data, ties)
    c = data.counts
    if ties == "half":  # no psi terms: they are zeros
        h = _assemble(data, n, -jnp.sum(c * h_dd, -1), None, None)
    else:
        h = _assemble(data, n, -jnp.sum(c * h_dd, -1), -jnp.sum(c * h_dp, -1), -jnp.sum(c * h_pp, -1))
    h = h + ridge * jnp.diag(jnp.ones(n + 1).at[-1].set(0.0))
    return h.at[-1, -1].add(1.0) if ties == "half" else h


@float64
@stored_jit(static_argnames=("ties",))
def conditioned_hessian(x: jax.Array, data: PairData, ties: str = "half",
                        ridge: float = DEFAULT_RIDGE) -> jax.Array:
    """:func:`hessian` plus ``c * 1 1^T`` on the strength block, ``c`` = mean diagonal / K.

    The likelihood is blind to adding a constant to every strength, so the Hessian's smallest eigenvalue
    is the ridge (1e-6) and its inverse amplifies rounding noise ~1e12-fold along that direction. The
    gradient, the score and the centred ratings are all orthogonal to it, so this shift changes nothing
    we report while making solves well conditioned.
    """
    return condition(hessian(x, data, ties, ridge), x.shape[0] - 1)


@float64
def condition(h: jax.Array, n_models: int) -> jax.Array:
    """Add ``c * 1 1^T`` (``c`` = mean strength diagonal / K) on the first ``n_models`` rows and columns."""
    c = jnp.trace(h[:n_models, :n_models]) / n_models / n_models
    ones = jnp.zeros(h.shape[0]).at[:n_models].set(1.0)
    return h + c * jnp.outer(ones, ones)


@float64
def score_outer(x: jax.Array, data: PairData, ties: str = "half") -> jax.Array:
    """The sandwich 'meat': sum over battles of the per-battle score outer product, summed per cell."""
    n = x.shape[0] - 1
    _, g_d, g_p, *_ = _pair_derivatives(x, data, ties)
    c = data.counts
    if ties == "half":  # psi is pinned, not fitted: no psi terms
        return _assemble(data, n, jnp.sum(c * g_d * g_d, -1), None, None)
    return _assemble(data, n, jnp.sum(c * g_d * g_d, -1), jnp.sum(c * g_d * g_p, -1), jnp.sum(c * g_p * g_p, -1))


@float64
@stored_jit(static_argnames=("ties", "max_iter"))
def fit(x0: jax.Array, data: PairData, ties: str = "half", ridge: float = DEFAULT_RIDGE,
        tol: float = 1e-9, max_iter: int = 100) -> Fit:
    """Newton's method with step halving on :func:`loss`; stops when ``max|grad| < tol * (1 + n_battles)``.

    Nocedal & Wright (2006), 'Numerical Optimization', 3.1 (backtracking) and 3.3 (Newton).

    Start from :func:`initial_x`. Strictly convex in theta for ``half`` (with the ridge), so Newton
    converges from anywhere; the halving guards the tie models far from the optimum.
    """
    scale = tol * (1.0 + jnp.sum(data.counts))
    k = x0.shape[0] - 1
    if ties == "half" and dense_pairs(k, data.i.shape[0]):  # the pairs' sums formed once, then dense terms
        w = beat_matrix(data, k)
        n, s = w + w.T, jnp.sum(w, axis=1)

        def grad(x):
            return dense_half_gradient(x, n, s, ridge)

        def objective(x):
            return dense_half_loss(x, w, ridge)
    else:
        def grad(x):
            return gradient(x, data, ties, ridge)

        def objective(x):
            return loss(x, data, ties, ridge)

    def step(state):
        x, it, _ = state
        # (dense too where the gradient is: the same program as the caller's later conditioned_hessian call)
        delta = jnp.linalg.solve(conditioned_hessian(x, data, ties, ridge), grad(x))
        f0 = objective(x)

        def shrink(t):
            return t * 0.5

        def worse(t):
            f = objective(x - t * delta)
            return (~jnp.isfinite(f) | (f > f0 + 1e-12 * jnp.abs(f0))) & (t > 1e-6)

        t = jax.lax.while_loop(worse, shrink, 1.0)
        x_new = x - t * delta
        done = jnp.max(jnp.abs(grad(x_new))) < scale
        return x_new, it + 1, done

    def go(state):
        _, it, done = state
        return (~done) & (it < max_iter)

    x, it, done = jax.lax.while_loop(go, step, (jnp.asarray(x0, jnp.float64), 0, False))
    return Fit(x, it, done)


@float64
@stored_jit(static_argnames=("ties",))
def sandwich_covariance(x: jax.Array, data: PairData, ties: str = "half",
                        ridge: float = DEFAULT_RIDGE) -> jax.Array:
    """Robust covariance ``H^-1 B H^-1`` of ``x`` (White 1982), B summed over battles via their cells.

    B is blind to the constant direction, so this is the covariance of the mean-centred strengths
    (computed with :func:`conditioned_hessian`).
    """
    h_inv = jnp.linalg.inv(conditioned_hessian(x, data, ties, ridge))
    cov = h_inv @ score_outer(x, data, ties) @ h_inv
    return (cov + cov.T) / 2


@float64
def tie_parameter(x: jax.Array, ties: str) -> float | None:
    """The fitted tie parameter on its classical scale (:func:`arena.bt.ties.tie_parameter_from_psi`)."""
    return tie_parameter_from_psi(float(x[-1]), ties)


@float64
def fit_ratings(counts: PairCounts, ties: str = "half", ridge: float = DEFAULT_RIDGE) -> tuple[np.ndarray, Fit]:
    """Convenience: aggregate counts -> (centred natural-log strengths, Fit)."""
    if ties not in TIES:
        raise ValueError(f"unknown ties model {ties!r}; use one of {TIES}")
    data = pair_data(counts)
    result = fit(initial_x(data, counts.n_models, ties), data, ties, ridge)
    theta = np.asarray(result.x[:-1])
    return theta - theta.mean(), result
