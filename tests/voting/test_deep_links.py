"""A shared link opens the app: on a freshly started server (the script ``preflab app`` serves, with its flags),
the first request being a deep link (``/battle``, ``/data``, ``/leaderboard``, or a module's name such as
``/common``) shows the app's own navigation and only its pages, never Streamlit's list of the internal modules
beside the script (real Chromium, one fresh server per link, since the first visitor decides)."""

from __future__ import annotations

import pytest

from preflab_cli.voting_cmds import STREAMLIT_FLAGS
from tests.voting.browser_app import browser, new_page, shot, streamlit_server  # noqa: F401  (fixture)
from voting.app import SCRIPT

pytestmark = pytest.mark.browser
OURS = ["Vote", "Battle", "Leaderboard", "Judge calibration", "Data"]
NAV = """() => { const links = [...document.querySelectorAll('[data-testid="stSidebarNav"] a')];
  return links.length ? links.map(a => a.innerText.trim().split("\\n").pop().trim()) : null; }"""
ROSTER = ('[[model]]\nname = "m1"\nspec = "local:http://127.0.0.1:9/v1#m1"\n\n'
          '[[model]]\nname = "m2"\nspec = "local:http://127.0.0.1:9/v1#m2"\n')


@pytest.mark.parametrize(("path", "heading"), [("battle", "Battle"), ("data", "Data"),
                                               ("leaderboard", "Leaderboard"), ("common", None)])
def test_a_deep_link_on_a_fresh_server_shows_the_apps_own_pages(tmp_path, browser, path, heading):  # noqa: F811
    (tmp_path / "roster.toml").write_text(ROSTER)
    env = {"PREFLAB_DB": f"sqlite:///{tmp_path / 'votes.db'}", "PREFLAB_ARENA": str(tmp_path / "roster.toml"),
           "PREFLAB_ACCESS": "open"}
    with streamlit_server(tmp_path, env, list(STREAMLIT_FLAGS), script=str(SCRIPT)) as base:
        page = new_page(browser)
        page.goto(f"{base}/{path}")  # the server's first request: nobody has opened / yet
        assert page.wait_for_function(NAV).json_value() == OURS
        if heading:  # the page asked for, drawn by the app (its title), not the bare module
            page.locator("h1").filter(has_text=heading).first.wait_for()
        shot(page, f"deep-link-{path}")
        assert "common" not in page.locator('[data-testid="stSidebarNav"]').inner_text()
