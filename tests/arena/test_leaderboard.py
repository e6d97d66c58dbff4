"""The leaderboard table, its options and its diagnostics (each diagnostic triggered on purpose)."""

from __future__ import annotations

import json
import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest

from arena.bt import elo
from arena.bt import likelihood as bt
from arena.bt.diagnostics import InfiniteMLEWarning, TooFewBattlesWarning
from arena.io.battles import DisconnectedGraphWarning, aggregate, load_battles
from arena.leaderboard import fit_leaderboard, rank_battles
from arena.leaderboard_options import EloScale, IntervalOptions
from tests.arena.test_bt import simulate_codes

COLUMNS = ["model", "rating", "lower", "upper", "rank", "battles", "wins", "losses", "ties"]


def battles_frame(k: int = 6, n: int = 5_000, seed: int = 0, tie_share: float = 0.15) -> pd.DataFrame:
    a, b, out, _ = simulate_codes(k, n, seed, tie_share)
    names = np.array([f"model-{i}" for i in range(k)])
    return pd.DataFrame({"model_a": names[a], "model_b": names[b],
                         "winner": np.array(["model_a", "model_b", "tie"])[out]})


def test_columns_order_and_counts():
    df = battles_frame()
    t = rank_battles(df, IntervalOptions(n_bootstrap=50))
    assert list(t.columns[:9]) == COLUMNS
    assert t["rating"].is_monotonic_decreasing
    assert t["battles"].sum() == 2 * len(df)
    assert (t["wins"] + t["losses"] + t["ties"] == t["battles"]).all()
    assert np.all((t["lower"] <= t["rating"]) & (t["rating"] <= t["upper"]))
    assert t["rating"].mean() == pytest.approx(1000.0)
    assert t.attrs["n_bootstrap"] == 50 and t.attrs["ties"] == "half"


def test_llmfao_leaderboard_equals_the_fit(shared_data):
    battles = load_battles(shared_data / "llmfao" / "crowd-comparisons.csv", layout="llmfao")
    t = rank_battles(battles, IntervalOptions(ci="sandwich"))
    theta, _ = bt.fit_ratings(aggregate(battles))
    expected = pd.Series(elo.to_elo(theta), index=battles.models)
    np.testing.assert_allclose(t["rating"], expected.loc[t["model"]], atol=1e-6)
    assert t["model"].iloc[0] == "GPT 4"  # the crowd's top model in LLMFAO
    z = 1.959963984540054
    np.testing.assert_allclose(t["upper"] - t["rating"], z * t["se"], rtol=1e-9)


def test_anchor_pins_a_model():
    t = rank_battles(battles_frame(), IntervalOptions(ci="sandwich"), anchor="model-2=1200")
    row = t.set_index("model").loc["model-2"]
    assert row["rating"] == pytest.approx(1200.0)
    assert row["upper"] - row["lower"] == pytest.approx(0.0, abs=1e-9)  # the anchor has no uncertainty
    free = rank_battles(battles_frame(), IntervalOptions(ci="sandwich")).set_index("model")["rating"]
    shifted = t.set_index("model")["rating"]
    diffs = (shifted - free).to_numpy()
    np.testing.assert_allclose(diffs, diffs[0])  # same ratings, shifted


