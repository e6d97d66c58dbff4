"""Prediction-powered (PPI++) Bradley-Terry: many judge verdicts, corrected by a few human votes.

The estimator minimises the rectified loss (Angelopoulos, Bates, Fannjiang, Jordan, Zrnic 2023, 'Prediction-
powered inference', Science 382:669; power tuning from Angelopoulos, Duchi, Zrnic 2023, 'PPI++', arXiv:2311.01453)

    L_lam(x) = 1/n sum_L l(x; human) + lam * (1/N sum_A l(x; judge) - 1/n sum_L l(x; judge))

over items (prompt x unordered model pair; the sampling unit, so several human votes on one item are one
cluster). ``L`` are the n items with human votes and a judge label, ``A`` the N judged items: ``L`` plus the
unlabelled ones (``include_labelled``) or the unlabelled ones only (the PPI++ paper's and ``ppi_py``'s form).
``l`` is the Bradley-Terry loss of :mod:`arena.bt.likelihood` (ties half, Rao-Kupper or Davidson): an item's human loss
sums its votes; its judge loss is the judge's outcome probabilities (one-hot for hard labels) times the mean
human votes per labelled item, so lam = 1 weighs a judge verdict like a human item. The loss is linear in the
outcome counts, so the rectified loss is :func:`arena.bt.likelihood.loss` on combined per-pair counts (possibly
negative), fitted by :func:`arena.bt.likelihood.fit`; lam = 0 is the human-only fit.

Variance (PPI++ eq. 6, two independent samples): ``H^-1 V(lam) H^-1``, ``H`` the expected information per item
averaged over all items, ``V(lam)`` the sample covariance of each stratum's per-item score contributions;
``V`` is quadratic in lam, so the trace-optimal lam is closed form (PPI++ eq. 8), clipped to [0, 1].
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from arena.bt import elo
from arena.bt import likelihood as bt
from arena.jax_setup import float64


class Items(NamedTuple):
    """Item cells for the PPI fit. Items with the same pair and labels are one cell with a multiplicity.

    Pairs ``pair_i < pair_j`` (model indices). Labelled cells: ``l_pair`` (pair index), ``l_human`` (C_L, 3)
    vote counts (pair_i wins, pair_j wins, tie), ``l_judge`` (C_L, 3) judge outcome probabilities, ``l_mult``
    items per cell. Unlabelled cells: ``u_pair``, ``u_judge``, ``u_mult``.
    """

    n_models: int
    pair_i: np.ndarray
    pair_j: np.ndarray
    l_pair: np.ndarray
    l_human: np.ndarray
    l_judge: np.ndarray
    l_mult: np.ndarray
    u_pair: np.ndarray
    u_judge: np.ndarray
    u_mult: np.ndarray

    @property
    def n_labelled(self) -> float:
        return float(self.l_mult.sum())

    @property
    def n_unlabelled(self) -> float:
        return float(self.u_mult.sum())

    @property
    def judge_scale(self) -> float:
        """Mean human votes per labelled item: the weight of one judge verdict."""
        return float((self.l_mult * self.l_human.sum(1)).sum() / max(self.n_labelled, 1.0))


class Moments(NamedTuple):
    """Per-item averages at ``x``: bread ``h`` (all items), ``h_l`` (labelled items only: the classical
    bread, used at lam = 0 as ``ppi_py`` does) and the score covariances the variance is made of."""

    h: jax.Array
    h_l: jax.Array
    s_hh: jax.Array
    s_hf: jax.Array
    s_fl: jax.Array
    s_fu: jax.Array
    s_fa: jax.Array


class PPIFit(NamedTuple):
    x: np.ndarray
    lam: float
    covariance: np.ndarray
    covariance_human: np.ndarray
    h: np.ndarray
    converged: bool
    x_human: np.ndarray | None = None  # the human-only fit (lam = 0) on the labelled items; cov: covariance_human


def _pad(a: np.ndarray, size: int) -> np.ndarray:
    return np.concatenate([a, np.zeros((size - len(a),) + a.shape[1:], a.dtype)])


def pad_items(items: Items) -> Items:
    """Pad the cell arrays to powers of two with empty cells (multiplicity 0: they add nothing), so that
    repeated fits on different data reuse a handful of compiled shapes."""
    nl, nu, npairs = (1 << max(len(a) - 1, 0).bit_length() for a in (items.l_mult, items.u_mult, items.pair_i))
    extra = npairs - len(items.pair_i)  # empty pairs (0, 1): no cell points at them, so their counts stay 0
    return items._replace(pair_i=np.r_[items.pair_i, np.zeros(extra, np.int32)],
                          pair_j=np.r_[items.pair_j, np.ones(extra, np.int32)], l_pair=_pad(items.l_pair, nl),
                          l_human=_pad(items.l_human, nl),
                          l_judge=_pad(items.l_judge, nl), l_mult=_pad(items.l_mult, nl),
                          u_pair=_pad(items.u_pair, nu), u_judge=_pad(items.u_judge, nu),
                          u_mult=_pad(items.u_mult, nu))


def sizes(items: Items, include_labelled: bool) -> tuple[float, float, float]:
    """(n, m, N): labelled items, unlabelled items, items in the judge-on-all term."""
    n, m = items.n_labelled, items.n_unlabelled
    return n, m, m + (n if include_labelled else 0.0)


def combined_counts(items: Items, lam: float, include_labelled: bool = True) -> np.ndarray:
    """Per-pair outcome counts (P, 3) whose BT loss is ``n * L_lam``: ``H - lam F_L + lam n/N F_A``."""
    n, _, big_n = sizes(items, include_labelled)
    c = items.judge_scale
    r = lam * n / big_n if big_n else 0.0
    out = np.zeros((len(items.pair_i), 3))
    lab = items.l_human - lam * c * items.l_judge + (r * c * items.l_judge if include_labelled else 0.0)
    np.add.at(out, items.l_pair, items.l_mult[:, None] * lab)
    np.add.at(out, items.u_pair, items.u_mult[:, None] * (r * c) * items.u_judge)
    return out


# ------------------------------------------------------------------------------------ moments (pure JAX)


@float64
def cell_scores(d: jax.Array, psi: jax.Array, counts: jax.Array, ties: str) -> tuple[jax.Array, jax.Array]:
    """Per cell the score of ``-sum_o counts_o log p_o(d, psi)`` in (d, psi) (Bradley & Terry 1952)."""
    _, g_d, g_p, *_ = bt.outcome_derivatives(d, psi, ties)
    s_p = -jnp.sum(counts * g_p, -1)
    return -jnp.sum(counts * g_d, -1), (jnp.zeros_like(s_p) if ties == "half" else s_p)


@float64
def cell_information(d: jax.Array, psi: jax.Array, ties: str) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Expected information of one vote, per cell, in (d, psi): ``sum_o p_o (-d^2 log p_o)`` (Fisher)."""
    logp, _, _, h_dd, h_dp, h_pp = bt.outcome_derivatives(d, psi, ties)
    p = jax.nn.softmax(logp, axis=-1)  # 'half' is not a likelihood, but its d-curvature is label-free
    info = [-jnp.sum(p * h, -1) for h in (h_dd, h_dp, h_pp)]
    if ties == "half":
        info[1], info[2] = jnp.zeros_like(info[1]), jnp.zeros_like(info[2])
    return info[0], info[1], info[2]


