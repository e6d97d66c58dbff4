"""The Leaderboard page: one dataset by default; pooling datasets whose models never met says so above the
table; identification problems are a banner and ratings that are not identified are greyed out, not printed."""

from __future__ import annotations

import re

import pandas as pd
from typer.testing import CliRunner

from arena.io.battles import load_battles
from tests.voting.test_vote_page import start
from voting.store import import_battles, open_store


def _page(monkeypatch, tmp_path):
    from preflab_cli import app as cli

    url = f"sqlite:///{tmp_path / 'lb.db'}"
    assert CliRunner().invoke(cli, ["demo-seed", "--db", url]).exit_code == 0
    small = pd.DataFrame({"model_a": ["x-one", "x-two"] * 7, "model_b": ["x-two", "x-one"] * 7,
                          "winner": ["model_a", "model_b", "tie", "model_a", "model_a", "model_b", "model_a"] * 2,
                          "question_id": [f"s{i}" for i in range(14)]})
    import_battles(open_store(url), load_battles(small), "small", "small.csv")  # 14 votes, two other models
    at = start(monkeypatch, url, admin_passcode="boss")
    at.switch_page("voting/pages/leaderboard.py").run(timeout=300)
    at.text_input[0].input("boss")
    at.button[0].click().run(timeout=300)
    at.select_slider(key="lb_boot").set_value(100).run(timeout=300)
    assert not at.exception
    return at


def test_one_dataset_by_default_and_pooling_disconnected_datasets_is_a_banner(monkeypatch, tmp_path):
    at = _page(monkeypatch, tmp_path)
    assert at.sidebar.selectbox(key="lb_dataset").value == "demo"  # before: "(all)"
    table = at.dataframe[0].value
    assert len(table) == 5 and table["rating"].notna().all()
    assert not [w.value for w in at.warning]
    assert any("sampling unit: battle" in c.value for c in at.caption)

    at.sidebar.selectbox(key="lb_dataset").set_value("(all datasets)").run(timeout=300)
    assert not at.exception
    banners = [w.value for w in at.warning]
    assert len(banners) == 1, banners
    assert "2 groups of models never compared" in banners[0] and "Pick one dataset" in banners[0]
    assert "--ridge" not in banners[0]  # the page offers no ridge: no CLI advice in the banner
    table = at.dataframe[0].value
    assert len(table) == 7
    assert table["rating"].isna().all() and table["lower"].isna().all()  # not identified: not printed
    assert not any("inf" in str(v) for v in table["upper"])


def test_chosen_confounded_style_features_are_refused_in_the_apps_words(monkeypatch, tmp_path):
    at = _page(monkeypatch, tmp_path)
    at.multiselect(key="lb_style").set_value(["length", "headers", "lists", "bold"]).run(timeout=300)
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "style control cannot be fitted" in errors[0]
    assert "keep only length in the **Style control** box" in errors[0]
    assert "style_features" not in errors[0] and "--style" not in errors[0]
    assert len(at.dataframe) == 0  # no table of -992 [-4425, 1997]


def shown(element) -> pd.DataFrame:  # noqa: ANN001 - an AppTest dataframe
    """The strings the page displays in a table (a Styler's display values), not the numbers behind them."""
    from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

    return convert_arrow_bytes_to_pandas_df(element.proto.arrow_data.styler.display_values)


def test_the_table_shows_numbers_for_people(monkeypatch, tmp_path):
    """Before: ``1057.800000`` and ``628.000000`` (pandas' Styler prints 6 decimals); unknown ratings ``None``."""
    at = _page(monkeypatch, tmp_path)
    table = shown(at.dataframe[0]).set_index("model")
    row = table.loc["ember-balanced"]
    assert row["rating"] == "1057.8" and row["battles"] == "628" and row["wins"] == "277" and row["ties"] == "199"
    assert row["rank"] == "1" and re.fullmatch(r"10[0-9]{2}\.[0-9]", row["lower"]), row.to_dict()
    at.sidebar.selectbox(key="lb_dataset").set_value("(all datasets)").run(timeout=300)
    pooled = shown(at.dataframe[0])
    assert set(pooled["rating"]) == {"—"} and set(pooled["upper"]) == {"—"}  # not identified: a dash
    assert pooled["battles"].str.fullmatch(r"[0-9]+").all()
