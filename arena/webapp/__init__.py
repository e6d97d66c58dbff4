"""The Streamlit app's page modules (run by ``app.py`` through ``st.navigation``).

Each page file is small: read config and storage from :mod:`arena.webapp.common`, call library
functions (:mod:`arena.store`, :mod:`arena.leaderboard`, :mod:`judge.calibrate`), render.
"""
