"""Coverage of the leaderboard's intervals by sampling unit, on simulated arenas with known truth.

Each arena has ``n_items`` items (a prompt and one model pair, drawn uniformly), each voted on by
``voters`` voters who share the item's logit shift ``u ~ N(0, sd^2)``: ``P(a wins) = sigmoid(theta_a -
theta_b + u)``. The truth is the population Bradley-Terry fit of that process (what the fit converges to
with infinitely many items): BT fitted to the expected win shares ``E_u sigmoid(d + u)`` of every pair,
by Gauss-Hermite quadrature (exact up to 1e-12, no Monte Carlo error). Coverage is the share of (arena,
model) intervals holding the truth; its Monte Carlo error is the standard error over arenas of their
per-arena coverage (models within an arena share the centring, so they are not independent).

``python -m arena.simulation.unit_study`` prints the table in docs/rank.md.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from arena.bt import elo
from arena.bt import likelihood as bt
from arena.io.battles import load_battles
from arena.io.counts import aggregate_codes


@dataclass(frozen=True)
class ItemArena:
    """The simulated design: models' true log strengths, items, voters per item and the item-effect SD."""

    theta: tuple[float, ...] = (-1.0, -0.6, -0.3, 0.0, 0.2, 0.5, 0.8, 1.2)
    n_items: int = 300
    voters: int = 4
    item_sd: float = 1.5


def population_ratings(design: ItemArena, scale: float = 400.0, base: float = 10.0, init: float = 1000.0
                       ) -> np.ndarray:
    """The population BT fit (centred, Elo scale) of ``design``: BT on the exact expected win shares."""
    theta = np.asarray(design.theta)
    k = theta.size
    a, b = np.triu_indices(k, 1)
    nodes, w = np.polynomial.hermite_e.hermegauss(80)  # E over u ~ N(0, sd^2): nodes of N(0, 1)
    d = theta[a] - theta[b]
    p = (1 / (1 + np.exp(-(d[:, None] + design.item_sd * nodes[None])))) @ (w / w.sum())
    counts = aggregate_codes(np.r_[a, a], np.r_[b, b], np.r_[np.zeros_like(a), np.ones_like(a)],
                             [f"m{i}" for i in range(k)], np.r_[p, 1 - p])
    x, _ = bt.fit_ratings(counts)
    return elo.to_elo(x, scale=scale, base=base, init=init)


def simulate_items(design: ItemArena, rng: np.random.Generator) -> pd.DataFrame:
    """One arena's battles: ``model_a, model_b, winner, question_id`` (one question id per item)."""
    k = len(design.theta)
    theta = np.asarray(design.theta)
    a = rng.integers(0, k, design.n_items)  # the table in docs/rank.md was measured on these draws
    b = (a + rng.integers(1, k, design.n_items)) % k
    u = rng.normal(0.0, design.item_sd, design.n_items)
    p = 1 / (1 + np.exp(-(theta[a] - theta[b] + u)))
    wins = rng.random((design.n_items, design.voters)) < p[:, None]
    names = np.array([f"m{i}" for i in range(k)])
    rep = np.repeat(np.arange(design.n_items), design.voters)
    return pd.DataFrame({"model_a": names[a[rep]], "model_b": names[b[rep]],
                         "winner": np.where(wins.ravel(), "model_a", "model_b"), "question_id": rep.astype(str)})


def coverage(design: ItemArena, n_arenas: int, unit: str, ci: str = "sandwich", n_bootstrap: int = 100,
             seed: int = 0, level: float = 0.95) -> dict[str, float]:
    """Coverage of the truth by ``unit`` intervals over ``n_arenas`` arenas: share, its Monte Carlo SE, and
    the mean interval width (Elo points)."""
    from arena.leaderboard import fit_leaderboard
    from arena.leaderboard_options import IntervalOptions

    truth = pd.Series(population_ratings(design), index=[f"m{i}" for i in range(len(design.theta))])
    rng = np.random.default_rng(seed)
    per_arena, widths = [], []
    for r in range(n_arenas):
        battles = load_battles(simulate_items(design, rng))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            intervals = IntervalOptions(ci=ci, n_bootstrap=n_bootstrap, seed=r, unit=unit, level=level)
            t = fit_leaderboard(battles, intervals, min_battles=0).table.set_index("model")
        held = (t["lower"] <= truth[t.index]) & (truth[t.index] <= t["upper"])
        per_arena.append(float(held.mean()))
        widths.append(float((t["upper"] - t["lower"]).mean()))
    cov = np.asarray(per_arena)
    return {"coverage": float(cov.mean()), "mc_se": float(cov.std(ddof=1) / math.sqrt(n_arenas)),
            "width": float(np.mean(widths)), "arenas": n_arenas}


def coverage_table(n_sandwich: int = 1000, n_bootstrap_arenas: int = 200, n_bootstrap: int = 200,
                   seed: int = 1) -> pd.DataFrame:
    """Battle vs item unit, sandwich and bootstrap, with and without item effects (docs/rank.md's table;
    about 3 minutes on one core)."""
    rows = []
    for sd in (1.5, 0.0):
        for unit in ("battle", "item"):
            for ci, n in (("sandwich", n_sandwich), ("bootstrap", n_bootstrap_arenas)):
                res = coverage(ItemArena(item_sd=sd), n, unit, ci=ci, n_bootstrap=n_bootstrap, seed=seed)
                rows.append({"item effect sd": sd, "unit": unit, "ci": ci, **res})
    return pd.DataFrame(rows)


if __name__ == "__main__":
    print(coverage_table().to_string(index=False, float_format=lambda v: f"{v:.3f}"))
