"""voting: the blind voting app's world — the vote store, item sets, exports, pair assignment and
the Streamlit pages. It may use :mod:`arena` (fits) and :mod:`judge` (calibration); neither uses it.

The public names below load on first use."""

from preflab.lazy import lazy_names

_HOMES = {
    "calibration_report": "voting.judge_assist",
    "export_bytes": "voting.votes",
    "import_items": "voting.store",
    "judge_assisted_leaderboard": "voting.judge_assist",
    "load_items": "voting.items",
    "load_votes": "voting.store",
    "open_store": "voting.store",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
