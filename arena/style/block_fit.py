"""The full-data style fit with ties counted half on the pair blocks of :mod:`arena.style.refit`: loss, gradient,
Hessian and meat as block sums, and the Newton fit the bootstrap refits start from.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from arena.bt import likelihood as bt
from arena.jax_setup import float64
from arena.style.refit import Blocks


class FullData(NamedTuple):
    """The battles in block layout for the full-data fit: features (F, B, M), y and ``real`` (B, M)
    (1 for a battle, 0 for padding), block pairs (B,), pair models i, j (P,)."""

    features: jax.Array
    y: jax.Array
    real: jax.Array
    pair: jax.Array
    i: jax.Array
    j: jax.Array


@float64
def full_data(blocks: Blocks, put=jnp.asarray) -> FullData:
    real = (blocks.slot >= 0).reshape(blocks.y.shape).astype(np.float64)
    return FullData(put(blocks.features), put(blocks.y), put(real), put(blocks.pair), put(blocks.i), put(blocks.j))


def _gap(z: jax.Array, fd: FullData, n_models: int) -> jax.Array:
    n_feat = fd.features.shape[0]
    theta, beta = z[:n_models], z[n_models:n_models + n_feat]
    return (theta[fd.i] - theta[fd.j])[fd.pair][:, None] + jnp.tensordot(beta, fd.features, 1)


@float64
def block_loss(z: jax.Array, fd: FullData, n_models: int, ridge: float) -> jax.Array:
    """:func:`arena.style.fit.style_loss` for ties counted half, from the block layout."""
    d = _gap(z, fd, n_models)
    nll = -jnp.sum(fd.real * (fd.y * jax.nn.log_sigmoid(d) + (1 - fd.y) * jax.nn.log_sigmoid(-d)))
    return nll + 0.5 * ridge * jnp.sum(z[:n_models] ** 2) + 0.5 * z[-1] ** 2


@float64
def block_gradient(z: jax.Array, fd: FullData, n_models: int, ridge: float) -> jax.Array:
    """:func:`arena.style.fit.style_gradient` for ties counted half, from the block layout."""
    r = fd.real * (jax.nn.sigmoid(_gap(z, fd, n_models)) - fd.y)
    per_pair = jax.ops.segment_sum(r.sum(axis=1), fd.pair, fd.i.shape[0], indices_are_sorted=True)
    g_theta = jnp.zeros(n_models).at[fd.i].add(per_pair).at[fd.j].add(-per_pair) + ridge * z[:n_models]
    return jnp.concatenate([g_theta, jnp.tensordot(fd.features, r, 2), z[-1:]])


@float64
def block_matrix(c: jax.Array, fd: FullData, n_models: int) -> jax.Array:
    """``sum over battles c x x^T`` (x = e_i - e_j on the strengths, the features on beta) for per-slot
    ``c`` (B, M): the Hessian for ``c = s (1 - s)``, the sandwich meat for ``c = (s - y)^2``; psi row 0."""
    n_feat, n_pairs = fd.features.shape[0], fd.i.shape[0]
    size = n_models + n_feat + 1
    q = jax.ops.segment_sum(c.sum(axis=1), fd.pair, n_pairs, indices_are_sorted=True)
    t = jax.ops.segment_sum(jnp.sum(fd.features * c[None], axis=2).T, fd.pair, n_pairs,
                            indices_are_sorted=True)  # (P, F)
    ff = jnp.einsum("fbm,gbm->fg", fd.features * c[None], fd.features)
    out = jnp.zeros((size, size))
    out = out.at[fd.i, fd.i].add(q).at[fd.j, fd.j].add(q).at[fd.i, fd.j].add(-q).at[fd.j, fd.i].add(-q)
    sl = slice(n_models, n_models + n_feat)
    t_beta = jnp.zeros((n_models, n_feat)).at[fd.i].add(t).at[fd.j].add(-t)
    out = out.at[:n_models, sl].add(t_beta).at[sl, :n_models].add(t_beta.T)
    return out.at[sl, sl].add(ff)


@float64
def block_hessian(z: jax.Array, fd: FullData, n_models: int, ridge: float) -> jax.Array:
    """:func:`arena.style.fit.style_hessian` for ties counted half, from the block layout."""
    s = jax.nn.sigmoid(_gap(z, fd, n_models))
    h = block_matrix(fd.real * s * (1 - s), fd, n_models)
    h = h + jnp.diag(jnp.zeros(h.shape[0]).at[:n_models].set(ridge))
    return h.at[-1, -1].add(1.0)


@float64
def block_meat(z: jax.Array, fd: FullData, n_models: int) -> jax.Array:
    """:func:`arena.style.fit.style_meat` for ties counted half, from the block layout."""
    r = fd.real * (jax.nn.sigmoid(_gap(z, fd, n_models)) - fd.y)
    return block_matrix(r * r, fd, n_models)


@float64
@partial(jax.jit, static_argnames=("n_models", "max_iter"))
def block_newton(z0: jax.Array, fd: FullData, n_models: int, n: int, ridge: float, tol: float = 1e-9,
                 max_iter: int = 100):
    """:func:`arena.style.fit.style_newton` (the same steps, step halving and stopping rule) on the block
    layout of ``n`` battles; returns (z, converged)."""
    scale = tol * (1.0 + n)

    def step(state):
        z, it, _ = state
        delta = jnp.linalg.solve(bt.condition(block_hessian(z, fd, n_models, ridge), n_models),
                                 block_gradient(z, fd, n_models, ridge))
        f0 = block_loss(z, fd, n_models, ridge)

        def worse(t):
            f = block_loss(z - t * delta, fd, n_models, ridge)
            return (~jnp.isfinite(f) | (f > f0 + 1e-12 * jnp.abs(f0))) & (t > 1e-6)

        t = jax.lax.while_loop(worse, lambda t: t * 0.5, 1.0)
        z_new = z - t * delta
        done = jnp.max(jnp.abs(block_gradient(z_new, fd, n_models, ridge))) < scale
        return z_new, it + 1, done

    z, _, done = jax.lax.while_loop(lambda s: (~s[2]) & (s[1] < max_iter), step,
                                    (jnp.asarray(z0, jnp.float64), 0, False))
    return z, done


block_hessian_jit = float64(jax.jit(block_hessian, static_argnames=("n_models",)))


block_meat_jit = float64(jax.jit(block_meat, static_argnames=("n_models",)))
