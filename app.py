"""preflab's Streamlit app: blind voting, leaderboard, judge calibration, data.

Run with ``preflab app --db URL`` (or ``streamlit run app.py`` with ``PREFLAB_DB`` set). Pages live in
``arena/webapp/``; configuration comes from ``PREFLAB_*`` environment variables
(see :func:`arena.webapp.common.config_from_env`).
"""

import streamlit as st

st.set_page_config(page_title="preflab", page_icon=":material/balance:", layout="wide")
pages = [
    st.Page("arena/webapp/vote.py", title="Vote", icon=":material/how_to_vote:", default=True),
    st.Page("arena/webapp/leaderboard.py", title="Leaderboard", icon=":material/leaderboard:"),
    st.Page("arena/webapp/calibration.py", title="Judge calibration", icon=":material/balance:"),
    st.Page("arena/webapp/data.py", title="Data", icon=":material/database:"),
]
st.navigation(pages).run()
