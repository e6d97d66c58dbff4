"""The vote page's rounds, typed: which item and sides a voter gets next (the assignment rule of
:mod:`voting.assign` over what the store says they have seen and voted), issued as a round (its one-time id
and issue time, :func:`voting.store.issue_round`). The page keeps the round (:class:`ShownRound`) and, after
a vote, the vote on it (:class:`VotedRound`) in its session as these frozen values; the vote's transaction
checks the round. :func:`pair_to_show` is the one call the page makes for the pair on screen.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from voting.assign import next_round
from voting.reads import seen_items, voter_votes
from voting.writes import issue_round


@dataclass(frozen=True)
class ShownRound:
    """A pair on a voter's screen: the item, the models shown left (A) and right (B), the prompt, and the round
    it was issued as (``round_id``, ``shown_at`` on the server's clock)."""

    dataset: str
    item_id: str
    left: str
    right: str
    prompt: str
    round_id: str
    shown_at: float


@dataclass(frozen=True)
class VotedRound:
    """A vote just stored on a round: the vote's id, the ``choice`` (A, B, tie, bothbad), when it was cast
    (``at``, the server's ``time.time()``, for the undo window), the round voted on, and how many items the
    voter had done with it (``mine``, for their progress bar)."""

    vote_id: int
    choice: str
    at: float
    shown: ShownRound
    mine: int


def issue(engine: Engine, voter: str, dataset: str, item_id: str, left: str, right: str, prompt: str,
          round_no: int = 1) -> ShownRound:
    """A new round of this item and sides for ``voter`` (a fresh id; the earlier round of it stays used)."""
    round_id, shown_at = issue_round(engine, voter, dataset, item_id, left, right, round_no)
    return ShownRound(dataset, item_id, left, right, prompt, round_id, shown_at)


def reissue(engine: Engine, voter: str, shown: ShownRound, round_no: int = 1) -> ShownRound:
    """The same item and sides again under a new round (an undone vote whose names were not shown)."""
    return issue(engine, voter, shown.dataset, shown.item_id, shown.left, shown.right, shown.prompt, round_no)


def draw_round(engine: Engine, voter: str, dataset: str, items: pd.DataFrame, prompts: Mapping[str, str],
               tallies: pd.DataFrame, rng: np.random.Generator, strategy: str = "balanced", overlap: int = 0,
               round_no: int = 1) -> ShownRound | None:
    """The voter's next pair, issued as a round, or None when nothing is left for them: the items they have not
    seen in this round (:func:`voting.store.seen_items`), spread over models by their own votes
    (:func:`voting.store.voter_votes`) and the dataset's ``tallies`` (:func:`voting.assign.next_round`)."""
    picked = next_round(items, seen_items(engine, voter, dataset, round_no), tallies, rng, strategy, overlap,
                        voter=voter, mine=voter_votes(engine, voter, dataset))
    if picked is None:
        return None
    return issue(engine, voter, dataset, picked.item_id, picked.model_left, picked.model_right,
                 prompts[picked.item_id], round_no)


def pair_to_show(engine: Engine, voter: str, dataset: str, shown: ShownRound | None, items: pd.DataFrame,
                 prompts: Mapping[str, str], tallies: pd.DataFrame, rng: np.random.Generator,
                 strategy: str = "balanced", overlap: int = 0, round_no: int = 1) -> ShownRound | None:
    """The pair the voter should see now: the round already on their screen (``shown``) while it is of this
    ``dataset``, else their next one (:func:`draw_round`); None when nothing is left for them."""
    if shown is not None and shown.dataset == dataset:
        return shown
    return draw_round(engine, voter, dataset, items, prompts, tallies, rng, strategy, overlap, round_no)
