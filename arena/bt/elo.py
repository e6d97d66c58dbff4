"""Strengths as ratings: the Elo scale (``scale * log_base(strength) + init``, Chatbot Arena: 400, 10, 1000; Chiang
et al. 2024, ICML), centred or anchored at one model, with the matching covariance and standard errors.
"""

from __future__ import annotations

import math

import jax
import numpy as np

from arena.jax_setup import float64


def elo_matrix(n_models: int, anchor: int | None = None) -> np.ndarray:
    """Linear map from strengths to rating offsets: centring (mean 0) or pinning model ``anchor`` at 0."""
    eye = np.eye(n_models)
    if anchor is None:
        return eye - 1.0 / n_models
    out = eye.copy()
    out[:, anchor] -= 1.0
    return out


@float64
def to_elo(theta: jax.Array | np.ndarray, *, scale: float = 400.0, base: float = 10.0, init: float = 1000.0,
           anchor: int | None = None, anchor_rating: float | None = None) -> np.ndarray:
    """Elo-scale ratings ``scale * log_base(strength) + init``, mean ``init`` or model ``anchor`` pinned.

    Works on (..., K) arrays (e.g. bootstrap replicates). The Chatbot Arena convention (Chiang et al. 2024,
    'Chatbot Arena', ICML): scale 400, base 10, init 1000.
    """
    theta = np.asarray(theta)
    level = init if anchor_rating is None else anchor_rating
    return elo_offsets(theta, anchor) * (scale / math.log(base)) + level


def elo_offsets(theta: np.ndarray, anchor: int | None = None) -> np.ndarray:
    """``theta @ elo_matrix(K, anchor).T`` in O(K) a row: ``theta`` minus its mean, or minus ``theta[anchor]``
    (the product costs K^2 a row: 2 GFLOP for 1,000 replicates of 1,000 models)."""
    ref = theta.mean(axis=-1, keepdims=True) if anchor is None else theta[..., anchor:anchor + 1]
    return theta - ref


def elo_covariance(cov: np.ndarray, anchor: int | None = None) -> np.ndarray:
    """``m @ cov @ m.T`` for ``m = elo_matrix(K, anchor)`` and a (K, K) ``cov``, in O(K^2)."""
    if anchor is None:
        return cov - cov.mean(axis=1, keepdims=True) - cov.mean(axis=0, keepdims=True) + cov.mean()
    return cov - cov[anchor:anchor + 1] - cov[:, anchor:anchor + 1] + cov[anchor, anchor]


def centred_ratings(theta: np.ndarray, cov: np.ndarray, per_nat: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Strengths ``theta`` (K,) centred at mean 0 and their standard errors from their covariance ``cov``
    (K, K), both times ``per_nat`` (1: natural-log units; Elo points per nat for ratings)."""
    m = elo_matrix(len(theta)) * per_nat
    return m @ theta, np.sqrt(np.clip(np.diag(m @ cov @ m.T), 0, None))
