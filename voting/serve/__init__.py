"""The script ``preflab app`` serves (``app.py`` here), in a folder of its own.

Streamlit treats a ``pages/`` folder beside the main script as an old-style multipage app: until the first
visitor's run of the script calls ``st.navigation`` (which turns that mode off for the whole server), every
session lists each module of ``pages/`` as a page. Serving :mod:`voting.app` itself, which sits beside
``voting/pages/``, made a shared deep link (``/battle``, ``/data``) on a freshly started server show the internal
modules; this folder has no ``pages/``, so every URL gets the app's own navigation. Nothing here is for import."""

__all__: list[str] = []
