"""A jury of judges: one panel verdict per pair from several judges, and how much the panel adds.

Rules (:func:`panel_verdicts`):

- ``majority``: the most common verdict among the members that answered; a shared top (e.g. one says x,
  one says y) is a tie, counted as a split. Members with no verdict (unparsable, failed, not run) abstain:
  they are left out, never used to break a tie, and the result does not depend on the members' order.
- ``mean``: the mean of the answering members' P(x), P(y), P(tie) (a member without probabilities
  contributes its verdict one-hot), the largest wins; an exact x–y tie is a tie.
- ``dawid-skene``: each member's reliability as a confusion matrix P(says l | truth c), learned by EM with
  the latent true outcome (Dawid & Skene 1979, "Maximum likelihood estimation of observer error-rates
  using the EM algorithm", Applied Statistics 28:20–28). Pairs with human labels fix the truth (the
  semi-supervised form); pairs without one are latent. The panel's verdict is the posterior's mode. Its
  agreement with humans is scored out of fold (each labelled pair's posterior comes from a fit that did not
  see its label), so the weights are not graded on the labels they were learned from.

The effective number of independent judges (:func:`effective_judges`) is m / (1 + (m − 1) ρ̄) with ρ̄ the
mean pairwise correlation of the members' error indicators against the human label: the design effect of
m equicorrelated measurements (Kish 1965, *Survey Sampling*; Kuncheva & Whitaker 2003 on correlated
classifier errors). Three copies of one judge have ρ̄ = 1 and count as one; independent errors count m.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from judge.verdicts.judged_pairs import OUTCOMES, annotator_columns, column, swap_sides
from preflab.outcomes import Outcome

RULES = ("majority", "mean", "dawid-skene")
_K = len(OUTCOMES)  # x, y, tie: codes 0, 1, 2 are their own indices


@dataclass(frozen=True)
class JuryTable:
    """The members' verdicts on shared pairs: ``codes`` (pairs × members, NaN = abstained), ``probs``
    (pairs × members × [x, y, tie], NaN where a member gave no probabilities), the pair keys, and the human
    labels (``human`` majority, ``ratings`` single annotators) when the members' tables carry them."""

    keys: pd.DataFrame
    members: tuple[str, ...]
    codes: np.ndarray
    probs: np.ndarray
    human: np.ndarray
    ratings: np.ndarray | None
    lengths: np.ndarray | None = None  # pairs × (len_x, len_y), from the first member table that has them
    labels: str = "humans"  # what the labels are: "humans", or "correctness" (objective labels)


