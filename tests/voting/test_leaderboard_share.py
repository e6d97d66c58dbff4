"""Share a leaderboard: ``preflab rank --output`` (.md, .html) and the Leaderboard page's downloads are one
table function's bytes; numbers for people; model names shown as text in Markdown and HTML."""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from arena.leaderboard_share import leaderboard_bytes, markdown_text, shared_table
from tests.voting.test_vote_page import APP


def _board(models=("![x](http://evil)", "<script>alert(1)</script>", "=HYPERLINK(1)")) -> pd.DataFrame:  # noqa: ANN001
    table = pd.DataFrame({"model": list(models), "rating": [1057.8, 1001.25, 940.0], "lower": [1041.4, 990.0, -1e9],
                          "upper": [1078.4, 1012.0, float("inf")], "rank": [1, 2, 2], "battles": [628.0, 600.0, 28.0],
                          "wins": [277.0, 200.0, 3.0], "losses": [152.0, 300.0, 20.0], "ties": [199.0, 100.0, 5.0],
                          "identified": [True, True, False]})
    table.attrs.update({"ci": "bootstrap", "level": 0.95, "ties": "half", "unit": "battle"})
    return table


def test_markdown_and_html_show_names_as_text_and_numbers_for_people():
    md = leaderboard_bytes(_board(), "md").decode()
    assert "| 1 | \\!\\[x\\](http://evil) | 1057.8 | 1041.4 | 1078.4 | 628 | 277 | 152 | 199 |" in md
    assert "\\<script\\>alert(1)\\</script\\>" in md and "<script>" not in md
    assert "| 2 | '=HYPERLINK(1) |  |  |  | 28 | 3 | 20 | 5 |" in md  # not identified: blank, never printed
    assert "628.0" not in md
    page = leaderboard_bytes(_board(), "html").decode()
    assert "<td>&lt;script&gt;alert(1)&lt;/script&gt;</td>" in page and "<script" not in page
    assert "<td>![x](http://evil)</td>" in page and "<td>628</td>" in page and "628.0" not in page
    csv = leaderboard_bytes(_board(), "csv").decode().splitlines()
    assert csv[0] == "rank,model,rating,lower,upper,battles,wins,losses,ties"
    assert csv[3] == "2,'=HYPERLINK(1),,,,28,3,20,5"  # formulas neutralised, counts whole
    assert shared_table(_board())["battles"].tolist() == [628, 600, 28]


def test_small_scales_get_enough_decimals():
    table = _board(("a", "b", "c")).assign(rating=[0.031, 0.0, -0.031], lower=[0.01, -0.02, -0.05],
                                           upper=[0.05, 0.02, -0.01], identified=True)
    md = leaderboard_bytes(table, "md").decode()
    assert "| 1 | a | 0.031 | 0.010 | 0.050 |" in md  # before: 0.0 / 0.0 / 0.1


def test_markdown_escapes_what_acts_inside_a_cell():
    assert markdown_text("a|b *c* _d_ `e` [f](g) <h>\nnext") == "a\\|b \\*c\\* \\_d\\_ \\`e\\` \\[f\\](g) \\<h\\> next"


@pytest.fixture()
def demo_url(tmp_path) -> str:
    from preflab_cli import app as cli

    url = f"sqlite:///{tmp_path / 'lb.db'}"
    assert CliRunner().invoke(cli, ["demo-seed", "--db", url]).exit_code == 0
    return url


def test_rank_output_and_the_leaderboard_page_share_the_same_bytes(monkeypatch, demo_url, tmp_path, downloads):
    from preflab_cli import app as cli

    runner = CliRunner()
    battles = tmp_path / "demo.json"
    assert runner.invoke(cli, ["export-votes", str(battles), "--db", demo_url]).exit_code == 0
    for fmt in ("md", "html"):
        done = runner.invoke(cli, ["rank", str(battles), "--bootstrap", "200", "--unit", "battle",
                                   "--output", str(tmp_path / f"lb.{fmt}")])
        assert done.exit_code == 0, done.output
    monkeypatch.setenv("PREFLAB_DB", demo_url)
    monkeypatch.setenv("PREFLAB_ADMIN_PASSCODE", "boss")
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.switch_page("voting/pages/leaderboard.py").run()
    at.text_input[0].input("boss")
    at.button[0].click().run()
    assert not at.exception
    for fmt in ("md", "html"):
        assert downloads(at, f"lb_download_{fmt}").decode() == (tmp_path / f"lb.{fmt}").read_text()
    assert downloads(at, "lb_download_csv").startswith(b"rank,model,rating,lower,upper,battles")


def test_rank_refuses_an_unknown_output_suffix_before_fitting(tmp_path):
    from preflab_cli import app as cli

    done = CliRunner().invoke(cli, ["rank", "data/demo/battles.jsonl", "--output", str(tmp_path / "lb.txt")])
    assert done.exit_code == 2 and "use .csv, .json or .parquet (every column) or .md or .html" in done.output
