"""The PPI++ bootstrap: labelled and unlabelled items resampled separately (each total fixed), lambda held at its
full-data value, every replicate refitted by chord-Newton steps (:func:`arena.bootstrap.refits.refit_chunk`).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from arena.bt import likelihood as bt
from arena.jax_setup import float64
from arena.ppi.estimator import Items, combined_counts, fisher_information, pair_information_weights, sizes


def _stratum_matrix(pair: np.ndarray, values: np.ndarray, n_pairs: int):
    """Sparse (3P, C) map from cell resample counts to per-pair outcome counts."""
    from scipy.sparse import csr_matrix

    rows = (pair[:, None] * 3 + np.arange(3)[None, :]).ravel()
    cols = np.repeat(np.arange(len(pair)), 3)
    return csr_matrix((values.ravel(), (rows, cols)), shape=(3 * n_pairs, len(pair)))


@float64
def bootstrap_ppi(items: Items, x_hat: np.ndarray, lam: float, *, n_bootstrap: int = 1000, seed: int = 0,
                  ties: str = "half", include_labelled: bool = True, ridge: float = bt.DEFAULT_RIDGE,
                  chunk: int = 250, weights: str = "multinomial") -> tuple[np.ndarray, int]:
    """Stratified bootstrap: labelled and unlabelled items resampled separately (each total fixed), lam held
    fixed, every replicate refitted by the chord-Newton refits of :func:`arena.bootstrap.refits.refit_chunk`.

    Efron & Tibshirani (1993) ch. 6 (stratified resampling); resampling items with replacement is drawing
    multinomial counts over the item cells. Returns (x replicates (R, K+1), number of full-Newton fallbacks).
    """
    from arena.bootstrap import refits as bs
    from arena.bootstrap.weights import draw_weights

    n, _, big_n = sizes(items, include_labelled)
    c = items.judge_scale
    r = lam * n / big_n if big_n else 0.0
    n_pairs = len(items.pair_i)
    lab = items.l_human - lam * c * items.l_judge + (r * c * items.l_judge if include_labelled else 0.0)
    s_l = _stratum_matrix(items.l_pair, lab, n_pairs)
    s_u = _stratum_matrix(items.u_pair, (r * c) * items.u_judge, n_pairs)
    full = bt.PairData(items.pair_i, items.pair_j, combined_counts(items, lam, include_labelled))
    d_data = bt.PairData(jnp.asarray(full.i), jnp.asarray(full.j), jnp.asarray(full.counts))
    # chord steps with the expected information: positive definite even where the rectified loss is not convex
    fisher = fisher_information(jnp.asarray(x_hat), d_data.i, d_data.j, pair_information_weights(items), ties, ridge)
    h_inv = jnp.asarray(np.linalg.inv(np.asarray(fisher)))
    xh = jnp.asarray(x_hat)
    out, n_fallback = [], 0
    for start in range(0, n_bootstrap, chunk):
        size = min(chunk, n_bootstrap - start)
        rng = np.random.default_rng([seed, start])
        counts = s_l @ draw_weights(items.l_mult, size, rng, weights).T  # type: ignore[arg-type]
        if items.u_mult.size:
            counts = counts + s_u @ draw_weights(items.u_mult, size, rng, weights).T  # type: ignore[arg-type]
        cj = jnp.asarray(counts.reshape(n_pairs, 3, size))
        x, ok = bs.refit_chunk(cj, xh, h_inv, d_data, ties, ridge)
        x, ok = np.array(x), np.asarray(ok)
        if not ok.all():
            bad = np.flatnonzero(~ok)
            padded = np.resize(bad, 1 << (bad.size - 1).bit_length())
            xb, _ = bs.newton_refit_chunk(jnp.transpose(cj[:, :, padded], (2, 0, 1)), xh, d_data, ties, ridge)
            x[bad] = np.asarray(xb)[: bad.size]
            n_fallback += bad.size
        out.append(x)
    return np.concatenate(out), n_fallback