@float64
def weighted_cov(i: jax.Array, j: jax.Array, size: int, w: jax.Array, u: tuple, v: tuple) -> jax.Array:
    """Symmetrised sample covariance (ddof 1) of score vectors ``u_d (e_i - e_j) + u_p e_psi`` and ``v``,
    cell ``c`` counted ``w_c`` times, assembled on the size x size parameter space."""
    tot = jnp.sum(w)

    def vec(a):
        out = jnp.zeros(size).at[i].add(w * a[0]).at[j].add(-w * a[0])
        return out.at[-1].add(jnp.sum(w * a[1]))

    su, sv = vec(u), vec(v)
    outer = bt.assemble(i, j, size, w * u[0] * v[0], w * (u[0] * v[1] + u[1] * v[0]) / 2, w * u[1] * v[1])
    centre = (jnp.outer(su, sv) + jnp.outer(sv, su)) / 2 / jnp.maximum(tot, 1.0)
    return (outer - centre) / jnp.maximum(tot - 1, 1.0)


@float64
@partial(jax.jit, static_argnames=("ties",))
def moments(x: jax.Array, li: jax.Array, lj: jax.Array, l_human: jax.Array, l_judge: jax.Array, l_mult: jax.Array,
            ui: jax.Array, uj: jax.Array, u_judge: jax.Array, u_mult: jax.Array, scale: float,
            ties: str = "half") -> Moments:
    """Bread and score covariances at ``x`` (cells by model indices ``li, lj`` / ``ui, uj``)."""
    size = x.shape[0]
    psi = x[-1]
    dl, du = x[li] - x[lj], x[ui] - x[uj]
    g_h = cell_scores(dl, psi, l_human, ties)
    g_f = cell_scores(dl, psi, scale * l_judge, ties)
    g_u = cell_scores(du, psi, scale * u_judge, ties)
    il, iu = cell_information(dl, psi, ties), cell_information(du, psi, ties)
    wl, wu = l_mult * jnp.sum(l_human, -1), u_mult * scale  # human votes behind each cell's information
    h_lab = bt.assemble(li, lj, size, *(wl * a for a in il))
    h = (h_lab + bt.assemble(ui, uj, size, *(wu * a for a in iu))) / (jnp.sum(l_mult) + jnp.sum(u_mult))
    h_lab = h_lab / jnp.sum(l_mult)
    if ties == "half":
        h, h_lab = h.at[-1, -1].add(1.0), h_lab.at[-1, -1].add(1.0)
    return Moments(h, h_lab, weighted_cov(li, lj, size, l_mult, g_h, g_h), weighted_cov(li, lj, size, l_mult, g_h, g_f),
                   weighted_cov(li, lj, size, l_mult, g_f, g_f), weighted_cov(ui, uj, size, u_mult, g_u, g_u),
                   weighted_cov(jnp.r_[li, ui], jnp.r_[lj, uj], size, jnp.r_[l_mult, u_mult],
                                tuple(jnp.r_[p, q] for p, q in zip(g_f, g_u, strict=True)),
                                tuple(jnp.r_[p, q] for p, q in zip(g_f, g_u, strict=True))))


