"""preflab.voting: the blind voting app's world — the vote store, item sets, exports, pair assignment and
the Streamlit pages. It may use :mod:`arena` (fits) and :mod:`judge` (calibration); neither uses it."""
