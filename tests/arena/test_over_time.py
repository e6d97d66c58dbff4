"""Ratings over time against known truth: a simulated arena whose strengths change at a known date."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from arena.over_time import ratings_over_time, window_codes, window_length
from arena.simulation.simulate import ArenaSpec, codes_to_battles, simulate_codes

DAY = 86_400.0
T0 = 1.7e9  # 2023-11-14 22:13:20 UTC
ELO = 400 / np.log(10)  # natural-log strength -> Elo points (scale 400, base 10)
BEFORE = (1.0, 0.5, 0.0)  # strengths of m0, m1, m2 for the first 4 days
AFTER = (0.0, 0.5, 0.0)  # m0 falls at T0 + 4 days


def _period(strengths: tuple[float, ...], start: float, seed: int) -> pd.DataFrame:
    """3,000 battles a day for 4 days, evenly spread over the period."""
    spec = ArenaSpec(strengths=strengths, models=("m0", "m1", "m2"))
    n = 12_000
    df = codes_to_battles(spec, simulate_codes(spec, n, np.random.default_rng(seed))).df
    df["tstamp"] = start + np.arange(n) * (4 * DAY / n)
    return df


@pytest.fixture(scope="module")
def changing_arena() -> pd.DataFrame:
    return pd.concat([_period(BEFORE, T0, 1), _period(AFTER, T0 + 4 * DAY, 2)], ignore_index=True)


def test_window_codes_and_lengths():
    assert window_length("2D") == pd.Timedelta(days=2)
    np.testing.assert_array_equal(window_codes(np.array([10.0, 10 + DAY - 1, 10 + DAY, 10 + 5 * DAY]),
                                               pd.Timedelta(days=1)), [0, 0, 1, 5])
    for bad in ("soon", "0D", "-1D"):
        with pytest.raises(ValueError, match="7D"):
            window_length(bad)


def test_ratings_follow_a_strength_change_at_a_known_date(changing_arena):
    res = ratings_over_time(changing_arena, "2D")
    starts = sorted(res["window_start"].unique())
    assert len(starts) == 4 and starts[0] == pd.Timestamp(T0, unit="s", tz="UTC")
    assert starts[2] == pd.Timestamp(T0 + 4 * DAY, unit="s", tz="UTC")  # the date of the change
    for k, start in enumerate(starts):
        board = res[res["window_start"] == start].set_index("model").loc[["m0", "m1", "m2"]]
        truth = np.array(BEFORE if k < 2 else AFTER) * ELO
        gaps = board["rating"].to_numpy() - board.loc["m2", "rating"]
        se = (board["upper"] - board["lower"]).to_numpy() / (2 * 1.96)
        # each model's gap to m2 within 4 of its SEs (m2's own interval counts the reference's uncertainty)
        assert np.all(np.abs(gaps - (truth - truth[2])) <= 4 * np.hypot(se, se[2]) + 1e-9), (k, gaps, truth)
        assert board["battles"].sum() == 2 * 6_000  # every battle of the window counted once per model
    gap = res.pivot(index="window_start", columns="model", values="rating")
    drop = (gap["m0"] - gap["m2"]).to_numpy()
    assert drop[:2].min() > 120 and drop[2:].max() < 50  # truth: 174 Elo points before, 0 after


def test_cumulative_boards_grow_and_battles_without_time_are_counted(changing_arena):
    df = changing_arena.copy()
    df.loc[df.index[-10:], "tstamp"] = np.nan
    res = ratings_over_time(df, "4D", cumulative=True)
    assert res.attrs["skipped_no_tstamp"] == 10
    first, last = (res[res["window_end"] == end] for end in sorted(res["window_end"].unique()))
    assert first["battles"].sum() == 2 * 12_000 and last["battles"].sum() == 2 * (24_000 - 10)
    assert first["window_start"].nunique() == 1 and (last["window_start"] == first["window_start"].iloc[0]).all()


def test_battles_need_a_time():
    df = pd.DataFrame({"model_a": ["a"], "model_b": ["b"], "winner": ["model_a"]})
    with pytest.raises(ValueError, match="tstamp"):
        ratings_over_time(df, "1D")


def test_cli_over_time_writes_the_library_table_and_plot(changing_arena, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import arena.jax_setup
    from preflab_cli import app

    monkeypatch.setattr(arena.jax_setup, "STORE_PROGRAMS", False)  # rank turns it on; main() would turn it off

    src = tmp_path / "battles.parquet"
    changing_arena.to_parquet(src)
    out, png = tmp_path / "over_time.csv", tmp_path / "over_time.png"
    res = CliRunner().invoke(app, ["rank", str(src), "--over-time", "2D", "--ci", "sandwich", "--output", str(out),
                                   "--plot", str(png)])
    assert res.exit_code == 0, res.output
    assert "ratings by 2 days 00:00:00 window of tstamp (UTC)" in res.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    cli = pd.read_csv(out)
    lib = ratings_over_time(changing_arena, "2D")
    np.testing.assert_allclose(cli["rating"], lib["rating"], atol=1e-9)
    assert list(cli["model"]) == list(lib["model"])
    bad = CliRunner().invoke(app, ["rank", str(src), "--over-time", "soon"])
    assert bad.exit_code == 2 and "--over-time 'soon' is not a time span" in bad.output
