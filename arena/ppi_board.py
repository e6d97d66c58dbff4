"""Judge-assisted leaderboards: human battles plus judge verdicts in, a PPI++ rated table out.

Items are (question_id, unordered model pair). Human battles on an item are one cluster; judge rows on an
item are averaged into one label (both orders of a verdict file, or several judge battles). Items with
human votes and a judge label are the labelled set, judge-only items the unlabelled set. The math is
:mod:`arena.ppi`; the rank rule and the interval helpers are the leaderboard's (:mod:`arena.leaderboard`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from arena import bootstrap as bs
from arena import bt, ppi
from arena.data import A_WINS, B_WINS, WINNERS, Battles
from arena.leaderboard import CI, EloScale, _sandwich_interval
from preflab.errors import InputError

PROB_COLUMNS = ("p_a", "p_b", "p_tie")
"""Soft judge labels: probabilities that model_a wins, model_b wins, tie (rows are normalised)."""


def _item_key(frame: pd.DataFrame, source: str) -> pd.Series:
    for col in ("question_id", "item_id"):
        if col in frame.columns and frame[col].notna().all():
            return frame[col].astype(str)
    raise InputError(source, None, "question_id", "missing or blank on some rows",
                          "PPI matches human and judge rows by question_id (or item_id) and the model pair; "
                          "give every row one")


def _oriented(a: np.ndarray, b: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lo, hi, labels (n, 3) as lo wins, hi wins, tie) from model codes and (a wins, b wins, tie) labels."""
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    swap = a != lo
    out = labels.copy()
    out[swap, 0], out[swap, 1] = labels[swap, 1], labels[swap, 0]
    return lo, hi, out


def _one_hot(codes: np.ndarray) -> np.ndarray:
    out = np.zeros((len(codes), 3))
    out[np.arange(len(codes)), np.where(codes >= 2, 2, codes)] = 1.0
    return out


def human_items(battles: Battles) -> pd.DataFrame:
    """One row per item: ``qid, lo, hi`` (model codes, lo < hi) and vote counts ``h0, h1, h2``."""
    df = battles.df
    qid = _item_key(df, battles.source)
    lo, hi, lab = _oriented(df["model_a"].cat.codes.to_numpy(np.int64), df["model_b"].cat.codes.to_numpy(np.int64),
                            _one_hot(battles.outcome.astype(np.int64)))
    frame = pd.DataFrame({"qid": qid.to_numpy(), "lo": lo, "hi": hi, "h0": lab[:, 0], "h1": lab[:, 1],
                          "h2": lab[:, 2]})
    return frame.groupby(["qid", "lo", "hi"], sort=False, as_index=False).sum()


def judge_items(judge: Battles | pd.DataFrame, models: list[str], source: str = "<judge>",
                labels: str = "auto") -> tuple[pd.DataFrame, dict[str, int]]:
    """One row per judged item: ``qid, lo, hi, f0, f1, f2`` (mean label) and the dropped-row counts.

    ``labels``: ``soft`` uses ``p_a, p_b, p_tie``; ``hard`` the ``winner`` column; ``auto`` soft when present.
    """
    if isinstance(judge, Battles):
        source, judge = judge.source, judge.df
    for col in ("model_a", "model_b"):
        if col not in judge.columns:
            raise InputError(source, None, col, "column missing", "judge rows need model_a, model_b, "
                                  "question_id and winner or p_a/p_b/p_tie")
    soft = all(c in judge.columns for c in PROB_COLUMNS) and labels != "hard"
    if labels == "soft" and not soft:
        raise InputError(source, None, "p_a", "no probability columns", "soft labels need p_a, p_b, p_tie")
    if not soft and "winner" not in judge.columns:
        raise InputError(source, None, "winner", "column missing", "give winner or p_a/p_b/p_tie")
    qid = _item_key(judge, source).to_numpy()
    index = {m: i for i, m in enumerate(models)}
    a = judge["model_a"].astype(str).map(index).to_numpy(dtype=float)
    b = judge["model_b"].astype(str).map(index).to_numpy(dtype=float)
    if soft:
        lab = judge[list(PROB_COLUMNS)].to_numpy(dtype=float)
        lab = lab / lab.sum(axis=1, keepdims=True)
    else:
        code = pd.Categorical(judge["winner"].astype(str), categories=list(WINNERS)).codes.astype(np.int64)
        if (code < 0).any():
            bad = judge["winner"][code < 0].iloc[0]
            raise InputError(source, int(np.flatnonzero(code < 0)[0]) + 1, "winner",
                                  f"unknown winner {bad!r}", f"use one of {WINNERS}")
        lab = _one_hot(code)
    unknown = np.isnan(a) | np.isnan(b)
    unparsable = ~unknown & ~np.isfinite(lab).all(axis=1)
    keep = ~unknown & ~unparsable & (a != b)
    dropped = {"judge rows naming a model without human votes": int(unknown.sum()),
               "judge rows without a usable label": int(unparsable.sum())}
    lo, hi, lab = _oriented(a[keep].astype(np.int64), b[keep].astype(np.int64), lab[keep])
    frame = pd.DataFrame({"qid": qid[keep], "lo": lo, "hi": hi, "f0": lab[:, 0], "f1": lab[:, 1],
                          "f2": lab[:, 2]})
    return frame.groupby(["qid", "lo", "hi"], sort=False, as_index=False).mean(), dropped


