"""Simulated judge-assisted arenas with known truth, for the PPI studies (tests, notebook, benchmark).

Each item is a prompt and a model pair shown in a random order. Its answers differ in quality by
``s_a - s_b + e`` with an item effect ``e ~ N(0, tau^2)`` (so a judge can agree with a human beyond the
strengths). Human votes (1 to ``max_votes`` per labelled item, one cluster) follow Bradley-Terry on that
logit; the judge follows ``slope * logit + length_bias * length_feature + position_bias`` (or a fair coin).
The truth is the population BT strength: the BT fit to the expected win rates ``E_e sigmoid(s_a - s_b + e)``
(Gauss-Hermite), which the human-only fit estimates consistently. Lengths:
:func:`arena.simulation.simulate.length_feature`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from arena.bt import elo
from arena.bt import likelihood as bt
from arena.io.battles import PairCounts
from arena.jax_setup import float64
from arena.simulation.simulate import draw_outcomes, length_feature, outcome_probabilities, uniform_pairs
from preflab.outcomes import BATTLE_LABELS


@dataclass(frozen=True)
class JudgeArena:
    strengths: tuple[float, ...] = (1.0, 0.6, 0.3, 0.0, -0.4)
    mean_tokens: tuple[float, ...] = (300.0, 900.0, 400.0, 1200.0, 500.0)
    tau: float = 2.0
    slope: float = 1.0
    length_bias: float = 1.5
    position_bias: float = 0.5
    max_votes: int = 3
    random_judge: bool = False

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(f"m{i}" for i in range(len(self.strengths)))


@float64
def truth(arena: JudgeArena) -> np.ndarray:
    """Centred population BT strengths (natural log) that the human votes identify."""
    s = np.asarray(arena.strengths)
    k = len(s)
    node, weight = np.polynomial.hermite_e.hermegauss(60)
    i, j = np.triu_indices(k, 1)
    p = (weight[None, :] / weight.sum() / (1 + np.exp(-(s[i] - s[j])[:, None] - arena.tau * node[None, :]))).sum(1)
    data = bt.PairData(i.astype(np.int32), j.astype(np.int32), np.c_[p, 1 - p, 0 * p] * 1e6)
    x = np.asarray(bt.fit(bt.initial_x(data, k, "half"), data, "half").x[:k])
    return x - x.mean()


def simulate(arena: JudgeArena, n_labelled: int, n_judged: int, rng: np.random.Generator
             ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(human battles, judge battles): ``n_judged`` items, the first ``n_labelled`` also with human votes."""
    k = len(arena.strengths)
    s = np.asarray(arena.strengths)
    a, b = uniform_pairs(n_judged, k, rng)
    mu = np.log(np.asarray(arena.mean_tokens))
    tok_a = np.exp(mu[a] + 0.5 * rng.standard_normal(n_judged))
    tok_b = np.exp(mu[b] + 0.5 * rng.standard_normal(n_judged))
    logit = s[a] - s[b] + arena.tau * rng.standard_normal(n_judged)
    names = np.array(arena.models)
    qid = np.array([f"q{t}" for t in range(n_judged)])
    if arena.random_judge:
        jl = np.zeros(n_judged)
    else:
        jl = arena.slope * logit + arena.length_bias * length_feature(tok_a, tok_b) + arena.position_bias
    jo = draw_outcomes(*outcome_probabilities(jl, "none", 0.0), rng.random(n_judged))
    votes = rng.integers(1, arena.max_votes + 1, n_labelled)
    h_item = np.repeat(np.arange(n_labelled), votes)
    ho = draw_outcomes(*outcome_probabilities(logit[h_item], "none", 0.0), rng.random(h_item.size))
    label = np.array(BATTLE_LABELS)
    human = pd.DataFrame({"model_a": names[a[h_item]], "model_b": names[b[h_item]], "winner": label[ho],
                          "question_id": qid[h_item]})
    judge = pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": label[jo], "question_id": qid})
    return human, judge


