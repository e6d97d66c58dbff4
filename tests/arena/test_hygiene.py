"""Vote-hygiene filters: each removes exactly the battles it should and says how many."""

from __future__ import annotations

import pandas as pd
import pytest

from arena.bt import hygiene
from arena.bt.diagnostics import InfiniteMLEWarning
from arena.io.battles import load_battles
from arena.leaderboard import rank_battles
from arena.leaderboard_options import IntervalOptions

DAY = 86_400


def frame() -> pd.DataFrame:
    return pd.DataFrame({
        "model_a": ["a", "a", "b", "c", "a", "b", "a", "c"],
        "model_b": ["b", "c", "c", "a", "b", "a", "c", "b"],
        "winner": ["model_a", "tie", "model_b", "model_a", "model_a", "model_b", "model_a", "tie"],
        "judge": ["u1", "u1", "u1", "u2", "u1", "u2", "u1", None],
        "tstamp": [10, 20, 30, 40, 10, DAY + 5, DAY + 6, 50],
        "question_id": ["q1", "q2", "q3", "q4", "q1", "q5", "q6", "q7"],
        "category": ["coding", "math", "coding", "Coding", "coding", "chat", "math", "coding"],
        "language": ["English", "English", "German", "English", "English", "English", "German", "English"],
        "anony": [True, True, False, True, True, None, True, True],
    })


def battles():
    return load_battles(frame())


def test_dedup_removes_the_repeated_vote():
    kept, line = hygiene.deduplicate(battles())
    assert len(kept) == 7 and line.startswith("dedup: removed 1 of 8 battles")


def test_category_language_and_anonymous_filters():
    kept, line = hygiene.filter_values(battles(), "category", ["coding"], "category")
    assert len(kept) == 5 and "removed 3 of 8" in line  # case-insensitive: 'Coding' kept
    kept, line = hygiene.filter_values(battles(), "language", ["German"], "language")
    assert len(kept) == 2 and "removed 6 of 8" in line
    kept, line = hygiene.anonymous_only(battles())
    assert len(kept) == 6 and "removed 2 of 8" in line  # False and missing both dropped


def test_exclude_models_refuses_unknown_names_with_the_closest_one():
    kept, line = hygiene.exclude_models(battles(), ["c"])
    assert len(kept) == 3 and set(kept.models) == {"a", "b"}
    assert "removed 5 of 8" in line
    with pytest.raises(ValueError, match=r"no model named 'zeta' to exclude in the data; name the models"):
        hygiene.exclude_models(battles(), ["c", "zeta"])


def test_daily_cap_keeps_first_votes_per_voter_and_day():
    kept, line = hygiene.daily_cap(battles(), 2)
    # u1 day 0 votes at t=10, 10, 20, 30 -> keep two; u1 day 1 one vote; u2 one per day; no-judge row kept
    assert len(kept) == 6 and "removed 2 of 8" in line and "1 without voter or time kept" in line
    u1_day0 = kept.df[(kept.df["judge"] == "u1") & (kept.df["tstamp"] < DAY)]
    assert sorted(u1_day0["tstamp"]) == [10, 10]
    with pytest.raises(ValueError, match="at least 1"):
        hygiene.daily_cap(battles(), 0)


def test_missing_column_is_a_clear_error():
    bare = load_battles(frame().drop(columns=["anony", "language"]))
    with pytest.raises(ValueError, match="needs a 'anony' column"):
        hygiene.anonymous_only(bare)
    with pytest.raises(ValueError, match="needs a 'language' column"):
        hygiene.filter_values(bare, "language", ["English"], "language")


def test_parse_filters_and_apply_in_rank_battles():
    f = hygiene.parse_filters(["category=coding", "exclude=c", "dedup", "anony", "daily-cap=5"])
    assert f == hygiene.Filters(categories=("coding",), exclude_models=("c",), anonymous_only=True, daily_cap=5,
                                dedup=True)
    with pytest.raises(ValueError, match="bad --filter"):
        hygiene.parse_filters(["colour=red"])
    with pytest.warns(InfiniteMLEWarning):  # 'a' won both remaining battles
        t = rank_battles(frame(), IntervalOptions(ci="sandwich"),
                         filters=hygiene.Filters(dedup=True, exclude_models=("c",)), min_battles=1)
    report = t.attrs["hygiene"]
    assert report[0].startswith("dedup: removed 1 of 8") and report[1].startswith("exclude models: removed 5 of 7")
    assert set(t["model"]) == {"a", "b"} and t["battles"].sum() == 2 * 2
