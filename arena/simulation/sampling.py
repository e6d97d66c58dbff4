"""Active pair selection: which pair to show next so the leaderboard's uncertainty shrinks fastest.

Criterion (a Bayesian A-optimal design on the gaps that decide the ranking): with current ratings ``r`` and
the information ``F`` of the votes so far (plus a weak Gaussian prior ``lambda I``), the covariance is
``S = (F + lambda I)^-1``. One more vote on pair ``(i, j)`` adds ``w x x^T`` with ``x = e_i - e_j`` and
``w = p_ij (1 - p_ij)``; by Sherman-Morrison the summed variance of the adjacent gaps ``C r`` (models sorted
by ``r``) drops by ``gain_ij = w ||C S x||^2 / (1 + w x^T S x)``. :func:`pair_gains` computes that for all
pairs at once; :func:`next_pair` takes the best, :func:`pair_probabilities` turns gains into a sampling
distribution (with a uniform share so that every pair keeps being explored and intervals stay honest).
References: Chaloner & Verdinelli (1995), Bayesian experimental design; Chiang et al. (2024), Chatbot Arena
(active sampling to reduce CI width).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from arena.io.battles import A_WINS, B_WINS, TIE, PairCounts


def adjacent_contrasts(ratings: np.ndarray) -> np.ndarray:
    """(k-1, k) matrix whose rows are ``e_hi - e_lo`` for models adjacent when sorted by ``ratings``."""
    r = np.asarray(ratings, np.float64)
    k = len(r)
    order = np.argsort(-r, kind="stable")
    c = np.zeros((k - 1, k))
    c[np.arange(k - 1), order[:-1]] = 1.0
    c[np.arange(k - 1), order[1:]] = -1.0
    return c


def pair_gains(pair_votes: np.ndarray, ratings: np.ndarray, prior_precision: float = 1.0) -> np.ndarray:
    """(k, k) symmetric matrix: expected drop in summed adjacent-gap variance from one vote on each pair.

    ``pair_votes[i, j]`` counts votes so far on the unordered pair (either orientation; summed with its
    transpose); ``ratings`` are natural-log BT strengths. The diagonal is 0. See the module docstring.
    """
    r = np.asarray(ratings, np.float64)
    k = len(r)
    n = np.asarray(pair_votes, np.float64)
    n = n + n.T
    np.fill_diagonal(n, 0.0)
    p = 1.0 / (1.0 + np.exp(-(r[:, None] - r[None, :])))
    w = p * (1.0 - p)
    info_ij = n * w
    info = np.diag(info_ij.sum(axis=1)) - info_ij + prior_precision * np.eye(k)
    cov = np.linalg.inv(info)
    cs = adjacent_contrasts(r) @ cov  # (k-1, k): C S e_m for every m
    gram = cs.T @ cs  # ||C S (e_i - e_j)||^2 = G_ii + G_jj - 2 G_ij: O(k^2) memory for every pair at once
    numer = w * (np.diag(gram)[:, None] + np.diag(gram)[None, :] - 2.0 * gram)
    dvar = np.diag(cov)
    quad = dvar[:, None] + dvar[None, :] - 2.0 * cov  # x^T S x
    gains = numer / (1.0 + w * quad)
    np.fill_diagonal(gains, 0.0)
    return gains


def pair_probabilities(pair_votes: np.ndarray, ratings: np.ndarray, *, batch: float | None = None,
                       epsilon: float = 0.1, steps: int = 64, prior_precision: float = 1.0) -> np.ndarray:
    """(k, k) upper-triangular distribution over unordered pairs for the next ``batch`` votes.

    The batch is planned greedily: ``steps`` times, the pair with the largest :func:`pair_gains` gets
    ``batch / steps`` planned votes, which are added to ``pair_votes`` before the next step — the batch
    version of :func:`next_pair` (information depends on the ratings, not on the unseen outcomes).
    ``epsilon`` of the mass stays uniform so every pair keeps being explored, which keeps the MLE and its
    intervals valid under the adaptive design (the design depends only on past outcomes).
    ``batch`` defaults to the votes so far (at least ``k``).
    """
    r = np.asarray(ratings, np.float64)
    k = len(r)
    votes = np.asarray(pair_votes, np.float64)
    votes = np.triu(votes + votes.T, 1)
    batch = float(batch) if batch is not None else max(float(votes.sum()), float(k))
    plan = np.zeros((k, k))
    chunk = batch / steps
    for _ in range(steps):
        gains = np.triu(pair_gains(votes + plan, r, prior_precision), 1)
        i, j = divmod(int(np.argmax(gains)), k)
        plan[i, j] += chunk
    upper = np.triu(np.ones((k, k)), 1)
    return (1.0 - epsilon) * plan / plan.sum() + epsilon * upper / upper.sum()


def votes_per_pair(counts: PairCounts | np.ndarray) -> np.ndarray:
    """(k, k) votes per ordered pair from :class:`PairCounts`, a (k, k, 3) outcome array or a (k, k) matrix."""
    if isinstance(counts, PairCounts):
        k = counts.n_models
        out = np.zeros((k, k))
        np.add.at(out, (counts.a, counts.b), counts.count)
        return out
    arr = np.asarray(counts, np.float64)
    return arr.sum(axis=2) if arr.ndim == 3 else arr


def outcome_tensor(counts: PairCounts | np.ndarray, k: int | None = None) -> np.ndarray:
    """(k, k, 3) counts of (a wins, b wins, tie) per ordered pair; both tie kinds are ties.

    ``counts``: aggregated :class:`PairCounts`, an existing (k, k, 3) array (returned as is), or anything
    with integer arrays ``a``, ``b``, ``outcome`` (one row per battle, e.g. simulated codes) with ``k``."""
    if isinstance(counts, PairCounts):
        a, b, outcome, weight, k = counts.a, counts.b, counts.outcome, counts.count, counts.n_models
    elif hasattr(counts, "outcome") and k is not None:
        a, b, outcome, weight = counts.a, counts.b, counts.outcome, 1.0
    else:
        arr = np.asarray(counts, np.float64)
        if arr.ndim != 3:
            raise ValueError("outcomes are needed to estimate ratings: pass PairCounts, a (k, k, 3) array "
                             "or ratings=")
        return arr
    out = np.zeros((k, k, 3))
    np.add.at(out, (a, b, np.minimum(outcome, TIE)), weight)
    return out


def all_pairs_data(outcomes: np.ndarray):
    """:class:`arena.bt.likelihood.PairData` over *every* unordered pair ``i < j`` (zero counts allowed) from (k, k, 3)
    outcome counts, so the array shapes depend only on ``k`` (one compiled fit serves every call / arena)."""
    from arena.bt.likelihood import PairData

    oc = np.asarray(outcomes, np.float64)
    i, j = np.triu_indices(oc.shape[0], 1)
    table = np.stack([oc[i, j, A_WINS] + oc[j, i, B_WINS], oc[i, j, B_WINS] + oc[j, i, A_WINS],
                      oc[i, j, TIE] + oc[j, i, TIE]], axis=-1)
    return PairData(i.astype(np.int32), j.astype(np.int32), table)


def estimate_ratings(counts: PairCounts | np.ndarray, prior_precision: float = 1.0) -> np.ndarray:
    """Current natural-log BT ratings for the sampler: the project's BT fit (:func:`arena.bt.likelihood.fit`, ties
    counted half) with ridge ``prior_precision`` — the MAP under the same Gaussian prior that
    :func:`pair_gains` uses, finite from the first vote."""
    from arena.bt.likelihood import fit, initial_x  # imported here: JAX loads only once ratings are needed

    oc = outcome_tensor(counts)
    data, k = all_pairs_data(oc), oc.shape[0]
    theta = np.asarray(fit(initial_x(data, k, "half"), data, "half", prior_precision).x[:-1])
    return theta - theta.mean()


def pair_probabilities_from_counts(counts: np.ndarray, batch: float | None = None, *, epsilon: float = 0.1,
                                   prior_precision: float = 1.0) -> np.ndarray:
    """:func:`pair_probabilities` with ratings from :func:`estimate_ratings` (the simulator's hook)."""
    ratings = estimate_ratings(counts, prior_precision)
    return pair_probabilities(votes_per_pair(counts), ratings, batch=batch, epsilon=epsilon,
                              prior_precision=prior_precision)


def next_pair(
    counts: PairCounts | np.ndarray,
    ratings: Sequence[float] | np.ndarray | None = None,
    *,
    exclude: Sequence[tuple[int, int]] = (),
    prior_precision: float = 1.0,
    seed: int | np.random.Generator | None = None,
) -> tuple[int, int]:
    """The pair to show next: ``(left, right)`` model indices, left/right in random order.

    Parameters
    ----------
    counts:
        Votes so far: :class:`arena.io.battles.PairCounts` (indices follow ``counts.models``), a ``(k, k, 3)`` array
        of (a wins, b wins, ties) per ordered pair, or a ``(k, k)`` matrix of votes per pair (then
        ``ratings`` is required, or all models are treated as equal).
    ratings:
        Current natural-log BT ratings (e.g. the leaderboard's). ``None``: estimated from ``counts`` with
        :func:`estimate_ratings` (needs outcomes).
    exclude:
        Pairs ``(i, j)`` not to show now (either order), e.g. a pair this voter has just seen.
    prior_precision:
        Weak Gaussian prior on ratings (keeps the first votes well defined).
    seed:
        Breaks ties between equally good pairs and picks the left/right order; ``None`` = fresh randomness.

    Returns the pair with the largest :func:`pair_gains` (expected drop in the adjacent-gap variance). Pure
    and cheap: one k x k inverse (well under a millisecond for k = 20) plus the rating fit when not given.
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    votes = votes_per_pair(counts)
    k = votes.shape[0]
    if k < 2:
        raise ValueError("need at least two models to pick a pair")
    if ratings is None:
        has_outcomes = isinstance(counts, PairCounts) or np.ndim(counts) == 3
        ratings = estimate_ratings(counts, prior_precision) if has_outcomes else np.zeros(k)
    gains = np.triu(pair_gains(votes, np.asarray(ratings, np.float64), prior_precision), 1)
    gains[np.tril_indices(k)] = -np.inf
    for i, j in exclude:
        gains[min(i, j), max(i, j)] = -np.inf
    if not np.isfinite(gains).any():
        raise ValueError("every pair is excluded; nothing to show")
    best = np.flatnonzero(gains >= gains.max() - 1e-12 * max(1.0, abs(gains.max())))
    i, j = divmod(int(rng.choice(best)), k)
    return (i, j) if rng.random() < 0.5 else (j, i)
