"""Prediction-powered inference: a Bradley-Terry leaderboard from few human votes and many judge labels
(PPI++ estimator, its leaderboard, the gain a judge can give at most, and the simulations and studies that
check it against known truth).

The names below load on first use (importing the room imports none of its modules).
"""

from preflab.lazy import lazy_names

_HOMES = {
    "Items": "arena.ppi.estimator",
    "PPIFit": "arena.ppi.estimator",
    "build_items": "arena.ppi.board",
    "fit_ppi": "arena.ppi.estimator",
    "llmfao_study": "arena.ppi.studies",
    "ppi_leaderboard": "arena.ppi.board",
    "unlimited_judge_gain": "arena.ppi.gain",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
