"""voting: the blind voting app's world — the vote store, item sets, exports, pair assignment and
the Streamlit pages. It may use :mod:`arena` (fits), :mod:`judge` (calibration) and :mod:`judge_arena` (the two
together); none of them uses it.

The public names below load on first use."""

from preflab.lazy import lazy_names

_HOMES = {
    "export_bytes": "voting.votes",
    "export_votes": "voting.exports",
    "import_items": "voting.store",
    "load_items": "voting.items",
    "load_votes": "voting.store",
    "open_store": "voting.store",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
