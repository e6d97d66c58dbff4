"""arena: pairwise votes in, Bradley-Terry leaderboards with intervals out.

JAX is not imported here: the public names below load on first use, and the modules that compute import
:mod:`arena._jax` (float64 for their own work, the compilation cache) themselves, so reading data,
``--help`` and other light commands start without it.
"""

from preflab.lazy import lazy_names

__version__ = "0.1.0"

_HOMES = {
    "ArenaSpec": "arena.simulate",
    "Battles": "arena.data",
    "EloScale": "arena.leaderboard_options",
    "IntervalOptions": "arena.leaderboard_options",
    "Leaderboard": "arena.leaderboard",
    "PairCounts": "arena.counts",
    "aggregate": "arena.counts",
    "baseline_leaderboard": "arena.arenahard",
    "fit_leaderboard": "arena.leaderboard",
    "forest_plot": "arena.plots",
    "lc_leaderboard": "arena.lc",
    "leaderboard_votes_needed": "arena.power",
    "load_arena_hard": "arena.arenahard",
    "load_battles": "arena.data",
    "load_lc_table": "arena.lc_data",
    "next_pair": "arena.sampling",
    "parse_filters": "arena.hygiene",
    "power_table": "arena.power",
    "ppi_leaderboard": "arena.ppi_board",
    "rank_battles": "arena.leaderboard",
    "style_fit": "arena.style",
    "win_rate_heatmap": "arena.plots",
    "write_battles": "arena.data",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