def build_items(human: Battles, judge: Battles | pd.DataFrame, labels: str = "auto",
                judge_source: str = "<judge>") -> tuple[ppi.Items, dict[str, int]]:
    """Match human and judge items; labelled = both, unlabelled = judge only; counts of what was set aside."""
    models = human.models
    hum = human_items(human)
    jud, dropped = judge_items(judge, models, judge_source, labels)
    both = hum.merge(jud, on=["qid", "lo", "hi"], how="left", indicator=True)
    unmatched = both["_merge"] == "left_only"
    dropped["human items without a judge label"] = int(unmatched.sum())
    lab = both[~unmatched]
    unl = jud.merge(hum[["qid", "lo", "hi"]], on=["qid", "lo", "hi"], how="left", indicator=True)
    unl = unl[unl["_merge"] == "left_only"]
    k = len(models)
    pair_key = np.unique(np.r_[lab["lo"] * k + lab["hi"], unl["lo"] * k + unl["hi"]].astype(np.int64))
    lab = lab.assign(p=np.searchsorted(pair_key, lab["lo"] * k + lab["hi"]))
    unl = unl.assign(p=np.searchsorted(pair_key, unl["lo"] * k + unl["hi"]))
    lc = lab.groupby(["p", "h0", "h1", "h2", "f0", "f1", "f2"], sort=False).size().reset_index(name="m")
    uc = unl.groupby(["p", "f0", "f1", "f2"], sort=False).size().reset_index(name="m")
    items = ppi.Items(k, (pair_key // k).astype(np.int32), (pair_key % k).astype(np.int32),
                      lc["p"].to_numpy(np.int64), lc[["h0", "h1", "h2"]].to_numpy(float),
                      lc[["f0", "f1", "f2"]].to_numpy(float), lc["m"].to_numpy(float),
                      uc["p"].to_numpy(np.int64), uc[["f0", "f1", "f2"]].to_numpy(float), uc["m"].to_numpy(float))
    return ppi.pad_items(items), dropped


def per_model(items: ppi.Items, models: list[str]) -> pd.DataFrame:
    """Human battles, wins, losses, ties per model over the labelled items (the votes PPI uses)."""
    k = len(models)
    li, lj, _, _ = ppi.cell_models(items)
    h = items.l_human * items.l_mult[:, None]
    total = h.sum(1)
    battles = np.bincount(li, total, k) + np.bincount(lj, total, k)
    wins = np.bincount(li, h[:, A_WINS], k) + np.bincount(lj, h[:, B_WINS], k)
    ties = np.bincount(li, h[:, 2], k) + np.bincount(lj, h[:, 2], k)
    return pd.DataFrame({"model": models, "battles": battles, "wins": wins, "losses": battles - wins - ties,
                         "ties": ties})


def ppi_leaderboard(human: Battles, judge: Battles | pd.DataFrame, *, ci: CI = "bootstrap",
                    n_bootstrap: int = 1000, ties: str = "half", level: float = 0.95, seed: int = 0,
                    lam: float | None = None, labels: str = "auto", include_labelled: bool = True,
                    scale: float = 400.0, base: float = 10.0, init: float = 1000.0,
                    judge_source: str = "<judge>", **_: Any) -> pd.DataFrame:
    """The PPI++ leaderboard: the usual columns (``model, rating, lower, upper, rank, battles, ...``) plus
    ``ess`` (effective human votes per model: battles x human-only variance / PPI variance) and the human-only
    fit on the same labelled items (``rating_human``, ``lower_human``, ``upper_human``: clustered sandwich
    intervals). ``attrs`` hold
    ``lambda``, ``n_human_items``, ``n_judge_items``, ``ess_gain`` (human-only / PPI total variance)."""
    if ci not in ("bootstrap", "sandwich", "both"):
        raise ValueError(f"ci must be 'bootstrap', 'sandwich' or 'both', not {ci!r}")
    if ties not in bt.TIES:
        raise ValueError(f"ties must be one of {bt.TIES}, not {ties!r}")
    items, dropped = build_items(human, judge, labels, judge_source)
    models = human.models
    k = len(models)
    fit = ppi.fit_ppi(items, lam, ties, include_labelled)
    sc = EloScale(scale, base, init)
    ratings = bt.to_elo(fit.x[:k], scale=scale, base=base, init=init)
    se, z, cov_r = _sandwich_interval(fit.x, fit.covariance, None, sc, level)
    se0, _, cov_r0 = _sandwich_interval(fit.x_human, fit.covariance_human, None, sc, level)
    human_ratings = bt.to_elo(fit.x_human[:k], scale=scale, base=base, init=init)
    table = per_model(items, models).assign(rating=ratings, se=se, rating_human=human_ratings,
                                            lower_human=human_ratings - z * se0, upper_human=human_ratings + z * se0)
    table["ess"] = table["battles"] * se0**2 / np.maximum(se, 1e-300) ** 2
    table["lower_sandwich"], table["upper_sandwich"] = ratings - z * se, ratings + z * se
    notes = [f"{v} {name} (not used)" for name, v in dropped.items() if v]
    if not fit.converged:
        notes.append("the PPI Newton fit did not converge")
    want_bs = ci in ("bootstrap", "both")
    if want_bs:
        reps, n_fallback = ppi.bootstrap_ppi(items, fit.x, fit.lam, n_bootstrap=n_bootstrap, seed=seed, ties=ties,
                                             include_labelled=include_labelled)
        rep_ratings = bt.to_elo(reps[:, :k], scale=scale, base=base, init=init)
        table["lower_bootstrap"], table["upper_bootstrap"] = bs.percentile_interval(rep_ratings, level)
        ranks = bs.replicate_ranks(rep_ratings)
        table["rank_lower"], table["rank_upper"] = np.quantile(ranks, [(1 - level) / 2, (1 + level) / 2],
                                                               axis=0, method="nearest").astype(int)
        if n_fallback:
            notes.append(f"{n_fallback} of {n_bootstrap} bootstrap replicates needed a full Newton refit")
    primary = "bootstrap" if want_bs else "sandwich"
    table["lower"], table["upper"] = table[f"lower_{primary}"], table[f"upper_{primary}"]
    table["rank"] = bs.rank_from_intervals(table["lower"].to_numpy(), table["upper"].to_numpy())
    cols = ["model", "rating", "lower", "upper", "rank", "battles", "wins", "losses", "ties", "ess"]
    table = table[cols + [c for c in table.columns if c not in cols]]
    table = table.sort_values(["rating", "model"], ascending=[False, True], ignore_index=True)
    gain = float(np.trace(cov_r0) / np.trace(cov_r)) if np.trace(cov_r) > 0 else 1.0
    table.attrs.update({"ties": ties, "ci": ci, "level": level, "n_bootstrap": n_bootstrap if want_bs else 0,
                        "seed": seed, "method": "ppi++", "lambda": fit.lam, "n_human_items": items.n_labelled,
                        "n_human_votes": float(table["battles"].sum() / 2),
                        "n_judge_items": items.n_labelled + items.n_unlabelled,
                        "n_unlabelled_items": items.n_unlabelled, "ess_gain": gain,
                        "include_labelled": include_labelled, "diagnostics": notes})
    return table
