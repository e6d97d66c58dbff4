"""Arenas with known truth: simulated battles, the power calculations (how many votes a leaderboard
needs), active pair sampling, and the coverage, recovery and unit studies that check the intervals.

The names below load on first use (importing the room imports none of its modules).
"""

from preflab.lazy import lazy_names

_HOMES = {
    "ArenaSpec": "arena.simulation.simulate",
    "coverage_study": "arena.simulation.studies",
    "fit_arenas": "arena.simulation.studies",
    "leaderboard_votes_needed": "arena.simulation.power",
    "next_pair": "arena.simulation.sampling",
    "power_table": "arena.simulation.power",
    "sign_test_power": "arena.simulation.power",
    "simulate_codes": "arena.simulation.simulate",
    "spread_strengths": "arena.simulation.simulate",
    "uniform_pairs": "arena.simulation.simulate",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
