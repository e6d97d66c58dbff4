"""Battles in and out: the battle schema and its validation, the file readers (JSONL, CSV, Parquet, Arrow),
the chunked and lean loads of large files, and the aggregation of battles to (model_a, model_b, outcome) counts
that every fit consumes. The bottom room of arena: it imports no other room.

The names below load on first use (importing the room imports none of its modules).
"""

from preflab.lazy import lazy_names

_HOMES = {
    "Battles": "arena.io.battles",
    "ColumnMap": "arena.io.battles",
    "PairCounts": "arena.io.counts",
    "aggregate": "arena.io.counts",
    "load_battles": "arena.io.battles",
    "validate": "arena.io.battles",
    "write_battles": "arena.io.battles",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
