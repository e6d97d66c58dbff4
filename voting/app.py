"""preflab's Streamlit app: blind voting, leaderboard, judge calibration, data.

``preflab app`` serves this file (it ships inside the package, so the app runs from any folder);
the top-level ``app.py`` of a checkout runs the same :func:`run`. Configuration comes from ``PREFLAB_*``
environment variables (see :func:`voting.config.config_from_env`).
"""

from __future__ import annotations

import threading
from pathlib import Path

from voting.config import config_from_env

PAGES = Path(__file__).resolve().parent / "pages"
#: the script ``preflab app`` serves: in a folder with no ``pages/`` beside it (see :mod:`voting.serve`)
SCRIPT = Path(__file__).resolve().parent / "serve" / "app.py"
_warm = threading.Lock()
warm_thread: threading.Thread | None = None


def warm_imports() -> threading.Thread:
    """Import the leaderboard's statistics (JAX and the arena fit, ~1 s of CPU) once per server process in a
    background thread, so the first leaderboard render does not pay for them; returns that thread."""
    global warm_thread
    with _warm:
        if warm_thread is None:
            def work() -> None:
                import arena.leaderboard  # noqa: F401
                import arena.plots  # noqa: F401

            warm_thread = threading.Thread(target=work, name="preflab-warm-imports", daemon=True)
            warm_thread.start()
    return warm_thread


def run() -> None:
    """Build the navigation over the page scripts and run the selected page."""
    import streamlit as st

    warm_imports()
    st.set_page_config(page_title="preflab", page_icon="⚖️", layout="wide")
    pages = [
        st.Page(PAGES / "vote.py", title="Vote", icon=":material/how_to_vote:", default=True),
        st.Page(PAGES / "leaderboard.py", title="Leaderboard", icon=":material/leaderboard:"),
        st.Page(PAGES / "calibration.py", title="Judge calibration", icon=":material/balance:"),
        st.Page(PAGES / "data.py", title="Data", icon=":material/database:"),
    ]
    if config_from_env().arena:  # `preflab app --arena roster.toml`: live battles beside Vote
        pages.insert(1, st.Page(PAGES / "battle.py", title="Battle", icon=":material/swords:"))
    from voting.pages.common import guarded

    guarded(st.navigation(pages).run)()  # voters never see a traceback: one line here, the detail in the log


if __name__ == "__main__":
    run()
