"""Bootstrap intervals of a Bradley-Terry fit: the refits of resampled counts (chunked over devices),
the dense layout used when every pair is compared, the resampling weights (Poisson, multinomial, item blocks)
and the Poisson inversion tables that draw them, and the percentile intervals and ranks read from replicates.

The names below load on first use (importing the room imports none of its modules).
"""

from preflab.lazy import lazy_names

_HOMES = {
    "PoissonTable": "arena.bootstrap.poisson",
    "Replicates": "arena.bootstrap.refits",
    "WeightKind": "arena.bootstrap.weights",
    "bootstrap_fits": "arena.bootstrap.refits",
    "draw_weights": "arena.bootstrap.weights",
    "percentile_interval": "arena.bootstrap.intervals",
    "rank_from_intervals": "arena.bootstrap.intervals",
    "usable_replicates": "arena.bootstrap.intervals",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
