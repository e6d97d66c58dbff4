"""The Bradley-Terry model: its likelihood, gradient, Hessian and Newton fit over pair counts, the tie models,
the comparison-graph diagnostics (separation, strong groups), the sampling units of the sandwich interval
(battle or item), vote hygiene (the filters applied before ranking) and the pairwise matrices of a board
(counts, observed and predicted win rates).

The names below load on first use (importing the room imports none of its modules).
"""

from preflab.lazy import lazy_names

_HOMES = {
    "Fit": "arena.bt.likelihood",
    "PairData": "arena.bt.likelihood",
    "apply_filters": "arena.bt.hygiene",
    "cluster_sandwich": "arena.bt.units",
    "fit_ratings": "arena.bt.likelihood",
    "item_units": "arena.bt.units",
    "pair_data": "arena.bt.likelihood",
    "parse_filters": "arena.bt.hygiene",
    "strong_groups": "arena.bt.diagnostics",
    "tie_parameter_for_rate": "arena.bt.ties",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
