"""Length-controlled (LC) win rates: the AlpacaEval GLM (Dubois et al. 2024, arXiv:2404.04475) in JAX.

For model ``m`` judged against a fixed baseline on instruction ``i`` with soft preference ``y`` in [0, 1]
(probability that the model's output is preferred), the GLM is

    logit P(model preferred) = theta_m + beta_m * tanh(s_mi) + psi_m * gamma_i

with ``s_mi`` the character-length difference (model minus baseline) divided by its standard deviation over
model ``m``'s rows, and ``gamma_i`` an instruction-difficulty estimated jointly over all models (or supplied).
The LC win rate is the mean predicted preference with the length term set to zero.

Two fitting stages, both exact cross-entropy on probabilities (no duplicated rows), as AlpacaEval's
``notebooks/instruction_difficulty.ipynb`` and ``metrics/glm_winrate.py``:

1. :func:`fit_difficulty` - one joint fit over all models: per-model ``theta`` and length slope, and a
   weakly ridge-penalised ``gamma`` per instruction (AlpacaEval: a nearly unpenalised joint logistic fit).
2. :func:`fit_model_glm` - per model (vmapped), a Newton fit of ``(theta, beta, psi)``. AlpacaEval's only
   effective regulariser is the "gamed" verbose/concise rewrites of the baseline judged against it (total
   weight 0.2, sharing ``beta``/``psi``, no model term); its L1 penalty has a cross-validated C that is
   negligible at 805 rows. Gamed rows are used when given. Without them a Gaussian stand-in for those rows
   pulls ``beta`` and ``psi`` towards the judge's coefficients on content-preserving rewrites
   (``LCPenalty.length_centre``, ``LCPenalty.difficulty_centre``), with about the gamed rows' information.

Arrays are (models, instructions) grids with a row weight (0/1 mask, or bootstrap counts). A bootstrap
replicate is multinomial instruction counts; everything estimated from the data (length standardisation,
instruction difficulty, per-model fits) is refitted in every replicate, vmapped
(:func:`arena.lc.bootstrap.bootstrap_lc`); :func:`arena.lc.board.lc_leaderboard` puts it together.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp

from arena.jax_setup import float64

Array = jax.Array


@dataclass(frozen=True)
class LCPenalty:
    """Regularisation of the LC GLM (ridge strengths; the loss is a sum over rows, so they count as rows).

    ``length``/``difficulty`` pull each model's ``beta``/``psi`` towards ``length_centre`` and
    ``difficulty_centre``: a Gaussian stand-in for AlpacaEval's gamed-baseline rows (weight 0.2 x 805 rows carry
    about 10 rows' worth of information on each coefficient), used only when no gamed rows are given. The
    centres are the judge's own coefficients on content-preserving rewrites of the baseline: AlpacaEval's
    published fits of its verbose and concise GPT-4-turbo rewrites (``metrics/weights/
    weighted_alpaca_eval_gpt4_turbo/length_controlled_v1/baseline_gpt4_1106_preview.csv``, rows
    ``gpt4_1106_preview_verbose``/``_concise``) have length slopes 1.583 and 1.642 (mean 1.61) and
    instruction-difficulty coefficients 0.833 and 0.684 (mean 0.76). They are the default judge's values: for
    another judge supply gamed rows or set them; ``length_centre=None`` uses the median per-model slope of the
    joint fit (data-driven, refitted per replicate, but confounded with quality and steeper). ``theta`` shrinks
    the model term to 0 (off by default); ``instruction`` is the ridge on ``gamma`` in the joint fit (0.05: a
    N(0, 3.2^2) prior, nearly unpenalised as AlpacaEval's, only keeping a one-sided instruction finite);
    ``gamed_weight`` is AlpacaEval's total weight of the gamed-baseline rows (0.2).
    """

    theta: float = 0.0
    length: float = 10.0
    difficulty: float = 10.0
    length_centre: float | None = 1.61
    difficulty_centre: float = 0.76
    instruction: float = 0.05
    gamed_weight: float = 0.2


class LCGrid(NamedTuple):
    """Soft labels ``y``, ``tanh(std_delta_len)`` and a row weight ``mask`` (0/1, or counts), each (models, instr)."""

    y: Array
    tanh_len: Array
    mask: Array


class LCData(NamedTuple):
    """The raw (models, instructions) inputs: soft labels, both output lengths and the 0/1 presence mask."""

    y: Array
    model_len: Array
    baseline_len: Array
    mask: Array


class Prior(NamedTuple):
    """Centre and strength of the stage-2 ridge: ``(theta0, beta0, psi0)`` and their penalties."""

    centre: Array
    strength: Array


class JointFit(NamedTuple):
    """Stage-1 estimates: ``gamma`` (instructions), per-model ``theta`` and length slope ``beta``."""

    gamma: Array
    theta: Array
    beta: Array


@float64
def soft_cross_entropy(eta: Array, y: Array) -> Array:
    """Cross-entropy of probability ``y`` against ``sigmoid(eta)``, exact for soft labels (no row duplication)."""
    return -(y * jax.nn.log_sigmoid(eta) + (1.0 - y) * jax.nn.log_sigmoid(-eta))


@float64
def tanh_std_delta_len(model_len: Array, baseline_len: Array, weight: Array) -> Array:
    """``tanh((len_model - len_baseline) / sd)`` per model row, sd over that model's rows (ddof=1), as AlpacaEval.

    ``weight`` is the 0/1 mask or bootstrap counts (the sd of the resampled rows). AlpacaEval uses baseline
    minus model; tanh is odd, so only the sign of ``beta`` differs. Reference: Dubois et al. 2024, eq. (2).
    """
    delta = model_len - baseline_len
    n = weight.sum(axis=-1, keepdims=True)
    mean = (weight * delta).sum(axis=-1, keepdims=True) / n
    sd = jnp.sqrt((weight * (delta - mean) ** 2).sum(axis=-1, keepdims=True) / (n - 1))
    return jnp.where(weight > 0, jnp.tanh(delta / jnp.where(sd > 0, sd, 1.0)), 0.0)


@float64
def lc_grid(data: LCData, weight: Array | None = None) -> LCGrid:
    """The GLM grid of ``data`` under row weights (default its mask): the length standardisation uses them."""
    w = data.mask if weight is None else weight
    return LCGrid(data.y, tanh_std_delta_len(data.model_len, data.baseline_len, w), w)


@float64
def with_baseline_row(grid: LCGrid, instr_weight: Array) -> LCGrid:
    """``grid`` plus one row for the baseline judged against itself: preference 0.5 and equal lengths on every
    instruction by definition, weighted like the instructions. AlpacaEval's joint fit of the instruction
    difficulty includes the baseline's own annotations (``notebooks/instruction_difficulty.ipynb`` fits every
    leaderboard model that has them); the row pulls the instructions' ``gamma`` towards a common value.
    """
    w = jnp.broadcast_to(instr_weight, grid.y.shape[1:])[None, :]
    return LCGrid(jnp.concatenate([grid.y, jnp.full_like(w, 0.5)]),
                  jnp.concatenate([grid.tanh_len, jnp.zeros_like(w)]), jnp.concatenate([grid.mask, w]))


@float64
def difficulty_loss(params: tuple[Array, Array, Array], grid: LCGrid, ridge: Array) -> Array:
    """Stage-1 joint loss: ``logit p_mi = theta_m + beta_m * tanh_mi + gamma_i``, ridge ``sum ridge_i gamma_i^2``.

    Per-model slopes as AlpacaEval's joint fit (``C(generator_2):tanh(...) + C(generator_2) + C(index)``);
    ``ridge`` is a scalar or one per instruction. Reference: Dubois et al. 2024, sec. 3 (instruction difficulty).
    """
    theta, beta, gamma = params
    eta = theta[:, None] + beta[:, None] * grid.tanh_len + gamma[None, :]
    return (grid.mask * soft_cross_entropy(eta, grid.y)).sum() + jnp.sum(ridge * gamma**2)


@float64
def fit_difficulty(grid: LCGrid, ridge: float | Array, gamma: Array | None = None) -> JointFit:
    """Joint fit over all models (:func:`difficulty_loss`); with ``gamma`` given it is kept fixed.

    Newton's method with step halving. The Hessian's instruction block is diagonal, so each step solves only
    a (2 x models) Schur complement: O(models^2 x instructions) per step.
    """
    fixed = gamma is not None
    g0 = jnp.asarray(gamma, float) if fixed else jnp.zeros(grid.y.shape[1])
    ridge = jnp.broadcast_to(jnp.asarray(ridge, float), grid.y.shape[1:])
    a, g, _ = solve_difficulty(grid, ridge, jnp.zeros(2 * grid.y.shape[0]), g0, fixed)
    n = grid.y.shape[0]
    return JointFit(g, a[:n], a[n:])


def _difficulty_gradient(grid: LCGrid, ridge: Array, a: Array, g: Array):
    """Gradient of :func:`difficulty_loss` at ``a = [theta; beta]``, ``g``, and the IRLS weights."""
    n = grid.y.shape[0]
    t, m = grid.tanh_len, grid.mask
    p = jax.nn.sigmoid(a[:n, None] + a[n:, None] * t + g[None, :])
    r = m * (p - grid.y)
    return jnp.concatenate([r.sum(1), (r * t).sum(1)]), r.sum(0) + 2 * ridge * g, m * p * (1 - p)


def _gradient_norm(grid: LCGrid, ridge: Array, a: Array, g: Array, fixed: bool) -> Array:
    g_a, g_g, _ = _difficulty_gradient(grid, ridge, a, g)
    return jnp.max(jnp.abs(g_a)) if fixed else jnp.maximum(jnp.max(jnp.abs(g_a)), jnp.max(jnp.abs(g_g)))


def _difficulty_hessian(grid: LCGrid, ridge: Array, a: Array, g: Array, fixed: bool):
    """The Newton system of :func:`difficulty_loss`, factored: 2 x 2 blocks per model and, unless ``gamma``
    is fixed, the Cholesky factor of the (2 x models) Schur complement over the diagonal gamma block."""
    _, _, w = _difficulty_gradient(grid, ridge, a, g)
    wt = w * grid.tanh_len
    h0, h1, h2 = w.sum(1) + 1e-9, wt.sum(1), (wt * grid.tanh_len).sum(1) + 1e-9
    if fixed:
        return h0, h1, h2
    h_aa = jnp.block([[jnp.diag(h0), jnp.diag(h1)], [jnp.diag(h1), jnp.diag(h2)]])
    b = jnp.concatenate([w, wt])  # (2 models, instructions) off-diagonal block
    d = w.sum(0) + 2 * ridge  # diagonal instruction block
    return jax.scipy.linalg.cho_factor(h_aa - (b / d) @ b.T), b, d


def _newton_solve(hess, g_a: Array, g_g: Array, fixed: bool) -> tuple[Array, Array]:
    """Solve the factored system of :func:`_difficulty_hessian` for the gradient ``(g_a, g_g)``."""
    if fixed:
        h0, h1, h2 = hess
        n = h0.shape[0]
        det = h0 * h2 - h1**2
        d_a = jnp.concatenate([(h2 * g_a[:n] - h1 * g_a[n:]) / det, (h0 * g_a[n:] - h1 * g_a[:n]) / det])
        return d_a, jnp.zeros_like(g_g)
    chol, b, d = hess
    d_a = jax.scipy.linalg.cho_solve(chol, g_a - b @ (g_g / d))
    return d_a, (g_g - b.T @ d_a) / d


def _difficulty_direction(grid: LCGrid, ridge: Array, a: Array, g: Array, fixed: bool) -> tuple[Array, Array]:
    """Newton direction of :func:`difficulty_loss` at ``a = [theta; beta]``, ``g``."""
    g_a, g_g, _ = _difficulty_gradient(grid, ridge, a, g)
    return _newton_solve(_difficulty_hessian(grid, ridge, a, g, fixed), g_a, g_g, fixed)


@float64
def chord_difficulty(grid: LCGrid, ridge: Array, a0: Array, gamma0: Array, fixed: bool,
                     n_iter: int = 8, n_rounds: int = 1) -> tuple[Array, Array, Array]:
    """Chord Newton for starts near the optimum, as bootstrap warm starts: the Hessian is factored at the start
    of each of ``n_rounds`` rounds (one O(models^2 x instructions) factorisation), then ``n_iter`` O(models x
    instructions) steps reuse it, converging linearly; a new round refactors at the point reached (Shamanskii's
    method), so a replicate far from the full-data fit (an adversarial model such as NullModel) still converges
    without the fallback. Returns ``(a, gamma, |gradient|_inf)``; callers fall back to :func:`solve_difficulty`
    when it is large.
    Reference: Kelley 1995, "Iterative Methods for Linear and Nonlinear Equations", sec. 5.4 (chord method,
    Shamanskii's method).
    """
    a, g = a0, gamma0
    for _ in range(n_rounds):
        hess = _difficulty_hessian(grid, ridge, a, g, fixed)

        def step(_: int, state: tuple[Array, Array], hess=hess) -> tuple[Array, Array]:
            a, g = state
            g_a, g_g, _ = _difficulty_gradient(grid, ridge, a, g)
            d_a, d_g = _newton_solve(hess, g_a, g_g, fixed)
            return a - d_a, g - d_g

        a, g = jax.lax.fori_loop(0, n_iter, step, (a, g))
    return a, g, _gradient_norm(grid, ridge, a, g, fixed)


def raises(f_new: Array, f0: Array) -> Array:
    """A step raises the loss: by more than its rounding error (1e-12 relative). A converged Newton step changes
    the loss only by rounding; comparing with ``>`` alone halved it 14 times at every later iteration, each
    halving a pass over every row (Nocedal & Wright 2006, 3.1: backtracking, here with a rounding allowance)."""
    return f_new > f0 + 1e-12 * (1.0 + jnp.abs(f0))


@float64
def difficulty_tolerance(grid: LCGrid) -> Array:
    """Convergence threshold of the joint fit's gradient (the loss is a sum over rows)."""
    return 1e-10 * (1.0 + grid.mask.sum())


@partial(jax.jit, static_argnames=("fixed", "max_iter"))
def solve_difficulty(grid: LCGrid, ridge: Array, a0: Array, gamma0: Array, fixed: bool,
                      max_iter: int = 100) -> tuple[Array, Array, Array]:
    """Damped Newton from ``(a0, gamma0)``; returns ``(a, gamma, |gradient|_inf)``."""
    n = grid.y.shape[0]
    tol = difficulty_tolerance(grid)

    def loss(a: Array, g: Array) -> Array:
        return difficulty_loss((a[:n], a[n:], g), grid, ridge)

    def step(state):
        a, g, it, _ = state
        d_a, d_g = _difficulty_direction(grid, ridge, a, g, fixed)
        f0 = loss(a, g)

        def worse(u):
            return raises(loss(a - u * d_a, g - u * d_g), f0) & (u > 1e-4)

        u = jax.lax.while_loop(worse, lambda u: u * 0.5, 1.0)
        a, g = a - u * d_a, g - u * d_g
        return a, g, it + 1, _gradient_norm(grid, ridge, a, g, fixed)

    state = (a0, gamma0, 0, _gradient_norm(grid, ridge, a0, gamma0, fixed))
    a, g, _, gnorm = jax.lax.while_loop(lambda s: (s[3] >= tol) & (s[2] < max_iter), step, state)
    return a, g, gnorm


def _design(tanh_len: Array, gamma: Array, is_model: float) -> Array:
    """Rows ``[is_model, tanh_len, gamma]`` of the stage-2 design."""
    return jnp.stack([jnp.full_like(tanh_len, is_model), tanh_len, gamma], axis=-1)


@float64
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


def _grad_hess(params: Array, y: Array, tanh_len: Array, weight: Array, gamma: Array,
               gamed: LCGrid, gamed_weight: float, prior: Prior) -> tuple[Array, Array]:
    """Analytic gradient and Hessian of :func:`model_loss` (IRLS form ``X^T W X``)."""
    return _loss_grad_hess(params, y, tanh_len, weight, gamma, gamed, gamed_weight, prior)[1:]


def _sym3(a: Array, b: Array, c: Array, d: Array, e: Array, f: Array) -> Array:
    """The symmetric 3 x 3 matrix ``[[a, b, c], [b, d, e], [c, e, f]]``."""
    return jnp.stack([jnp.stack([a, b, c]), jnp.stack([b, d, e]), jnp.stack([c, e, f])])


def solve3(h: Array, g: Array) -> Array:
    """``h^{-1} g`` for a symmetric positive-definite 3 x 3 ``h`` by its adjugate (Cramer's rule): elementwise
    arithmetic, which vmaps over thousands of fits without a batched LAPACK call per matrix."""
    c00 = h[1, 1] * h[2, 2] - h[1, 2] ** 2
    c01 = h[0, 2] * h[1, 2] - h[0, 1] * h[2, 2]
    c02 = h[0, 1] * h[1, 2] - h[0, 2] * h[1, 1]
    c11 = h[0, 0] * h[2, 2] - h[0, 2] ** 2
    c12 = h[0, 1] * h[0, 2] - h[0, 0] * h[1, 2]
    c22 = h[0, 0] * h[1, 1] - h[0, 1] ** 2
    det = h[0, 0] * c00 + h[0, 1] * c01 + h[0, 2] * c02
    return _sym3(c00, c01, c02, c11, c12, c22) @ g / det


def _row_sums(eta: Array, y: Array, w: Array, x1: Array, x2: Array) -> tuple[Array, Array, Array]:
    """Loss, ``sum r [1, x1, x2]`` and the six ``sum h x x^T`` entries of weighted soft cross-entropy rows with
    linear predictor ``eta``: one pass, sums only (``r = w (p - y)``, ``h = w p (1 - p)``)."""
    p = jax.nn.sigmoid(eta)
    log_p = jax.nn.log_sigmoid(eta)  # for the loss only: compiled away where the loss is unused
    r, h = w * (p - y), w * p * (1.0 - p)
    loss = -(w * (log_p - (1.0 - y) * eta)).sum()
    hx1, hx2 = h * x1, h * x2
    return (loss, jnp.stack([r.sum(), (r * x1).sum(), (r * x2).sum()]),
            jnp.stack([h.sum(), hx1.sum(), hx2.sum(), (hx1 * x1).sum(), (hx1 * x2).sum(), (hx2 * x2).sum()]))


def _loss_grad_hess(params: Array, y: Array, tanh_len: Array, weight: Array, gamma: Array,
                    gamed: LCGrid, gamed_weight: float, prior: Prior) -> tuple[Array, Array, Array]:
    """:func:`model_loss`, its gradient and Hessian at ``params`` in one pass over the rows (the IRLS sums
    ``X^T W X`` written out for the 3-column design, so vmapped fits need no batched matrix products)."""
    f, g, h = _row_sums(params[0] + params[1] * tanh_len + params[2] * gamma, y, weight, tanh_len, gamma)
    if gamed.y.shape[0]:  # gamed rows: no model term, so only the (beta, psi) entries
        gg = jnp.broadcast_to(gamma, gamed.y.shape)
        wg = gamed_weight / gamed.y.shape[0] * gamed.mask
        fg, g_g, h_g = _row_sums(params[1] * gamed.tanh_len + params[2] * gg, gamed.y, wg, gamed.tanh_len, gg)
        f, g = f + fg, g + g_g.at[0].set(0.0)
        h = h + jnp.stack([0.0, 0.0, 0.0, h_g[3], h_g[4], h_g[5]])
    d = params - prior.centre
    hess = _sym3(*h) + 2 * jnp.diag(prior.strength)
    return f + jnp.sum(prior.strength * d**2), g + 2 * prior.strength * d, hess


@float64
def fit_model_glm(y: Array, tanh_len: Array, weight: Array, gamma: Array, gamed: LCGrid,
                  gamed_weight: float, prior: Prior, start: Array, n_iter: int = 25,
                  damped: bool = True) -> tuple[Array, Array]:
    """Newton fit of one model's ``(theta, beta, psi)``; returns ``(params, |gradient|_inf)``.

    Steps are capped at length 5 so near-separable soft labels cannot overshoot, and halved while they raise
    the loss (an undamped step cycles on adversarial outputs such as AlpacaEval's NullModel). Each trial point's
    loss, gradient and Hessian come from one pass over the rows (:func:`_loss_grad_hess`), and an accepted
    point's are carried into the next step. Reference: IRLS for the logistic GLM (McCullagh & Nelder 1989,
    sec. 4.4) with the AlpacaEval design (Dubois et al. 2024); Nocedal & Wright (2006), 3.1 (backtracking).
    ``damped=False`` takes the capped full steps without evaluating the loss (bootstrap warm starts, which
    start near the optimum; the caller refits with damping where the gradient stays large).
    """

    def at(params: Array) -> tuple[Array, Array, Array]:
        return _loss_grad_hess(params, y, tanh_len, weight, gamma, gamed, gamed_weight, prior)

    def step(_: int, state: tuple[Array, Array, Array, Array]) -> tuple[Array, Array, Array, Array]:
        params, f0, grad, hess = state
        delta = solve3(hess + 1e-9 * jnp.eye(3), grad)
        delta = delta * jnp.minimum(1.0, 5.0 / jnp.maximum(jnp.linalg.norm(delta), 1e-12))
        if not damped:
            return (params - delta, *at(params - delta))

        def halve(s: tuple) -> tuple:
            u = s[0] * 0.5
            return (u, *at(params - u * delta))

        u, f, g, h = jax.lax.while_loop(lambda s: raises(s[1], f0) & (s[0] > 1e-4), halve,
                                        (1.0, *at(params - delta)))
        return params - u * delta, f, g, h

    params, _, grad, _ = jax.lax.fori_loop(0, n_iter, step, (start, *at(start)))
    return params, jnp.max(jnp.abs(grad))


@float64
def lc_win_rate(params: Array, gamma: Array, weight: Array) -> Array:
    """Mean predicted preference with the length term zeroed: ``mean_i sigmoid(theta + psi * gamma_i)``.

    Reference: Dubois et al. 2024, eq. (3).
    """
    p = jax.nn.sigmoid(params[0] + params[2] * gamma)
    return (weight * p).sum() / weight.sum()


@float64
def raw_win_rate(y: Array, weight: Array) -> Array:
    """AlpacaEval's win rate: mean soft preference (ties count 0.5), here with row weights."""
    return (weight * y).sum() / weight.sum()


@float64
def fit_all_models(grid: LCGrid, weight: Array, gamma: Array, gamed: LCGrid, gamed_weight: float,
                   prior: Prior, start: Array, n_iter: int = 25, damped: bool = True) -> dict[str, Array]:
    """Fit every model (vmapped) under per-row ``weight`` (models, instructions); LC and raw win rates too."""

    def one(y: Array, t: Array, w: Array, p0: Array) -> tuple[Array, Array, Array, Array]:
        params, gnorm = fit_model_glm(y, t, w, gamma, gamed, gamed_weight, prior, p0, n_iter, damped)
        return params, gnorm, lc_win_rate(params, gamma, w), raw_win_rate(y, w)

    params, gnorm, lc, raw = jax.vmap(one)(grid.y, grid.tanh_len, weight, start)
    return {"params": params, "grad_norm": gnorm, "lc": lc, "raw": raw}


@float64
def no_gamed_rows(n_instr: int) -> LCGrid:
    """An empty gamed-baseline grid (0, n_instr): no AlpacaEval rewrites of the baseline."""
    z = jnp.zeros((0, n_instr))
    return LCGrid(z, z, z)
