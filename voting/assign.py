"""Which item and which two answers a voter sees next (pure functions over frames; no Streamlit).

Rules: a voter never gets an item they voted on or skipped; with ``overlap > 0`` an item stops being
offered once it has that many votes; the two answers are shown on randomised sides.
Strategies: ``uniform`` (any eligible item and pair), ``balanced`` (the least-voted item, then the pair
whose models this voter has seen least, then the least-voted pair), ``active`` (the pair the arena's
sampler says shrinks the leaderboard's uncertainty most, among the eligible items; falls back to
``balanced`` without enough votes). Ties are broken at random, and a share ``explore`` of rounds is drawn
uniformly (``balanced``) or balanced (``active``), so the next pair cannot be predicted from the tallies.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd


def _weights(tallies: pd.DataFrame) -> pd.Series:
    """Votes per tally row: the ``n`` column of aggregated counts (:func:`voting.store.vote_tallies`), else 1."""
    return tallies["n"] if "n" in tallies else pd.Series(1, index=tallies.index)


def votes_per_item(tallies: pd.DataFrame) -> pd.Series:
    """Votes per item id."""
    return _weights(tallies).groupby(tallies["item_id"]).sum() if len(tallies) else pd.Series(dtype=int)


@dataclass(frozen=True)
class Round:
    """One thing to vote on: an item and the models shown left ("A") and right ("B")."""

    item_id: str
    model_left: str
    model_right: str


def eligible_items(items: pd.DataFrame, seen: set[str], tallies: pd.DataFrame, overlap: int = 0) -> pd.DataFrame:
    """Items not yet seen by this voter and, with ``overlap > 0``, still short of ``overlap`` votes."""
    out = items[~items["item_id"].isin(seen)]
    if overlap > 0 and len(tallies):
        out = out[out["item_id"].map(votes_per_item(tallies)).fillna(0) < overlap]
    return out


def pair_counts(tallies: pd.DataFrame) -> dict[tuple[str, str], int]:
    """Votes per unordered model pair, keyed by the sorted pair."""
    if tallies.empty:
        return {}
    lo = tallies[["model_left", "model_right"]].min(axis=1)
    hi = tallies[["model_left", "model_right"]].max(axis=1)
    return {k: int(v) for k, v in _weights(tallies).groupby([lo, hi]).sum().items()}


#: Share of rounds drawn off-strategy (see the module docstring).
EXPLORE = 0.2


def next_round(
    items: pd.DataFrame, seen: set[str], tallies: pd.DataFrame, rng: np.random.Generator,
    strategy: str = "balanced", overlap: int = 0, voter: str | None = None, explore: float = EXPLORE,
    mine: pd.DataFrame | None = None,
) -> Round | None:
    """The next round for a voter, or None when nothing is left for them.

    ``items`` has ``item_id`` and ``models`` (list of answering models); ``tallies`` the dataset's vote counts
    (``item_id, model_left, model_right, outcome, winner_model, n`` from :func:`voting.store.vote_tallies`;
    without ``n`` each row is one vote). ``mine`` holds this voter's own votes (``model_left, model_right``,
    :func:`voting.store.voter_votes`), whose models ``balanced`` spreads evenly; without it, the rows of
    ``tallies`` whose ``voter`` is ``voter`` (None: no per-voter balance).
    """
    pool = eligible_items(items, seen, tallies, overlap)
    if pool.empty:
        return None
    off_strategy = explore > 0 and rng.random() < explore
    if strategy == "uniform" or (strategy == "balanced" and off_strategy):
        row = pool.iloc[int(rng.integers(len(pool)))]
        pairs = list(combinations(sorted(row["models"]), 2))
        x, y = pairs[int(rng.integers(len(pairs)))]
        return _sides(row["item_id"], x, y, rng)
    if strategy == "active" and not off_strategy:
        picked = _active_pair(pool, tallies, rng)
        if picked is not None:
            return Round(*picked)  # next_pair already randomised the sides
    return _balanced(pool, tallies, rng, voter, mine)


def near_fewest(counts: np.ndarray) -> np.ndarray:
    """Indices of counts within one Poisson standard deviation (``sqrt``) of the smallest: as good as the
    minimum given the noise in who happened to vote, so one of them is drawn at random (not always the
    same one, which made the next pair predictable)."""
    low = counts.min()
    return np.flatnonzero(counts <= low + np.sqrt(low))


def _balanced(pool: pd.DataFrame, tallies: pd.DataFrame, rng: np.random.Generator, voter: str | None,
              mine: pd.DataFrame | None = None) -> Round:
    """The least-voted item; among its pairs the one whose models this voter saw least, then the least-voted
    pair; remaining ties at random."""
    n_item = pool["item_id"].map(votes_per_item(tallies)).fillna(0).to_numpy()
    row = pool.iloc[int(rng.choice(near_fewest(n_item)))]
    pairs = list(combinations(sorted(row["models"]), 2))
    if mine is None:
        by_voter = voter is not None and len(tallies) and "voter" in tallies
        mine = tallies[tallies["voter"] == voter] if by_voter else tallies.iloc[:0]
    exposure = pd.concat([mine["model_left"], mine["model_right"]]).value_counts() if len(mine) else {}
    by_pair = pair_counts(tallies)
    seen_by_voter = np.array([exposure.get(x, 0) + exposure.get(y, 0) for x, y in pairs])
    best = np.flatnonzero(seen_by_voter == seen_by_voter.min())
    best = best[near_fewest(np.array([by_pair.get(pairs[b], 0) for b in best]))]
    x, y = pairs[int(rng.choice(best))]
    return _sides(row["item_id"], x, y, rng)


def _sides(item_id: str, x: str, y: str, rng: np.random.Generator) -> Round:
    """Randomise which model is shown on the left."""
    return Round(item_id, x, y) if rng.random() < 0.5 else Round(item_id, y, x)


def tally_counts(tallies: pd.DataFrame, models: list[str]):  # noqa: ANN201 - arena.io.battles.PairCounts
    """Votes so far as :class:`arena.io.battles.PairCounts` over ``models`` (left = model_a)."""
    from arena.io.battles import aggregate_codes
    from voting.votes import vote_codes

    index = {m: k for k, m in enumerate(models)}
    t = tallies[tallies["model_left"].isin(index) & tallies["model_right"].isin(index)]
    outcome = vote_codes(t)
    return aggregate_codes(t["model_left"].map(index).to_numpy(), t["model_right"].map(index).to_numpy(),
                           outcome, models, _weights(t).to_numpy(float))


def _active_pair(pool: pd.DataFrame, tallies: pd.DataFrame, rng: np.random.Generator) -> tuple[str, str, str] | None:
    """(item, left, right): the pair :func:`arena.simulation.sampling.next_pair` says shrinks the leaderboard's
    uncertainty most, among pairs that some eligible item can show; that item is the least-voted one.
    None (caller falls back to ``balanced``) before there are any votes."""
    if tallies.empty:
        return None
    from arena.simulation.sampling import next_pair

    models = sorted({m for ms in pool["models"] for m in ms})
    if len(models) < 2:
        return None
    showable = {p for ms in pool["models"] for p in combinations(sorted(ms), 2)}
    exclude = [(a, b) for a, b in combinations(range(len(models)), 2) if (models[a], models[b]) not in showable]
    i, j = next_pair(tally_counts(tallies, models), exclude=exclude, seed=rng)
    left, right = models[i], models[j]
    has_pair = pool[[left in ms and right in ms for ms in pool["models"]]]
    n_item = has_pair["item_id"].map(votes_per_item(tallies)).fillna(0).to_numpy()
    item = has_pair["item_id"].iloc[int(rng.choice(np.flatnonzero(n_item == n_item.min())))]
    return item, left, right