def variance_terms(mom: Moments, n: float, m: float, big_n: float, include_labelled: bool, pooled: bool = False):
    """``V(lam) = v0 + lam v1 + lam^2 v2`` for the per-item-average rectified gradient (two strata).

    ``pooled``: one judge-score covariance over all items in both strata (a steadier estimate; what PPI++
    and ``ppi_py`` use to tune lam), else each stratum's own (the variance that is reported)."""
    b = (1.0 / big_n if (include_labelled and big_n) else 0.0) - 1.0 / n
    g = 1.0 / big_n if big_n else 0.0
    v0 = mom.s_hh / n
    v1 = 2.0 * b * mom.s_hf
    s_fl, s_fu = (mom.s_fa, mom.s_fa) if pooled else (mom.s_fl, mom.s_fu)
    v2 = n * b * b * s_fl + (m * g * g * s_fu if m > 1 else 0.0)
    return v0, v1, v2


def _sandwich(h_inv: np.ndarray, v: np.ndarray) -> np.ndarray:
    cov = h_inv @ v @ h_inv
    return (cov + cov.T) / 2


def optimal_lambda(h_inv: np.ndarray, v1: np.ndarray, v2: np.ndarray, n_models: int,
                   contrasts: np.ndarray | None = None) -> float:
    """Trace-optimal lam (PPI++ eq. 8), clipped to [0, 1] (lam = 0: judge unused).

    The trace is over ``contrasts @ theta`` (default: the centred strengths, what the leaderboard reports;
    ``ppi_py`` on a design without model 0 minimises over ``theta_k - theta_0``)."""
    m = elo.elo_matrix(n_models) if contrasts is None else np.asarray(contrasts)
    t1, t2 = _trace(_sandwich(h_inv, v1), m), _trace(_sandwich(h_inv, v2), m)
    if not t2 > 0:
        return 0.0
    return float(np.clip(-t1 / (2 * t2), 0.0, 1.0))


