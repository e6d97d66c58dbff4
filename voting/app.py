"""preflab's Streamlit app: blind voting, leaderboard, judge calibration, data.

``preflab app`` serves this file (it ships inside the package, so the app runs from any folder);
the top-level ``app.py`` of a checkout runs the same :func:`run`. Configuration comes from ``PREFLAB_*``
environment variables (see :func:`voting.pages.common.config_from_env`).
"""

from __future__ import annotations

from pathlib import Path

PAGES = Path(__file__).resolve().parent / "pages"


def run() -> None:
    """Build the navigation over the page scripts and run the selected page."""
    import streamlit as st

    st.set_page_config(page_title="preflab", page_icon=":material/balance:", layout="wide")
    pages = [
        st.Page(PAGES / "vote.py", title="Vote", icon=":material/how_to_vote:", default=True),
        st.Page(PAGES / "leaderboard.py", title="Leaderboard", icon=":material/leaderboard:"),
        st.Page(PAGES / "calibration.py", title="Judge calibration", icon=":material/balance:"),
        st.Page(PAGES / "data.py", title="Data", icon=":material/database:"),
    ]
    from voting.pages.common import guarded

    guarded(st.navigation(pages).run)()  # voters never see a traceback: one line here, the detail in the log


if __name__ == "__main__":
    run()
