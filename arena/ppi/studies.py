"""Judge-assisted leaderboards on real data: LLMFAO crowd votes as the humans, GPT-4 / GPT-3 as the judge.

Keep a share of the crowd-labelled pairs (all their votes) as the human set; the judge's verdicts on all
3,236 pairs (2,139 with crowd votes, 1,097 without) are the judge set. Per share and judge, over repeated
subsamples: mean 95% sandwich width of human-only and PPI++ ratings, the ESS gain (human-only / PPI total
variance), lambda, and how often each interval covers the all-crowd rating. Source: LLMFAO, Dmitry Ustalov
(CC BY 4.0), read with the ``llmfao`` layout of :mod:`arena.io.battles`.
"""

from __future__ import annotations

from pathlib import Path
from statistics import NormalDist

import numpy as np
import pandas as pd

from arena.bt import elo
from arena.bt import likelihood as bt
from arena.io.battles import Battles, aggregate, load_battles
from arena.jax_setup import float64
from arena.ppi import board as ppi_board
from arena.ppi import estimator as ppi


@float64
def llmfao_study(data_dir: str | Path, judges: tuple[str, ...] = ("gpt4", "gpt3"),
                 shares: tuple[float, ...] = (0.10, 0.25, 0.50), repeats: int = 20, seed: int = 0,
                 level: float = 0.95, judge_pairs: str = "all", bread: str = "exact") -> pd.DataFrame:
    """One row per (judge, share): widths (Elo points), ESS gain, lambda and coverage of the all-crowd ratings.

    ``judge_pairs``: ``all`` (the judge's 3,236 pairs, 1,097 of them outside the crowd's prompts: not the
    same population, which PPI assumes) or ``crowd`` (the 2,139 crowd pairs only: labelled and unlabelled
    items are then a random split of one population). ``bread``: :func:`arena.ppi.estimator.fit_ppi`'s.
    ``ess_gain_se``: the Monte Carlo standard error of the mean gain over the subsamples.

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
                fit = ppi.fit_ppi(items, bread=bread)
                r1, s1 = elo.centred_ratings(fit.x[:-1], fit.covariance[:-1, :-1], per_nat)
                r0, s0 = elo.centred_ratings(x0[:-1], fit.covariance_human[:-1, :-1], per_nat)
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
                         "ess_gain_se": np.std(acc["gain"], ddof=1) / np.sqrt(len(acc["gain"])),
                         "lambda": np.mean(acc["lam"]), "coverage_human": np.mean(acc["c0"]),
                         "coverage_ppi": np.mean(acc["c1"]), "repeats": len(acc["lam"]), "redrawn": redrawn,
                         "no_human_mle": no_mle})
    return pd.DataFrame(rows)


@float64
def llmfao_diagnostics(data_dir: str | Path, seed: int = 0) -> pd.DataFrame:
    """Why a judge can or cannot sharpen LLMFAO's leaderboard: one row per judge on the 2,139 crowd pairs.

    Columns: ``matched`` items (crowd items with a judge label; none are lost), ``agreement`` with the crowd
    majority (3-way, majority of the votes' scores), ``judge_ties`` / ``crowd_ties`` (share of pairs),
    ``corr_raw`` (item crowd mean score vs judge score) and ``corr_within`` (the same after subtracting
    the all-crowd BT win probability of the pair: what PPI can use, since BT already learns which model is
    better from the votes), ``gain`` (:func:`arena.ppi.gain.unlimited_judge_gain`, all crowd votes as the
    labelled set, unlimited judge verdicts), ``gain_per_model`` (the same with one lam per centred rating,
    PPI++'s coordinate-wise tuning) and ``prompt_icc`` (share of the judge residual's variance between the 13
    prompts: clustering by prompt). Reference rows: ``one more crowd worker`` (one held-out vote per pair as
    the judge, the other votes as the humans) and ``always left`` (a pure position bias).
    """
    from arena.ppi.gain import unlimited_judge_gain

    data_dir = Path(data_dir)
    crowd = load_battles(data_dir / "crowd-comparisons.csv", layout="llmfao")
    raw = pd.read_csv(data_dir / "crowd-comparisons.csv")
    score = {"left": 1.0, "right": 0.0, "tie": 0.5}
    x = bt.fit_ratings(aggregate(crowd))[0]
    index = {m: i for i, m in enumerate(crowd.models)}
    per_pair = raw.assign(s=raw["winner"].map(score)).groupby("id").agg(
        s=("s", "mean"), prompt=("prompt", "first"), left=("left", "first"), right=("right", "first"))
    p_bt = 1 / (1 + np.exp(-(x[per_pair["left"].map(index).to_numpy()] - x[per_pair["right"].map(index).to_numpy()])))

    def per_model_gain(items: ppi.Items) -> float:
        x0, _, _ = ppi.fit_items(items, 0.0)
        mom = ppi.item_moments(x0, items, "half")
        k = items.n_models
        a = elo.elo_matrix(k) @ np.linalg.pinv(np.asarray(bt.condition(mom.h_l, k)), hermitian=True)[:k]
        diag = [np.diag(a @ ((np.asarray(s) + np.asarray(s).T) / 2) @ a.T) for s in (mom.s_hh, mom.s_hf, mom.s_fl)]
        lam = np.clip(diag[1] / np.where(diag[2] > 0, diag[2], np.inf), 0.0, 1.0)
        return float(diag[0].sum() / (diag[0] - 2 * lam * diag[1] + lam**2 * diag[2]).sum())

    def row(name: str, human: Battles, judge, verdict: np.ndarray | None) -> dict:  # noqa: ANN001
        items, _ = ppi_board.build_items(human, judge)
        gain, lam = unlimited_judge_gain(items)
        out = {"judge": name, "matched": items.n_labelled, "gain": gain, "lambda": lam,
               "gain_per_model": per_model_gain(items)}
        if verdict is not None:
            crowd_sign, judge_sign = np.sign(per_pair["s"] - 0.5), np.sign(verdict - 0.5)
            rf = verdict - p_bt
            by_prompt = pd.Series(rf).groupby(per_pair["prompt"].to_numpy())
            between, within = by_prompt.mean().var(), by_prompt.var().mean()
            out.update(agreement=float(np.mean(crowd_sign == judge_sign)), judge_ties=float(np.mean(verdict == 0.5)),
                       crowd_ties=float(np.mean(crowd_sign == 0)),
                       corr_raw=float(np.corrcoef(per_pair["s"], verdict)[0, 1]),
                       corr_within=float(np.corrcoef(per_pair["s"] - p_bt, rf)[0, 1]),
                       prompt_icc=float(between / (between + within)))
        return out

    rows = []
    for judge in ("gpt4", "gpt3"):
        verdicts = pd.read_csv(data_dir / f"{judge}-crowd-comparisons.csv").set_index("id")
        rows.append(row(judge, crowd, load_battles(data_dir / f"{judge}-crowd-comparisons.csv", layout="llmfao"),
                        verdicts["winner"].map(score).reindex(per_pair.index).to_numpy()))
    df = crowd.df.assign(model_a=crowd.df["model_a"].astype(str), model_b=crowd.df["model_b"].astype(str))
    held = df.assign(pid=raw["id"].to_numpy()).groupby("pid").sample(1, random_state=seed).index
    rest = load_battles(df.drop(index=held).reset_index(drop=True))
    rows.append(row("one more crowd worker", rest, df.loc[held], None))
    rows.append(row("always left", crowd, crowd.df.assign(winner="model_a"), None))
    return pd.DataFrame(rows)