def cell_models(items: Items) -> tuple[np.ndarray, ...]:
    """Model indices of every labelled and unlabelled cell: (li, lj, ui, uj)."""
    return (items.pair_i[items.l_pair], items.pair_j[items.l_pair], items.pair_i[items.u_pair],
            items.pair_j[items.u_pair])


@float64
def item_moments(x: np.ndarray, items: Items, ties: str) -> Moments:
    li, lj, ui, uj = cell_models(items)
    mom = moments(jnp.asarray(x), li, lj, items.l_human, items.l_judge, items.l_mult, ui, uj, items.u_judge,
                  items.u_mult, items.judge_scale, ties)
    return Moments(*(np.asarray(a) for a in mom))


def pair_information_weights(items: Items) -> np.ndarray:
    """Human votes per pair behind the expected information, scaled to the n labelled items' total: the
    labelled items' votes plus ``judge_scale`` per unlabelled item, times n / (n + m)."""
    w = np.zeros(len(items.pair_i))
    np.add.at(w, items.l_pair, items.l_mult * items.l_human.sum(1))
    np.add.at(w, items.u_pair, items.u_mult * items.judge_scale)
    return w * items.n_labelled / max(items.n_labelled + items.n_unlabelled, 1.0)


@float64
@partial(jax.jit, static_argnames=("ties",))
def fisher_information(x: jax.Array, i: jax.Array, j: jax.Array, weights: jax.Array, ties: str = "half",
                       ridge: float = bt.DEFAULT_RIDGE) -> jax.Array:
    """Expected information of the pairs at ``x`` (``weights`` votes each), ridge added, conditioned."""
    info = cell_information(x[i] - x[j], x[-1], ties)
    h = bt.assemble(i, j, x.shape[0], *(weights * a for a in info))
    h = h + ridge * jnp.diag(jnp.ones(x.shape[0]).at[-1].set(0.0))
    h = h.at[-1, -1].add(1.0) if ties == "half" else h
    return bt.condition(h, x.shape[0] - 1)


@float64
@partial(jax.jit, static_argnames=("ties", "max_iter"))
def fisher_scoring(x0: jax.Array, data: bt.PairData, weights: jax.Array, ties: str = "half",
                   ridge: float = bt.DEFAULT_RIDGE, tol: float = 1e-9, max_iter: int = 200):
    """Solve ``grad L_lam = 0`` by Fisher scoring ``x <- x - I(x)^-1 grad`` (Osborne 1992, Int. Stat. Rev.
    60:99) from the human-only fit. The rectified loss has negative counts where the judge is corrected, so
    it can be unbounded below on sparse designs; Newton would descend there, while the expected information
    is positive definite and scoring finds the root of the estimating equation (the PPI++ estimator)."""
    scale = tol * (1.0 + jnp.sum(jnp.abs(data.counts)))

    def step(state):
        x, it, _ = state
        x = x - jnp.linalg.solve(fisher_information(x, data.i, data.j, weights, ties, ridge),
                                 bt.gradient(x, data, ties, ridge))
        return x, it + 1, jnp.max(jnp.abs(bt.gradient(x, data, ties, ridge))) < scale

    def go(state):
        return (~state[2]) & (state[1] < max_iter) & jnp.all(jnp.isfinite(state[0]))

    x, it, done = jax.lax.while_loop(go, step, (jnp.asarray(x0, jnp.float64), 0, False))
    return x, done


