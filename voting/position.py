"""Humans' position bias: how often voters prefer the answer shown on the left (the first position).

Ties are left out (a tie names no position). Votes of one voter are not independent (a voter who likes
the left answer does so on many pairs), so the interval is the cluster-robust Wilson interval over voters
(:func:`judge.stats.clustered_wilson_interval`). 0.5 means no preference for either side.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judge import clustered_wilson_interval
from preflab.outcomes import Outcome
from voting.votes import vote_codes


def human_first_position_rate(votes: pd.DataFrame, level: float = 0.95) -> dict | None:
    """Share of decisive votes that chose the left answer, with its interval over voters; None without
    decisive votes. Also the decisive and tie counts and the number of voters."""
    if votes.empty:
        return None
    code = vote_codes(votes)
    decisive = np.isin(code, [Outcome.FIRST, Outcome.SECOND])
    if not decisive.any():
        return None
    left = pd.Series(code[decisive] == Outcome.FIRST).groupby(votes["voter"].to_numpy()[decisive])
    ci = clustered_wilson_interval(left.sum().to_numpy(dtype=float), left.size().to_numpy(dtype=float), level)
    return {**ci.as_dict(), "decisive": int(decisive.sum()), "ties": int((~decisive).sum()),
            "voters": int(left.ngroups)}