def agreement(human: pd.DataFrame, judge: pd.DataFrame) -> float:
    """Share of human votes that the judge's verdict on the same item agrees with."""
    m = human.merge(judge, on="question_id", suffixes=("", "_j"))
    return float((m["winner"] == m["winner_j"]).mean())


@float64
def judge_only(judge: pd.DataFrame, models: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Judge-only BT (ties half): centred strengths and their sandwich covariance (the naive leaderboard)."""
    index = {m: i for i, m in enumerate(models)}
    a = judge["model_a"].map(index).to_numpy(np.int32)
    b = judge["model_b"].map(index).to_numpy(np.int32)
    code = judge["winner"].map({w: i for i, w in enumerate(BATTLE_LABELS)}).to_numpy(np.int8)
    counts = PairCounts(models, a, b, code, np.ones(len(a)))
    data = bt.pair_data(counts)
    x = np.asarray(bt.fit(bt.initial_x(data, len(models), "half"), data, "half").x)
    cov = np.asarray(bt.sandwich_covariance(x, data, "half"))
    return x[:-1] - x[:-1].mean(), cov[:-1, :-1]


@float64
def coverage_by_method(arena: JudgeArena, n_arenas: int, n_labelled: int, n_judged: int, *,
                       n_bootstrap: int = 200, level: float = 0.95, seed: int = 0,
                       bread: str = "exact") -> pd.DataFrame:
    """Per method (ppi sandwich, ppi bootstrap, human-only sandwich, judge-only sandwich): the share of
    (arena, model) intervals covering the truth, the mean width (natural-log scale), and mean lambda.
    ``bread``: :func:`arena.ppi.estimator.fit_ppi`'s."""
    from statistics import NormalDist

    from arena.bootstrap import intervals as bootstrap_intervals
    from arena.io.battles import load_battles
    from arena.ppi import board as ppi_board
    from arena.ppi import bootstrap as ppi_bootstrap
    from arena.ppi import estimator as ppi

    z = NormalDist().inv_cdf(0.5 + level / 2)
    true = truth(arena)
    rng = np.random.default_rng(seed)
    rows: dict[str, list] = {m: [] for m in ("ppi_sandwich", "ppi_bootstrap", "human_only", "judge_only")}
    lams, agree = [], []
    for r in range(n_arenas):
        human, judge = simulate(arena, n_labelled, n_judged, rng)
        agree.append(agreement(human, judge))
        items, _ = ppi_board.build_items(load_battles(human), judge)
        fit = ppi.fit_ppi(items, bread=bread)
        lams.append(fit.lam)
        x, se = elo.centred_ratings(fit.x[:-1], fit.covariance[:-1, :-1])
        rows["ppi_sandwich"].append((np.abs(x - true) <= z * se, 2 * z * se))
        x0, _, _ = ppi.fit_items(items, 0.0)
        x0, se0 = elo.centred_ratings(x0[:-1], fit.covariance_human[:-1, :-1])
        rows["human_only"].append((np.abs(x0 - true) <= z * se0, 2 * z * se0))
        xj, sej = elo.centred_ratings(*judge_only(judge, arena.models))
        rows["judge_only"].append((np.abs(xj - true) <= z * sej, 2 * z * sej))
        if n_bootstrap:
            reps, _ = ppi_bootstrap.bootstrap_ppi(items, fit.x, fit.lam, n_bootstrap=n_bootstrap, seed=r)
            lo, hi = bootstrap_intervals.percentile_interval(reps[:, :-1] - reps[:, :-1].mean(1, keepdims=True), level)
            rows["ppi_bootstrap"].append(((lo <= true) & (true <= hi), hi - lo))
    out = pd.DataFrame([{"method": m, "coverage": float(np.mean([c for c, _ in v])),
                         "width": float(np.mean([w for _, w in v])), "arenas": len(v)}
                        for m, v in rows.items() if v])
    out.attrs.update(lam=float(np.mean(lams)), agreement=float(np.mean(agree)))
    return out