@float64
def fit_items(items: Items, lam: float, ties: str = "half", include_labelled: bool = True,
              ridge: float = bt.DEFAULT_RIDGE) -> tuple[np.ndarray, bool, bt.PairData]:
    """Solve the rectified estimating equation at a fixed ``lam``: (x, converged, the combined pair data).

    lam = 0 is the human-only BT fit (Newton, :func:`arena.bt.likelihood.fit`); otherwise Fisher scoring from it."""
    human = bt.PairData(items.pair_i, items.pair_j, combined_counts(items, 0.0, include_labelled))
    res = bt.fit(bt.initial_x(human, items.n_models, ties), human, ties, ridge)
    if lam == 0:
        return np.asarray(res.x), bool(res.converged), human
    data = bt.PairData(items.pair_i, items.pair_j, combined_counts(items, lam, include_labelled))
    x, ok = fisher_scoring(res.x, data, pair_information_weights(items), ties, ridge)
    return np.asarray(x), bool(ok), data


def _trace(cov: np.ndarray, m: np.ndarray) -> float:
    k = m.shape[1]
    return float(np.trace(m @ cov[:k, :k] @ m.T))


@float64
def exact_bread(x: np.ndarray, items: Items, lam: float, ties: str, include_labelled: bool,
                ridge: float = bt.DEFAULT_RIDGE) -> np.ndarray:
    """The Jacobian of the per-item rectified estimating equation at ``x``: the Hessian of ``L_lam``
    (:func:`arena.bt.likelihood.hessian` on the combined counts, divided by n). At lam = 0 it is the classical bread."""
    data = bt.PairData(items.pair_i, items.pair_j, combined_counts(items, lam, include_labelled))
    return np.asarray(bt.hessian(jnp.asarray(x), data, ties, ridge)) / items.n_labelled


def _positive_definite(h: np.ndarray, k: int) -> bool:
    return bool(np.linalg.eigvalsh(bt.condition(h, k)).min() > 0)


def _grid_lambda(h0: np.ndarray, h1: np.ndarray, v: tuple, mat: np.ndarray, grid: int) -> float:
    """lam in ``linspace(0, 1, grid)`` minimising ``tr(M H(t)^-1 V(t) H(t)^-1 M^T)`` over the grid points where
    the bread ``H(t) = h0 + t h1`` is positive definite (a Cholesky factorisation exists), ``V(t) = v0 + t v1
    + t^2 v2``. The conditioning of :func:`arena.bt.likelihood.condition` is linear in ``H``, so it is applied
    once to each term; each point is one Cholesky factorisation and two triangular solves (about 50x faster than an
    eigendecomposition and a pseudo-inverse per point)."""
    from scipy.linalg import cho_factor, cho_solve

    k = mat.shape[1]
    c0, c1 = np.asarray(bt.condition(h0, k)), np.asarray(bt.condition(h1, k))
    rhs = np.zeros((h0.shape[0], k))
    rhs[:k] = mat.T
    best = (np.inf, 0.0)
    for t in np.linspace(0.0, 1.0, grid):
        try:
            x = cho_solve(cho_factor(c0 + t * c1), rhs)  # H^-1 M^T
        except np.linalg.LinAlgError:  # not positive definite at this lam
            continue
        vt = v[0] + t * v[1] + t * t * v[2]
        best = min(best, (float(np.sum(x * (((vt + vt.T) / 2) @ x))), float(t)))
    return best[1]


@float64
def fit_ppi(items: Items, lam: float | None = None, ties: str = "half", include_labelled: bool = True,
            ridge: float = bt.DEFAULT_RIDGE, contrasts: np.ndarray | None = None, bread: str = "exact",
            grid: int = 51, guard: bool = True) -> PPIFit:
    """PPI++ fit: lam tuned (``None``) or fixed; strengths, lam, the PPI++ sandwich and the human-only one.

    ``bread="exact"`` (default): the Jacobian of the rectified equation (:func:`exact_bread`), which is the
    classical bread at lam = 0 and follows the design actually labelled; lam minimises the estimated total
    variance over a grid on [0, 1] that includes 0, so the estimated gain is never below 1 at the tuning point.
    ``bread="pooled"`` (PPI++ paper, ``ppi_py``; kept for parity): the expected information averaged over all
    items, lam in closed form at the lam = 1 fit (``ppi_py``'s recipe). On sparse labelled designs it is not
    continuous at lam = 0: a judge tuned to lam ~ 1e-5 reported ESS gains of 1.1-1.5 on LLMFAO, all of them
    from the bread (the pooled information is larger than the labelled one), with coverage below human-only.
    ``guard`` (tuned lam only): return the human-only fit (lam = 0) when the PPI total variance at the final fit
    exceeds the human-only one, so a judge never widens the intervals. The human-only covariance is the classical
    sandwich (lam = 0 fit, labelled bread). When the rectified
    equation has no root, the human-only fit is returned with lam = 0 and ``converged`` False.
    """
    from threadpoolctl import threadpool_limits

    # 1 BLAS thread: these are (K+1)^2 matrices; a multi-threaded OpenBLAS on a busy machine made each
    # factorisation ~50x slower (bench_ppi: the exact-bread grid 4.6 s -> 0.65 s)
    with threadpool_limits(1, user_api="blas"):
        return _fit_ppi(items, lam, ties, include_labelled, ridge, contrasts, bread, grid, guard)