def test_bad_options_are_clear_errors():
    df = battles_frame()
    with pytest.raises(ValueError, match="anchor model 'nope'"):
        rank_battles(df, IntervalOptions(ci="sandwich"), anchor="nope=1000")
    with pytest.raises(ValueError, match="ci must be"):
        rank_battles(df, IntervalOptions(ci="jackknife"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ties must be"):
        rank_battles(df, ties="glenn")
    with pytest.raises(ValueError, match="level"):
        rank_battles(df, IntervalOptions(level=95))


@pytest.mark.parametrize("ties", ["rao-kupper", "davidson"])
def test_tie_models_report_their_parameter(ties):
    t = rank_battles(battles_frame(n=8_000, tie_share=0.3), IntervalOptions(ci="both", n_bootstrap=100), ties=ties)
    tp = t.attrs["tie_parameter"]
    assert tp["lower_sandwich"] < tp["value"] < tp["upper_sandwich"]
    assert tp["lower_bootstrap"] < tp["value"] < tp["upper_bootstrap"]
    assert tp["value"] > (1.0 if ties == "rao-kupper" else 0.0)


def test_disconnected_graph_warns():
    df = pd.DataFrame({"model_a": ["a", "a", "b", "c", "c", "d"] * 3, "model_b": ["b", "b", "a", "d", "d", "c"] * 3,
                       "winner": ["model_a", "model_b", "tie"] * 6})
    with pytest.warns(DisconnectedGraphWarning, match="2 disconnected components"):
        t = rank_battles(df, IntervalOptions(ci="sandwich"), min_battles=1)
    assert any("disconnected" in m for m in t.attrs["diagnostics"])


def test_never_lost_and_never_won_models_warn_with_the_regularised_value():
    df = battles_frame(k=4, n=2_000)
    extra = pd.DataFrame({"model_a": ["champ"] * 30 + ["dud"] * 30,
                          "model_b": ["model-0", "model-1", "model-2"] * 20,
                          "winner": ["model_a"] * 30 + ["model_b"] * 30})
    with pytest.warns(InfiniteMLEWarning) as record:
        t = rank_battles(pd.concat([df, extra]), IntervalOptions(ci="sandwich"))
    text = " ".join(str(w.message) for w in record)
    assert "'champ' never lost" in text and "+infinity" in text
    assert "'dud' never won" in text and "-infinity" in text
    champ = t.set_index("model").loc["champ", "rating"]
    assert f"{champ:.1f}" in text and champ > t["rating"].drop(t.index[0]).max() + 300
    assert np.isfinite(t["rating"]).all()


def test_too_few_battles_warns():
    df = pd.concat([battles_frame(k=3, n=600), pd.DataFrame(
        {"model_a": ["rare"] * 3, "model_b": ["model-0", "model-1", "model-2"],
         "winner": ["model_a", "model_b", "tie"]})])
    with pytest.warns(TooFewBattlesWarning, match=r"rare \(3\)"):
        rank_battles(df, IntervalOptions(ci="sandwich"), min_battles=10)


def test_matrices():
    df = pd.DataFrame({"model_a": ["a", "a", "a", "b", "c"], "model_b": ["b", "b", "b", "a", "a"],
                       "winner": ["model_a", "model_a", "tie", "model_a", "model_b"]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lb = fit_leaderboard(df, IntervalOptions(ci="sandwich"))
    n = lb.battle_counts()
    assert n.loc["a", "b"] == 4 and n.loc["b", "a"] == 4 and n.loc["a", "c"] == 1
    wr = lb.observed_win_rates("exclude")
    assert wr.loc["a", "b"] == pytest.approx(2 / 3) and wr.loc["b", "a"] == pytest.approx(1 / 3)
    assert wr.loc["a", "c"] == 1.0 and np.isnan(wr.loc["b", "c"])
    wr_half = lb.observed_win_rates("half")
    assert wr_half.loc["a", "b"] == pytest.approx(2.5 / 4)
    pred = lb.predicted_win_rates()
    r = lb.ratings
    assert pred.loc["a", "b"] == pytest.approx(1 / (1 + 10 ** ((r["b"] - r["a"]) / 400)))
    np.testing.assert_allclose(pred.to_numpy() + pred.to_numpy().T, 1.0)


def test_scale_options():
    df = battles_frame()
    base = rank_battles(df, IntervalOptions(ci="sandwich")).set_index("model")["rating"]
    nat = rank_battles(df, IntervalOptions(ci="sandwich"), scale=EloScale(scale=1.0, base=math.e, init=0.0))
    nat = nat.set_index("model")["rating"]
    np.testing.assert_allclose((base - 1000) / (400 / math.log(10)), nat.loc[base.index], atol=1e-9)


def test_plots_write_png_and_escaped_html(tmp_path):
    from arena.plots import forest_plot, win_rate_heatmap

    df = battles_frame(k=4, n=1_000)
    df.loc[df["model_a"] == "model-3", "model_a"] = "<script>alert(1)</script>"
    df.loc[df["model_b"] == "model-3", "model_b"] = "<script>alert(1)</script>"
    lb = fit_leaderboard(df, IntervalOptions(ci="sandwich"))
    png = forest_plot(lb.table, tmp_path / "f.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = win_rate_heatmap(lb.observed_win_rates(), tmp_path / "h.html").read_text()
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "data:image/png;base64," in page
    with pytest.raises(ValueError, match=".png or .html"):
        forest_plot(lb.table, tmp_path / "f.svg")


def test_cli_rank_prints_table_and_writes_outputs(tmp_path, shared_data):
    import json

    from typer.testing import CliRunner

    from preflab_cli import app

    out = tmp_path / "lb.json"
    res = CliRunner().invoke(app, ["rank", str(shared_data / "llmfao" / "crowd-comparisons.csv"), "--layout", "llmfao",
                                   "--bootstrap", "50", "--ci", "both", "--ties", "davidson", "--top", "5",
                                   "--output", str(out), "--plot", str(tmp_path / "f.html")])
    assert res.exit_code == 0, res.output
    assert "GPT 4" in res.output and "tie parameter (davidson)" in res.output
    data = json.loads(out.read_text())
    assert len(data["leaderboard"]) == 59 and data["meta"]["ties"] == "davidson"
    assert (tmp_path / "f.html").exists()
    bad = CliRunner().invoke(app, ["rank", str(shared_data / "llmfao" / "crowd-comparisons.csv"), "--layout",
                                   "llmfao", "--ci", "sandwich", "--anchor", "nobody=1000"])
    assert bad.exit_code == 2 and "anchor model 'nobody'" in bad.output


def two_groups(per_cross: int = 5) -> pd.DataFrame:
    """{m0, m1} beat {m2, m3} in every battle between the groups; each model has wins and losses."""
    rows = []
    for a, b in (("m0", "m1"), ("m2", "m3")):
        rows += [(a, b, "model_a")] * 6 + [(a, b, "model_b")] * 4
    rows += [(a, b, "model_a") for a in ("m0", "m1") for b in ("m2", "m3") for _ in range(per_cross)]
    return pd.DataFrame(rows, columns=["model_a", "model_b", "winner"])


@pytest.mark.parametrize("ties", bt.TIES)
def test_separated_groups_are_named_and_get_unbounded_intervals(ties):
    from arena.bt.diagnostics import SeparatedGraphWarning

    # before: 2268.2 [2149.6, 2468.7] vs -268.2, rank 1 and 3, no warning
    with pytest.warns(SeparatedGraphWarning, match=r"\{m0, m1\} beat \{m2, m3\} in all 20 battles") as rec:
        lb = fit_leaderboard(two_groups(), IntervalOptions(ci="both", n_bootstrap=20), ties=ties, min_battles=1)
    assert "do not exist" in str(rec[0].message) and "ridge" in str(rec[0].message)
    t = lb.table
    assert lb.separation.groups == [["m0", "m1"], ["m2", "m3"]] and lb.separation.dominance == [(0, 1, 20.0)]
    assert t.attrs["separation"]["groups"] == [["m0", "m1"], ["m2", "m3"]]
    assert not t["identified"].any()
    for side, sign in (("lower", -1), ("upper", 1)):
        for col in (side, f"{side}_sandwich", f"{side}_bootstrap"):
            assert (t[col] == sign * np.inf).all(), col
    assert (t["rank"] == 1).all() and (t["rank_upper"] == 4).all()


def test_separated_groups_with_a_ridge_prior_are_finite_and_say_so():
    from arena.bt.diagnostics import SeparatedGraphWarning

    with pytest.warns(SeparatedGraphWarning, match=r"ridge prior 0\.01 \(a normal prior with SD 10 .* 1737 rating"):
        t = rank_battles(two_groups(), IntervalOptions(ci="both", n_bootstrap=20), ridge=0.01, min_battles=1)
    assert t["identified"].all() and np.isfinite(t[["lower", "upper", "lower_sandwich"]].to_numpy()).all()
    with pytest.raises(ValueError, match="ridge must be positive"):
        rank_battles(two_groups(), IntervalOptions(ci="sandwich"), ridge=0.0)


def test_connected_design_has_no_separation():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lb = fit_leaderboard(battles_frame(k=4, n=2_000), IntervalOptions(ci="sandwich"))
    assert lb.separation is None and lb.table.attrs["separation"] is None and lb.table["identified"].all()


def test_cli_rank_reports_separation(tmp_path):
    from typer.testing import CliRunner

    from preflab_cli import app

    p = tmp_path / "sep.csv"
    two_groups().to_csv(p, index=False)
    res = CliRunner().invoke(app, ["rank", str(p), "--bootstrap", "20", "--min-battles", "1",
                                   "--output", str(tmp_path / "out.json")])
    assert res.exit_code == 0, res.output
    assert "Ford's condition fails" in res.output and "unbounded (no MLE)" in res.output
    meta = json.loads((tmp_path / "out.json").read_text())["meta"]
    assert meta["separation"]["groups"] == [["m0", "m1"], ["m2", "m3"]]


def test_cli_rank_writes_counts_as_integers_and_enough_decimals_for_the_scale(tmp_path):
    """Before: ``lb.csv`` wrote battles as ``628.0``, and ``--scale 1`` printed every interval as ``-0.0 / +0.0``."""
    from pathlib import Path

    from typer.testing import CliRunner

    from preflab_cli import app

    demo = Path(__file__).resolve().parents[2] / "data" / "demo" / "battles.jsonl"
    out = tmp_path / "lb.csv"
    res = CliRunner().invoke(app, ["rank", str(demo), "--bootstrap", "50", "--output", str(out)])
    assert res.exit_code == 0, res.output
    rows = {line.split(",")[0]: line.split(",") for line in out.read_text().splitlines()}
    header = rows["model"]
    ember = dict(zip(header, rows["ember-balanced"], strict=True))
    assert (ember["battles"], ember["wins"], ember["losses"], ember["ties"]) == ("628", "277", "152", "199")
    assert "1057.8 " in res.output  # the default scale keeps one decimal
    res = CliRunner().invoke(app, ["rank", str(demo), "--bootstrap", "50", "--scale", "1"])
    assert res.exit_code == 0, res.output
    cells = re.findall(r"([-+][0-9.]+) / ([-+][0-9.]+)", res.output)
    assert len(cells) == 5 and all(float(x) != 0 for pair in cells for x in pair), cells
    assert "1000.145" in res.output  # the rating with the intervals' three decimals


def test_whole_counts_are_integers_and_soft_counts_stay_fractional():
    from arena.io.counts import whole

    assert whole(np.array([628.0, 3.0])).dtype == np.int64
    assert whole(np.array([1.5, 2.0])).tolist() == [1.5, 2.0]
    assert whole(np.array([np.nan, 2.0])).dtype.kind == "f"
