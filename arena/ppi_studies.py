"""Judge-assisted leaderboards on real data: LLMFAO crowd votes as the humans, GPT-4 / GPT-3 as the judge.

Keep a share of the crowd-labelled pairs (all their votes) as the human set; the judge's verdicts on all
3,236 pairs (2,139 with crowd votes, 1,097 without) are the judge set. Per share and judge, over repeated
subsamples: mean 95% sandwich width of human-only and PPI++ ratings, the ESS gain (human-only / PPI total
variance), lambda, and how often each interval covers the all-crowd rating. Source: LLMFAO, Dmitry Ustalov
(CC BY 4.0), read with the ``llmfao`` layout of :mod:`arena.data`.
"""

from __future__ import annotations

from pathlib import Path
from statistics import NormalDist

import numpy as np
import pandas as pd

from arena import bt, ppi, ppi_board
from arena.data import Battles, aggregate, load_battles


def _centred(x: np.ndarray, cov: np.ndarray, per_nat: float) -> tuple[np.ndarray, np.ndarray]:
    m = bt.elo_matrix(len(x)) * per_nat
    return m @ x, np.sqrt(np.clip(np.diag(m @ cov @ m.T), 0, None))


def llmfao_study(data_dir: str | Path, judges: tuple[str, ...] = ("gpt4", "gpt3"),
                 shares: tuple[float, ...] = (0.10, 0.25, 0.50), repeats: int = 20, seed: int = 0,
                 level: float = 0.95, judge_pairs: str = "all") -> pd.DataFrame:
    """One row per (judge, share): widths (Elo points), ESS gain, lambda and coverage of the all-crowd ratings.

    ``judge_pairs``: ``all`` (the judge's 3,236 pairs, 1,097 of them outside the crowd's prompts: not the
    same population, which PPI assumes) or ``crowd`` (the 2,139 crowd pairs only: labelled and unlabelled
    items are then a random split of one population).

    Subsamples that leave a model without human votes are redrawn (``redrawn`` counts them), so every fit
    rates the same 59 models and the all-crowd ratings are comparable; so are subsamples where the human-only
    MLE does not exist (``no_human_mle``: a model that never lost or never won), where no interval means much.
    """
    data_dir = Path(data_dir)
    crowd = load_battles(data_dir / "crowd-comparisons.csv", layout="llmfao")
    models = crowd.models
    per_nat = 400 / np.log(10)
    z = NormalDist().inv_cdf(0.5 + level / 2)
    truth = bt.fit_ratings(aggregate(crowd))[0] * per_nat  # the all-crowd BT ratings, centred
    pair_id = crowd.df["id"].to_numpy()
    ids = np.unique(pair_id)
    rows = []
    for judge in judges:
        name = f"{judge}-comparisons.csv" if judge_pairs == "all" else f"{judge}-crowd-comparisons.csv"
        verdicts = load_battles(data_dir / name, layout="llmfao")
        for share in shares:
            rng = np.random.default_rng([seed, int(share * 1000)])
            acc: dict[str, list] = {k: [] for k in ("w0", "w1", "c0", "c1", "gain", "lam", "n_h", "n_j")}
            redrawn = no_mle = 0
            while len(acc["lam"]) < repeats:
                keep = np.isin(pair_id, rng.choice(ids, int(round(share * len(ids))), replace=False))
                human = Battles(crowd.df[keep].reset_index(drop=True), crowd.source)
                human = load_battles(human.df.assign(model_a=human.df["model_a"].astype(str),
                                                     model_b=human.df["model_b"].astype(str)))
                if human.models != models:
                    redrawn += 1
                    continue
                items, _ = ppi_board.build_items(human, verdicts)
                x0, _, _ = ppi.fit_items(items, 0.0)
                if np.abs(x0[:-1]).max() > 15:  # no finite human-only MLE (a model never lost or never won)
                    no_mle += 1
                    if no_mle > 20 * repeats:
                        break
                    continue
                fit = ppi.fit_ppi(items)
                r1, s1 = _centred(fit.x[:-1], fit.covariance[:-1, :-1], per_nat)
                r0, s0 = _centred(x0[:-1], fit.covariance_human[:-1, :-1], per_nat)
                acc["w0"].append(2 * z * s0.mean())
                acc["w1"].append(2 * z * s1.mean())
                acc["c0"].append(np.mean(np.abs(r0 - truth) <= z * s0))
                acc["c1"].append(np.mean(np.abs(r1 - truth) <= z * s1))
                acc["gain"].append((s0**2).sum() / (s1**2).sum())
                acc["lam"].append(fit.lam)
                acc["n_h"].append(items.n_labelled)
                acc["n_j"].append(items.n_labelled + items.n_unlabelled)
            rows.append({"judge": judge, "judge_pairs": judge_pairs, "share": share, "human_items": np.mean(acc["n_h"]),
                         "judge_items": np.mean(acc["n_j"]), "width_human": np.mean(acc["w0"]),
                         "width_ppi": np.mean(acc["w1"]), "ess_gain": np.mean(acc["gain"]),
                         "lambda": np.mean(acc["lam"]), "coverage_human": np.mean(acc["c0"]),
                         "coverage_ppi": np.mean(acc["c1"]), "repeats": len(acc["lam"]), "redrawn": redrawn,
                         "no_human_mle": no_mle})
    return pd.DataFrame(rows)
