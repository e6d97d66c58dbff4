"""preflab's Streamlit app as ``preflab app`` serves it: :func:`voting.app.run` (see :mod:`voting.serve`)."""

from voting.app import run

run()
