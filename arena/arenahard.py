"""Judge-vs-baseline leaderboards, Arena-Hard style (Li et al. 2024, "From Crowdsourced Data to High-Quality
Benchmarks: Arena-Hard and BenchBuilder", arXiv:2406.11939).

Every model is judged against a fixed baseline on each prompt in both orders ("games"). A verdict label
(``A>>B, A>B, A=B, B>A, B>>A``) becomes a score for the model (1 win, 0.5 tie, 0 loss); a strong verdict
(``>>``) counts ``strong_weight`` times (Arena-Hard: 3). Scores feed the Bradley-Terry fit of
:mod:`arena.bt.likelihood` (ties counted half) with the baseline pinned; the win rate vs the baseline is
``sigmoid(theta_model - theta_baseline)``. Bootstrap CIs resample *prompts* (both games and all their
weight together, paired across models) and refit with the vmapped chord-Newton of :mod:`arena.bootstrap.refits`.

Games table (one row per game): ``uid, model, opponent, game (1 or 2), score, weight, label, category``.
In Arena-Hard game 1 shows the baseline as A and the model as B; game 2 swaps them.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pandas as pd

from arena.bootstrap import intervals as bootstrap_intervals
from arena.bootstrap import refits as bs
from arena.bt import elo
from arena.bt import likelihood as bt
from arena.bt.diagnostics import beat_edges, separation, strong_groups
from arena.jax_setup import float64
from preflab.errors import InputError


def inconsistency(games: pd.DataFrame) -> pd.Series:
    """Share of prompts per model whose two games disagree on the winner (one says model, the other baseline)."""
    both = games.pivot_table(index=["model", "opponent", "uid"], columns="game", values="score", aggfunc="first")
    both = both.dropna()
    if both.empty:
        return pd.Series(dtype=float)
    sign = np.sign(both - 0.5)
    flipped = (sign[1] * sign[2]) < 0
    return flipped.groupby(level="model").mean()


def prompt_counts(games: pd.DataFrame, models: list[str]) -> tuple[bt.PairData, np.ndarray, list[str]]:
    """BT pair data of all games, and the per-prompt (uid) contributions (U, P, 3) whose sum it is."""
    idx = {m: i for i, m in enumerate(models)}
    a = games["model"].map(idx).to_numpy()
    b = games["opponent"].map(idx).to_numpy()
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    keys, pair = np.unique(lo * len(models) + hi, return_inverse=True)
    uids, u = np.unique(games["uid"].astype(str).to_numpy(), return_inverse=True)
    s, w = games["score"].to_numpy(float), games["weight"].to_numpy(float)
    s_lo = np.where(a == lo, s, 1.0 - s)  # score of the lower-index model of the pair
    per = np.zeros((len(uids), len(keys), 3))
    np.add.at(per, (u, pair, 0), w * (s_lo == 1.0))
    np.add.at(per, (u, pair, 1), w * (s_lo == 0.0))
    np.add.at(per, (u, pair, 2), w * (s_lo == 0.5))
    pi, pj = np.divmod(keys, len(models))
    return bt.PairData(pi.astype(np.int32), pj.astype(np.int32), per.sum(axis=0)), per, list(uids)


def detect_baseline(games: pd.DataFrame) -> str:
    """The baseline: the files' own (``attrs["baseline"]``), else the one model that plays in every game.

    Raises ValueError when no single model is in every game (then the baseline must be given)."""
    if games.attrs.get("baseline"):
        return str(games.attrs["baseline"])
    names = sorted(set(games["model"]) | set(games["opponent"]))
    every = [m for m in names if ((games["model"] == m) | (games["opponent"] == m)).all()]
    if len(every) != 1:
        why = "no model plays in every game" if not every else f"{' and '.join(every)} both play in every game"
        raise ValueError(f"cannot tell the baseline: {why}; pass --baseline NAME")
    return every[0]


def orient(games: pd.DataFrame, baseline: str, allow_indirect: bool = False) -> pd.DataFrame:
    """Games with the baseline as ``opponent`` wherever it plays (score flipped to the model's side).

    Games between two other models are an input error unless ``allow_indirect``: their win rate "vs the
    baseline" would be inferred through the BT model, not judged."""
    flip = (games["model"] == baseline).to_numpy()
    out = games.copy()
    out.loc[flip, ["model", "opponent"]] = games.loc[flip, ["opponent", "model"]].to_numpy()
    out.loc[flip, "score"] = 1.0 - games.loc[flip, "score"]
    off = (out["opponent"] != baseline).to_numpy()
    if off.any() and not allow_indirect:
        first = out.loc[off].iloc[0]
        raise InputError("<games>", None, "baseline", f"{int(off.sum())} of {len(out)} games do not involve "
                              f"the baseline '{baseline}' (e.g. '{first['model']}' vs '{first['opponent']}' on "
                              f"prompt '{first['uid']}')", "keep only games against the baseline, choose another "
                              "--baseline, or pass --indirect to fit them by BT with the baseline pinned")
    return out


@float64
def baseline_leaderboard(games: pd.DataFrame, baseline: str, *, n_bootstrap: int = 1000, level: float = 0.95,
                         seed: int = 0, chunk: int = 200, style: pd.DataFrame | None = None,
                         allow_indirect: bool = False) -> pd.DataFrame:
    """Win rate vs ``baseline`` (percent, BT with the baseline pinned) with prompt-bootstrap CIs, per model.

    Columns ``model, win_rate, lower, upper, rating, rating_lower, rating_upper, score, games, direct,
    prompts, inconsistent, note``; ``rating`` is on the Elo scale with the baseline at 1000. ``score`` is the
    plain weighted mean score, ``direct`` the games against the baseline. Games between other models are an
    error unless ``allow_indirect`` (see :func:`orient`); models in ``games.attrs["models"]`` with no readable
    game are listed without a rating. ``style`` (per-answer style totals, see :func:`style_battles`) switches
    to the style-controlled BT of :mod:`arena.leaderboard`; both paths resample prompts.
    """
    models = sorted(set(games["model"]) | set(games["opponent"]))
    if baseline not in models:
        raise ValueError(f"baseline '{baseline}' is not in the games (models: {models[:10]})")
    games = orient(games, baseline, allow_indirect)
    if style is not None:
        out = _style_controlled(games, baseline, style, n_bootstrap, level, seed)
    else:
        out = _plain(games, models, baseline, n_bootstrap, level, seed, chunk)
    coefficients, extra = out.attrs.get("style_coefficients"), {a: out.attrs.get(a) for a in
                                                                 ("separation", "bootstrap_excluded")}
    by_model = games.groupby("model")
    wsum = games.assign(ws=games["score"] * games["weight"]).groupby("model")[["ws", "weight"]].sum()
    out["score"] = out["model"].map(100 * wsum["ws"] / wsum["weight"])
    out["games"] = out["model"].map(by_model.size()).fillna(0).astype(int)
    direct = games[games["opponent"] == baseline]
    out["direct"] = out["model"].map(direct.groupby("model").size()).fillna(0).astype(int)
    out["prompts"] = out["model"].map(by_model["uid"].nunique()).fillna(0).astype(int)
    out["inconsistent"] = out["model"].map(inconsistency(games))
    prior = out["note"] if "note" in out else pd.Series("", index=out.index)
    out["note"] = np.where((out["direct"] == 0) & (out["model"] != baseline),
                           "not judged vs the baseline: BT inference", prior.fillna(""))
    out.loc[out["model"] == baseline, ["score", "inconsistent"]] = np.nan
    out.loc[out["model"] == baseline, "note"] = "baseline"
    missing = sorted(set(games.attrs.get("models", ())) - set(models))
    if missing:  # judged, but no readable game: listed, with no rating
        empty = pd.DataFrame({"model": missing, "games": 0, "direct": 0, "prompts": 0,
                              "note": "no readable games (all verdicts unparsable)"})
        out = pd.concat([out, empty], ignore_index=True)
        out[["games", "direct", "prompts"]] = out[["games", "direct", "prompts"]].astype(int)
    out.attrs.update(baseline=baseline, level=level, n_bootstrap=n_bootstrap, skipped=games.attrs.get("skipped", 0),
                     indirect_games=int((games["opponent"] != baseline).sum()), no_games=missing,
                     resampling_unit="prompt", **extra)
    if style is not None:
        out.attrs["style_coefficients"] = coefficients
    return out.sort_values("win_rate", ascending=False, ignore_index=True, na_position="last")


def _plain(games: pd.DataFrame, models: list[str], baseline: str, n_bootstrap: int, level: float, seed: int,
           chunk: int) -> pd.DataFrame:
    k, b = len(models), models.index(baseline)
    data, per_prompt, _ = prompt_counts(games, models)
    fit = bt.fit(jnp.asarray(bt.initial_x(data, k, "half")), data, "half")
    x = np.asarray(fit.x)
    gap = x[:k] - x[b]
    ratings = elo.to_elo(x[:k], anchor=b, anchor_rating=1000.0)
    out = pd.DataFrame({"model": models, "win_rate": 100 / (1 + np.exp(-gap)), "rating": ratings})
    sep = separation(models, data.i, data.j, data.counts)
    # models outside the baseline's group won (or lost) every game that links them to it: rating +-infinity
    group = next(g for g in sep.groups if baseline in g) if sep else models
    identified = np.isin(models, group)
    if n_bootstrap > 0:
        reps, ok, labels = refit_resamples(data, x, per_prompt, prompt_resamples(
            per_prompt.shape[0], n_bootstrap, seed), chunk, flags=True)
        rep_gap = reps[:, :k] - reps[:, [b]]
        # win rates stay defined (0 or 100%) in separated resamples: only unconverged refits are left out
        lo, hi = bootstrap_intervals.usable_interval(100 / (1 + np.exp(-rep_gap)), ok, level=level)
        out["lower"], out["upper"] = lo, hi
        # a rating (vs the pinned baseline) is finite in a resample iff the model is in the baseline's group
        linked = labels == labels[:, [b]]
        rep_elo = elo.to_elo(reps[:, :k], anchor=b, anchor_rating=1000.0)
        lo, hi = bootstrap_intervals.usable_interval(rep_elo, ok[:, None] & linked, ~linked & (rep_gap > 0),
                                                     ~linked & (rep_gap <= 0), level)
        out["rating_lower"], out["rating_upper"] = np.where(identified, lo, -np.inf), np.where(identified, hi, np.inf)
        out.attrs["bootstrap_excluded"] = {"not_converged": int((~ok).sum()),
                                           "separated": int((~linked).any(axis=1).sum())}
    out["note"] = np.where(identified, "", "won or lost every linking game: rating unbounded, win-rate interval "
                                           "degenerate at the boundary")
    out.attrs["separation"] = None if sep is None else sep.as_dict()
    return out


def prompt_resamples(n_prompts: int, n_bootstrap: int, seed: int = 0) -> np.ndarray:
    """Multinomial prompt counts (n_bootstrap, n_prompts): prompts drawn with replacement, paired across models."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_prompts, np.full(n_prompts, 1.0 / n_prompts), size=n_bootstrap).astype(float)


@float64
def refit_resamples(data: bt.PairData, x: np.ndarray, per_prompt: np.ndarray, resamples: np.ndarray,
                    chunk: int = 200, flags: bool = False):
    """BT refits (R, K+1) for prompt counts ``resamples`` (R, U): pair counts are ``resamples @ per_prompt``,
    refitted by vmapped Newton from the full-data fit (:func:`arena.bootstrap.refits.newton_refit_chunk`).

    With ``flags``, also converged (R,) and the strongly connected group labels (R, K) of each resample
    (:func:`arena.bt.diagnostics.strong_groups`); without, a refit that does not converge raises FloatingPointError."""
    d = bt.PairData(jnp.asarray(data.i), jnp.asarray(data.j), jnp.asarray(data.counts))
    flat = per_prompt.reshape(per_prompt.shape[0], -1)
    k = len(x) - 1
    src, dst, _ = beat_edges(np.asarray(data.i), np.asarray(data.j), np.asarray(data.counts))
    out, marks = [], []
    for start in range(0, resamples.shape[0], chunk):
        counts = (resamples[start:start + chunk] @ flat).reshape(-1, *data.counts.shape)  # (R, P, 3)
        xs, ok = bs.newton_refit_chunk(jnp.asarray(counts), jnp.asarray(x), d, "half")
        ok = np.asarray(ok)
        if not flags and not ok.all():
            raise FloatingPointError("a bootstrap refit did not converge")
        out.append(np.asarray(xs))
        if flags:
            weight = beat_edges(np.asarray(data.i), np.asarray(data.j), np.transpose(counts, (1, 2, 0)))[2]
            marks.append((ok, strong_groups(k, src, dst, weight)))
    reps = np.concatenate(out)
    if not flags:
        return reps
    ok, labels = (np.concatenate(m) for m in zip(*marks, strict=True))
    return reps, ok, labels


@float64
def ci_width_by_weight(load, weights: tuple[float, ...] = (1.0, 3.0), **kwargs) -> pd.DataFrame:
    """Width of the win-rate CI per model for each strong-verdict weight; ``load(weight) -> games``."""
    cols = {}
    for w in weights:
        lb = baseline_leaderboard(load(w), **kwargs).set_index("model")
        cols[f"width_w{w:g}"] = lb["upper"] - lb["lower"]
        cols[f"win_rate_w{w:g}"] = lb["win_rate"]
    return pd.DataFrame(cols)


def style_battles(games: pd.DataFrame, style: pd.DataFrame) -> pd.DataFrame:
    """Games as Chatbot Arena battles with per-side style totals from ``style`` (indexed by (uid, model), columns
    ``tokens, header_count, list_count, bold_count``); a game of weight w becomes w battles, as in Arena-Hard.

    The model is side b in game 1 and side a in game 2 (Arena-Hard's display order), so the style differences
    appear with both signs: the contextual BT z-scores features around their mean, and a one-sided layout
    would turn the mean length difference into a constant shift of every model against the baseline.
    """
    reps = games.loc[games.index.repeat(games["weight"].round().astype(int))]
    model_is_a = (reps["game"] == 2).to_numpy()
    side_a = np.where(model_is_a, reps["model"], reps["opponent"])
    side_b = np.where(model_is_a, reps["opponent"], reps["model"])
    score_a = np.where(model_is_a, reps["score"], 1.0 - reps["score"])
    winner = np.select([score_a == 1.0, score_a == 0.0], ["model_a", "model_b"], "tie")
    df = pd.DataFrame({"model_a": side_a, "model_b": side_b, "winner": winner,
                       "question_id": reps["uid"].astype(str).to_numpy()})
    for side, names in (("a", side_a), ("b", side_b)):
        key = pd.MultiIndex.from_arrays([df["question_id"], names])
        missing = ~key.isin(style.index)
        if missing.any():
            uid, model = key[missing.argmax()]
            raise InputError("<style features>", None, "uid", f"no style features for model '{model}' on "
                                  f"prompt '{uid}'", "give answers (with metadata or text) for every model")
        feats = style.reindex(key)
        df[f"sum_assistant_{side}_tokens"] = feats["tokens"].to_numpy()
        for name in ("header_count", "list_count", "bold_count"):
            df[f"{name}_{side}"] = feats[name].to_numpy()
    return df


def _style_controlled(games: pd.DataFrame, baseline: str, style: pd.DataFrame, n_bootstrap: int, level: float,
                      seed: int) -> pd.DataFrame:
    from arena.leaderboard import fit_leaderboard
    from arena.leaderboard_options import IntervalOptions

    # cluster="question_id": resample prompts, as the plain path does, not the (weight-repeated) battles
    intervals = IntervalOptions(n_bootstrap=max(n_bootstrap, 2), level=level, seed=seed, cluster="question_id")
    lb = fit_leaderboard(style_battles(games, style), intervals, style_control=True, anchor=f"{baseline}=1000",
                         min_battles=0)
    t = lb.table

    def win_rate(rating: pd.Series) -> np.ndarray:  # baseline pinned at 1000: rating gap -> P(beats baseline)
        return 100 / (1 + np.exp(-(rating.to_numpy() - 1000.0) / lb.scale.per_nat))

    out = pd.DataFrame({"model": t["model"], "win_rate": win_rate(t["rating"]), "lower": win_rate(t["lower"]),
                        "upper": win_rate(t["upper"]), "rating": t["rating"], "rating_lower": t["lower"],
                        "rating_upper": t["upper"]})
    out["note"] = np.where(t["identified"], "", "no MLE (Ford's condition fails): interval unbounded")
    out.attrs.update(style_coefficients=lb.table.attrs.get("style_coefficients"),
                     separation=lb.table.attrs.get("separation"),
                     bootstrap_excluded=lb.table.attrs.get("bootstrap_excluded"))
    return out


def format_baseline_table(lb: pd.DataFrame) -> str:
    """A plain-text view of :func:`baseline_leaderboard` (win rate vs baseline with CI, rating, inconsistency)."""
    level = lb.attrs.get("level", 0.95)
    has_ci = "lower" in lb

    def num(v: float, fmt: str = "{:.1f}") -> str:
        return "-" if pd.isna(v) else fmt.format(v)

    view = pd.DataFrame({
        "model": lb["model"],
        "win_rate": lb["win_rate"].map(num),
        f"{level:.0%} CI": ([f"[{num(lo)}, {num(hi)}]" if pd.notna(lo) else "-"
                             for lo, hi in zip(lb["lower"], lb["upper"], strict=True)] if has_ci else "-"),
        "rating": lb["rating"].map(lambda v: num(v, "{:.0f}")),
        "inconsistent": lb["inconsistent"].map(lambda v: num(100 * v, "{:.1f}%")),
    })
    for col in ("games", "direct"):
        if col in lb:
            view[col] = lb[col]
    if "note" in lb and (lb["note"].fillna("") != "").any():
        view["note"] = lb["note"].fillna("")
    return view.to_string(index=False)
