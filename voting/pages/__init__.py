"""The Streamlit pages (run by app.py through st.navigation); each reads config from voting.pages.common.

Pages are scripts that Streamlit runs, not a library: nothing here is for import."""

__all__: list[str] = []
