"""The Streamlit pages (run by app.py through st.navigation); each reads config from voting.pages.common."""
