"""Style control with features confounded with the models: dropped loudly (default features) or refused
(chosen ones, exit 2), never ratings thousands of points wide; messages in the CLI's words."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from arena.leaderboard import WIDE_INTERVAL, _too_wide
from arena.style.features import ConfoundedStyleWarning
from preflab_cli import app
from preflab_cli.rank_output import rich_table

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo" / "battles.jsonl"


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_demo_style_control_drops_the_confounded_features_loudly(tmp_path):
    """Before: beacon-verbose at -2223.4 (-4718.0 / +4530.9) and bold 22.56 after three warnings."""
    out = tmp_path / "style.csv"
    res = CliRunner().invoke(app, ["rank", str(DEMO), "--style-control", "--bootstrap", "100", "--output", str(out)])
    assert res.exit_code == 0, res.output
    text = _flat(res.output)
    assert ("DROPPED from style control: the ratings control for length only "
            "(to choose: --style-features length)") in text
    assert "features=" not in text and "ColumnMap" not in text  # the CLI's words, not the Python API's
    t = pd.read_csv(out)
    assert ((t["upper"] - t["lower"]) < 300).all()
    assert t["rating"].between(800, 1200).all()


def test_chosen_confounded_features_are_refused_with_exit_2():
    res = CliRunner().invoke(app, ["rank", str(DEMO), "--style-control", "--style-features", "length,bold",
                                   "--ci", "sandwich"])
    text = _flat(res.output)
    assert res.exit_code == 2, res.output
    assert "style control cannot be fitted: style feature 'bold' (R^2 = 1.000)" in text
    assert "leave it out: --style-features length" in text and "Traceback" not in text
    res = CliRunner().invoke(app, ["rank", str(DEMO), "--style-control", "--style-features", "bold,headers",
                                   "--ci", "sandwich"])
    assert res.exit_code == 2 and "rank without --style-control" in _flat(res.output)


def test_intervals_thousands_of_points_wide_are_not_printed_as_results():
    table = pd.DataFrame({"model": ["a", "b"], "rating": [1100.0, -2223.4], "lower": [1050.0, -6941.4],
                          "upper": [1150.0, 2307.5], "rank": [1, 1], "battles": [10, 10], "wins": [5, 5],
                          "losses": [5, 5], "ties": [0, 0], "identified": [True, True]})
    with pytest.warns(ConfoundedStyleWarning, match="not identified"):
        notes = _too_wide(table, WIDE_INTERVAL)
    assert table["identified"].tolist() == [True, False]
    assert "b (9,249 points)" in notes[0] and "style_features=length" in notes[0]
    from rich.console import Console

    console = Console(width=120, record=True)
    console.print(rich_table(table))
    shown = console.export_text()
    assert "not identified" in shown and "-2223" not in shown and "1100.0" in shown
    assert not np.isnan(table["rating"]).any()
