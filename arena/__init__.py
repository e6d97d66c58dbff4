"""arena: pairwise votes in, Bradley-Terry leaderboards with intervals out.

JAX is not imported here: the public names below load on first use, and the modules that compute import
:mod:`arena.jax_setup` (float64 for their own work, the compilation cache) themselves, so reading data,
``--help`` and other light commands start without it.
"""

from preflab import __version__  # noqa: F401  (one version for the whole distribution)
from preflab.lazy import lazy_names

_HOMES = {
    "ArenaSpec": "arena.simulation.simulate",
    "Battles": "arena.io.validation",
    "EloScale": "arena.leaderboard_options",
    "IntervalOptions": "arena.leaderboard_options",
    "Leaderboard": "arena.leaderboard",
    "PairCounts": "arena.io.counts",
    "aggregate": "arena.io.counts",
    "baseline_leaderboard": "arena.arenahard",
    "fit_leaderboard": "arena.leaderboard",
    "forest_plot": "arena.plots",
    "lc_leaderboard": "arena.lc.board",
    "leaderboard_votes_needed": "arena.simulation.power",
    "load_arena_hard": "arena.arenahard_files",
    "load_battles": "arena.io.battles",
    "load_lc_table": "arena.lc.data",
    "next_pair": "arena.simulation.sampling",
    "over_time_plot": "arena.plots",
    "parse_filters": "arena.bt.hygiene",
    "power_table": "arena.simulation.power",
    "ppi_leaderboard": "arena.ppi.board",
    "rank_battles": "arena.leaderboard",
    "ratings_over_time": "arena.over_time",
    "style_fit": "arena.style.fit",
    "win_rate_heatmap": "arena.plots",
    "write_battles": "arena.io.battles",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
