"""Length-controlled win rates (AlpacaEval LC): the joint GLM with instruction difficulty, its bootstrap,
and the annotation tables it reads.

The names below load on first use (importing the room imports none of its modules).
"""

from preflab.lazy import lazy_names

_HOMES = {
    "LCDivergenceWarning": "arena.lc.fit",
    "LCPenalty": "arena.lc.fit",
    "bootstrap_lc": "arena.lc.bootstrap",
    "lc_leaderboard": "arena.lc.fit",
    "load_alpaca_table": "arena.lc.data",
    "load_lc_table": "arena.lc.data",
    "table_from_frame": "arena.lc.data",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
