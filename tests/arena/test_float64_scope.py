"""arena's entry points run in float64 for themselves (arena.jax_setup.float64) and still behave as plain calls."""

from __future__ import annotations

import warnings

import pandas as pd

from arena.bt.diagnostics import SeparatedGraphWarning
from arena.leaderboard import fit_leaderboard
from arena.leaderboard_options import IntervalOptions


def test_a_fits_warning_points_at_the_callers_line() -> None:
    """The float64 wrapper adds a frame: the warnings a user's call raises still name the user's file."""
    df = pd.DataFrame({"model_a": ["a", "a"], "model_b": ["b", "b"], "winner": ["model_a", "model_a"]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit_leaderboard(df, IntervalOptions(ci="sandwich"), min_battles=0)
    separated = [w for w in caught if issubclass(w.category, SeparatedGraphWarning)]
    assert separated and {w.filename for w in separated} == {__file__}
