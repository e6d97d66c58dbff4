"""How useful a judge is for PPI++: the effective-sample-size gain with unlimited judge verdicts (the judge
card's "PPI gain", :func:`judge_arena.assist.judge_ppi_gain`, and the LLMFAO diagnostics)."""

from __future__ import annotations

import numpy as np

from arena.bt import elo
from arena.bt import likelihood as bt
from arena.jax_setup import float64
from arena.ppi import estimator as ppi


@float64
def unlimited_judge_gain(items: ppi.Items, ties: str = "half") -> tuple[float, float]:
    """(ESS gain, lam) of PPI++ with unlimited judge verdicts on items like the labelled ones.

    At the human-only fit, with ``H`` the classical bread and ``S_hh, S_hf, S_ff`` the covariances of the
    human and judge per-item score contributions, the PPI++ variance as N/n -> infinity is
    ``H^-1 (S_hh - 2 lam S_hf + lam^2 S_ff) H^-1 / n`` (Angelopoulos, Duchi, Zrnic 2023, "PPI++", Prop. 1
    and eq. 8, the unlabelled term vanishing). lam minimises its trace over the centred strengths (clipped
    to [0, 1], as :func:`arena.ppi.estimator.fit_ppi`); the gain is the human-only trace over the PPI one (inf
    when the judge
    reproduces the human scores). On one model pair it is the control-variate factor ``1 / (1 - rho^2)``.
    Unlabelled cells are ignored.
    """
    x0, _, _ = ppi.fit_items(items, 0.0, ties)
    mom = ppi.item_moments(x0, items, ties)
    k = items.n_models
    a = elo.elo_matrix(k) @ np.linalg.pinv(np.asarray(bt.condition(mom.h_l, k)), hermitian=True)[:k]

    def trace(s: np.ndarray) -> float:  # of the centred strengths' covariance H^-1 S H^-1
        s = np.asarray(s)
        return float(np.trace(a @ (s + s.T) / 2 @ a.T))

    t_hh, t_hf, t_ff = trace(mom.s_hh), trace(mom.s_hf), trace(mom.s_fl)
    lam = float(np.clip(t_hf / t_ff, 0.0, 1.0)) if t_ff > 0 else 0.0
    rest = max(t_hh - 2 * lam * t_hf + lam * lam * t_ff, 0.0)
    return (t_hh / rest if rest > 0 else float("inf")), lam