def _fit_ppi(items: Items, lam: float | None = None, ties: str = "half", include_labelled: bool = True,
            ridge: float = bt.DEFAULT_RIDGE, contrasts: np.ndarray | None = None, bread: str = "exact",
            grid: int = 51, guard: bool = True) -> PPIFit:
    """:func:`fit_ppi` without the BLAS thread limit."""
    n, m, big_n = sizes(items, include_labelled)
    if n < 2:
        raise ValueError(f"PPI needs at least 2 items with both human votes and a judge label; got {n:g}")
    if bread not in ("exact", "pooled"):
        raise ValueError(f"bread must be 'exact' or 'pooled', not {bread!r}")
    k = items.n_models
    mat = elo.elo_matrix(k) if contrasts is None else np.asarray(contrasts)

    def inv(h):  # pinv: a model that never lost (no finite MLE) makes the information singular
        return np.linalg.pinv(bt.condition(h, k), hermitian=True)

    x0, ok0, _ = fit_items(items, 0.0, ties, include_labelled, ridge)
    mom0 = item_moments(x0, items, ties)
    cov0 = _sandwich(inv(mom0.h_l), mom0.s_hh / n)
    tuned = lam is None
    if lam is None:
        x1, ok1, _ = fit_items(items, 1.0, ties, include_labelled, ridge)
        xt = x1 if ok1 else x0  # tune at the human fit if lam = 1 has no root
        mom = item_moments(xt, items, ties)
        v0, v1, v2 = variance_terms(mom, n, m, big_n, include_labelled, pooled=True)
        if bread == "pooled":
            lam = optimal_lambda(inv(mom.h), v1, v2, k, contrasts)
        else:
            h0 = exact_bread(xt, items, 0.0, ties, include_labelled, ridge)
            h1 = exact_bread(xt, items, 1.0, ties, include_labelled, ridge) - h0
            lam = _grid_lambda(h0, h1, (v0, v1, v2), mat, grid)
    if lam > 0:
        x, ok, _ = fit_items(items, lam, ties, include_labelled, ridge)
        if ok:
            mom = item_moments(x, items, ties)
            v0, v1, v2 = variance_terms(mom, n, m, big_n, include_labelled)
            h = mom.h if bread == "pooled" else exact_bread(x, items, lam, ties, include_labelled, ridge)
            cov = _sandwich(inv(h), v0 + lam * v1 + lam**2 * v2)
            # keep the judge only if it narrows the estimated intervals at the final fit: on sparse designs
            # the moments at the tuning fit can mislead (a selection between two estimators; see docs/ppi.md)
            narrower = not (guard and tuned) or _trace(cov, mat) <= _trace(cov0, mat)
            if (bread == "pooled" or _positive_definite(h, k)) and narrower:
                return PPIFit(x, float(lam), cov, cov0, h, True, x0)
            return PPIFit(x0, 0.0, cov0, cov0, mom0.h_l, ok0, x0)
    # lam = 0, or the rectified equation has no root (sparse human data): the human-only fit
    return PPIFit(x0, 0.0, cov0, cov0, mom0.h_l, ok0 and lam == 0, x0)