def _member_columns(pairs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """One member's per-pair winner (both orders combined conservatively) and averaged probabilities."""
    from judge.metrics.calibrate import judge_codes

    codes = judge_codes(pairs)
    code = np.where(np.isin(codes["conservative"], OUTCOMES), codes["conservative"], np.nan)
    probs = np.stack([codes["p_x"], codes["p_y"], codes["p_tie"]], axis=1)
    return code, probs


def align_members(members: Mapping[str, pd.DataFrame]) -> JuryTable:
    """Join members' judged-pairs tables (:mod:`judge.verdicts.judged_pairs`) on (item, unordered model pair).

    The first member's orientation (which model is x) is kept; a member listing a pair the other way round
    is flipped. Pairs some member did not judge are kept with that member abstaining. Human labels come from
    the first member table that has them.
    """
    if len(members) < 2:
        raise ValueError("a jury needs at least two members")
    names = tuple(members)
    index: dict[tuple, int] = {}
    key_rows: list[dict] = []
    per_member = []
    for name in names:
        pairs = members[name]
        code, probs = _member_columns(pairs)
        xs = pairs["model_x"].astype(str).to_numpy() if "model_x" in pairs else np.full(len(pairs), "")
        ys = pairs["model_y"].astype(str).to_numpy() if "model_y" in pairs else np.full(len(pairs), "")
        rows, flipped = [], []
        for item, x, y in zip(pairs["item_id"].astype(str), xs, ys, strict=True):
            key = (item, min(x, y), max(x, y))
            if key not in index:
                index[key] = len(key_rows)
                key_rows.append({"item_id": item, "model_x": x, "model_y": y})
            rows.append(index[key])
            flipped.append(key_rows[index[key]]["model_x"] != x)
        per_member.append((np.array(rows), np.array(flipped, dtype=bool), code, probs))
    n, m = len(key_rows), len(names)
    codes, probs = np.full((n, m), np.nan), np.full((n, m, _K), np.nan)
    for j, (rows, flipped, code, p) in enumerate(per_member):
        codes[rows, j] = np.where(flipped, swap_sides(code), code)
        probs[rows, j] = np.where(flipped[:, None], p[:, [1, 0, 2]], p)
    human, ratings = np.full(n, np.nan), None
    for name, (rows, flipped, _, _) in zip(names, per_member, strict=True):
        pairs = members[name]
        if "human" in pairs and pairs["human"].notna().any():
            human[rows] = np.where(flipped, swap_sides(column(pairs, "human")), column(pairs, "human"))
            cols = annotator_columns(pairs)
            if cols:
                r = pairs[cols].to_numpy(dtype=float)
                ratings = np.full((n, len(cols)), np.nan)
                ratings[rows] = np.where(flipped[:, None], swap_sides(r), r)
            break
    kinds = [p.attrs.get("label_source") for p in members.values() if "human" in p and p["human"].notna().any()]
    return JuryTable(pd.DataFrame(key_rows), names, codes, probs, human, ratings, _lengths(members, per_member, n),
                     next((k for k in kinds if k), "humans"))


def _lengths(members: Mapping[str, pd.DataFrame], per_member: list, n: int) -> np.ndarray | None:
    """Answer lengths (len_x, len_y) in the jury's orientation, from the first member table that has them."""
    for pairs, (rows, flipped, _, _) in zip(members.values(), per_member, strict=True):
        if "len_x" in pairs and "len_y" in pairs and pairs["len_x"].notna().any():
            both = np.column_stack([column(pairs, "len_x"), column(pairs, "len_y")])
            out = np.full((n, 2), np.nan)
            out[rows] = np.where(flipped[:, None], both[:, ::-1], both)
            return out
    return None


def majority_panel(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(panel code per pair, split flag): plurality of the non-abstaining members; a shared top is a tie
    (split); no member answering is :data:`UNPARSABLE`. Invariant under permuting the members."""
    codes = np.asarray(codes, dtype=float)
    counts = np.stack([(codes == c).sum(axis=1) for c in OUTCOMES], axis=1)
    top = counts.max(axis=1)
    leaders = counts == top[:, None]
    split = (leaders.sum(axis=1) > 1) & (top > 0)
    panel = np.where(top == 0, Outcome.UNPARSABLE,
                     np.where(split, Outcome.TIE, np.argmax(counts, axis=1))).astype(float)
    return panel, split


def mean_probability_panel(codes: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Panel code from the answering members' mean (P(x), P(y), P(tie)); one-hot for members without
    probabilities; an exact x–y tie is a tie; nobody answering is unparsable."""
    codes = np.asarray(codes, dtype=float)
    onehot = np.stack([codes == c for c in OUTCOMES], axis=-1).astype(float)
    p = np.where(np.isnan(probs).any(axis=-1, keepdims=True), onehot, np.nan_to_num(probs))
    answered = ~np.isnan(codes)
    n = answered.sum(axis=1)
    mean = np.where(answered[..., None], p, 0.0).sum(axis=1) / np.maximum(n, 1)[:, None]
    panel = np.argmax(mean, axis=1).astype(float)
    x_y_level = np.isclose(mean[:, Outcome.FIRST], mean[:, Outcome.SECOND])
    panel = np.where(x_y_level & (mean[:, Outcome.TIE] <= mean[:, Outcome.FIRST]), Outcome.TIE, panel)
    return np.where(n == 0, Outcome.UNPARSABLE, panel)


def _ds_fit(votes: np.ndarray, truth: np.ndarray, n_iter: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """EM for Dawid & Skene's model. ``votes`` pairs × members (NaN = abstain), ``truth`` the known class
    (NaN = latent). Returns (class prior, confusion [member, true, said]), each smoothed by ``alpha``."""
    n, m = votes.shape
    said = _said(votes)
    known = ~np.isnan(truth)
    # Start from the labels where known, the members' majority elsewhere (Dawid & Skene's own start).
    start = np.where(known, truth, majority_panel(votes)[0])
    post = np.stack([start == c for c in OUTCOMES], axis=1).astype(float)
    post[~np.isin(start, OUTCOMES)] = 1.0 / _K
    for _ in range(n_iter):
        prior = (post.sum(axis=0) + alpha) / (n + _K * alpha)
        conf = np.einsum("ic,imk->mck", post, said) + alpha
        conf /= conf.sum(axis=-1, keepdims=True)
        new = _posterior(said, prior, conf)
        new[known] = post[known]
        if np.allclose(new, post, atol=1e-8):
            break
        post = new
    return prior, conf


def _said(votes: np.ndarray) -> np.ndarray:
    """One-hot votes, pairs × members × outcomes (an abstention is all zeros)."""
    return np.stack([votes == c for c in OUTCOMES], axis=-1).astype(float)


def _posterior(said: np.ndarray, prior: np.ndarray, conf: np.ndarray) -> np.ndarray:
    """P(true outcome | the members' votes) per pair under the fitted prior and confusion matrices."""
    log_post = np.einsum("imk,mck->ic", said, np.log(conf)) + np.log(prior)
    post = np.exp(log_post - log_post.max(axis=1, keepdims=True))
    return post / post.sum(axis=1, keepdims=True)


def _ds_posterior(votes: np.ndarray, prior: np.ndarray, conf: np.ndarray) -> np.ndarray:
    return _posterior(_said(votes), prior, conf)


def dawid_skene_panel(codes: np.ndarray, human: np.ndarray | None = None, folds: int = 5, n_iter: int = 200,
                      alpha: float = 1.0, seed: int = 0) -> dict:
    """Panel verdicts by Dawid–Skene (see the module docstring): ``panel`` codes, ``posterior`` (pairs × 3),
    and ``confusion`` (member × true × said, fit on every label). Labelled pairs are scored out of fold."""
    codes = np.asarray(codes, dtype=float)
    human = np.full(len(codes), np.nan) if human is None else np.where(np.isin(human, OUTCOMES), human, np.nan)
    prior, conf = _ds_fit(codes, human, n_iter, alpha)
    post = _ds_posterior(codes, prior, conf)
    labelled = np.flatnonzero(~np.isnan(human))
    if labelled.size >= folds:
        fold = np.random.default_rng(seed).permutation(labelled.size) % folds
        for f in range(folds):
            held = labelled[fold == f]
            hidden = human.copy()
            hidden[held] = np.nan
            p_f, c_f = _ds_fit(codes, hidden, n_iter, alpha)
            post[held] = _ds_posterior(codes[held], p_f, c_f)
    panel = np.argmax(post, axis=1).astype(float)
    x_y_level = np.isclose(post[:, Outcome.FIRST], post[:, Outcome.SECOND])
    panel = np.where(x_y_level & (post[:, Outcome.TIE] <= post[:, Outcome.FIRST]), Outcome.TIE, panel)
    panel = np.where(np.isnan(codes).all(axis=1), Outcome.UNPARSABLE, panel)
    return {"panel": panel, "posterior": post, "confusion": conf, "prior": prior}


def panel_verdicts(table: JuryTable, rule: str = "majority", seed: int = 0) -> dict:
    """The panel's code per pair under ``rule`` (one of :data:`RULES`), with its split/abstention counts."""
    if rule not in RULES:
        raise ValueError(f"jury rule must be one of {RULES}, got {rule!r}")
    answered = (~np.isnan(table.codes)).sum(axis=1)
    out: dict = {"rule": rule, "abstentions": int(np.isnan(table.codes).sum()),
                 "no_member_answered": int(np.sum(answered == 0))}
    if rule == "majority":
        out["panel"], split = majority_panel(table.codes)
        out["splits"] = int(split.sum())
    elif rule == "mean":
        out["panel"] = mean_probability_panel(table.codes, table.probs)
    else:
        ds = dawid_skene_panel(table.codes, table.human, seed=seed)
        out.update(panel=ds["panel"], posterior=ds["posterior"], confusion=ds["confusion"])
    return out


def _error_correlation(errors: np.ndarray) -> float:
    """Mean pairwise Pearson correlation of the columns of a 0/1 error matrix (pairs with a constant
    column, whose correlation is undefined, are left out; NaN when none is defined)."""
    m = errors.shape[1]
    sd = errors.std(axis=0)
    rhos = [np.corrcoef(errors[:, j], errors[:, k])[0, 1] for j in range(m) for k in range(j + 1, m)
            if sd[j] > 0 and sd[k] > 0]
    return float(np.mean(rhos)) if rhos else float("nan")


def effective_number(mean_correlation: float, m: int) -> float:
    """m / (1 + (m − 1) ρ̄), kept within [1, m] (negatively correlated errors are not counted as more
    than m judges)."""
    if np.isnan(mean_correlation):
        return float("nan")
    return float(np.clip(m / (1.0 + (m - 1) * mean_correlation), 1.0, m))


def effective_judges(codes: np.ndarray, human: np.ndarray, n_bootstrap: int = 500, level: float = 0.95,
                     seed: int = 0) -> dict:
    """Effective number of independent judges from the members' error correlation on labelled pairs (an
    abstention is an error, as in agreement), with a percentile bootstrap interval over pairs."""
    codes, human = np.asarray(codes, dtype=float), np.asarray(human, dtype=float)
    keep = ~np.isnan(human)
    errors = (codes[keep] != human[keep][:, None]).astype(float)
    m = codes.shape[1]
    rho = _error_correlation(errors)
    value = effective_number(rho, m)
    if errors.shape[0] < 2 or np.isnan(value):
        return {"value": value, "lower": float("nan"), "upper": float("nan"), "mean_error_correlation": rho,
                "members": m, "n": int(keep.sum())}
    rng = np.random.default_rng(seed)
    boots = np.array([effective_number(_error_correlation(errors[idx]), m)
                      for idx in rng.integers(0, errors.shape[0], size=(n_bootstrap, errors.shape[0]))])
    boots = boots[~np.isnan(boots)]
    a = (1 - level) / 2
    lo, hi = np.percentile(boots, [100 * a, 100 * (1 - a)]) if boots.size else (np.nan, np.nan)
    return {"value": value, "lower": float(lo), "upper": float(hi), "mean_error_correlation": rho,
            "members": m, "n": int(keep.sum())}
