"""Verdicts and human votes as battles: the one converter (:func:`judge_arena.battles_from_verdicts.identity_battles`)
behind the per-order, per-pair and human tables, read back by the arena's own loader."""

from __future__ import annotations

import numpy as np
import pandas as pd

from arena.io.battles import load_battles
from judge_arena.battles_from_verdicts import human_battles, identity_battles, verdict_battles
from preflab.outcomes import Outcome

PAIRS = pd.DataFrame({"item_id": ["i1", "i2", "i3"], "model_x": ["a", "b", "a"], "model_y": ["b", "c", "c"],
                      "judge_xy": [Outcome.FIRST, Outcome.UNPARSABLE, Outcome.TIE],
                      "judge_yx": [Outcome.SECOND, Outcome.FIRST, np.nan],
                      "human_1": [Outcome.FIRST, 3.0, np.nan],
                      "human_2": [Outcome.TIE, Outcome.SECOND, Outcome.UNPARSABLE]})


def test_unparsable_and_missing_verdicts_are_left_out_and_the_rest_load() -> None:
    b = verdict_battles(PAIRS, judge="j")
    # xy: i1 a (x) wins, i2 unparsable (left out), i3 tie; yx (y shown first = model_a): i1 code Y -> model_a (b),
    # i2 code X -> model_b (b), i3 not run
    assert b[["model_a", "model_b", "winner", "question_id"]].values.tolist() == [
        ["a", "b", "model_a", "i1"], ["a", "c", "tie", "i3"], ["b", "a", "model_a", "i1"], ["c", "b", "model_b", "i2"]]
    assert set(b["judge"]) == {"j"}
    assert len(load_battles(b)) == 4  # every row is a valid battle: nothing for the loader to refuse


def test_human_votes_as_battles_fold_both_tie_kinds() -> None:
    h = human_battles(PAIRS)
    assert h["winner"].tolist() == ["model_a", "tie", "tie", "model_b"]
    assert h["question_id"].tolist() == ["i1", "i2", "i1", "i2"] and "judge" not in h
    assert human_battles(PAIRS[["item_id", "model_x", "model_y"]]).columns.tolist() == [
        "model_a", "model_b", "winner", "question_id"]


def test_identity_codes_by_position_whatever_the_index() -> None:
    shuffled = PAIRS.set_index(pd.Index([7, 3, 5]))
    b = identity_battles(shuffled, pd.Series([Outcome.SECOND, None, Outcome.FIRST]))
    assert b["model_b"].tolist() == ["b", "c"] and b["winner"].tolist() == ["model_b", "model_a"]
