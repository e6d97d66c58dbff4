"""preflab's shared leaf: the one input-error type (:mod:`preflab.errors`), the one outcome vocabulary
(:mod:`preflab.outcomes`) and the table/JSONL I/O (:mod:`preflab.io`) that ``arena``, ``judge`` and
``voting`` all use. These modules import nothing of ours; only :mod:`preflab_cli` (the command line)
imports the packages above them. The public names below load on first use."""

from preflab.lazy import lazy_names

__version__ = "0.1.0"

_HOMES = {
    "InputError": "preflab.errors",
    "Outcome": "preflab.outcomes",
    "write_table": "preflab.io",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
