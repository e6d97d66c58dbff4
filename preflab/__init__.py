"""preflab's shared leaf: the one input-error type (:mod:`preflab.errors`), the one outcome vocabulary
(:mod:`preflab.outcomes`) and the table/JSONL I/O (:mod:`preflab.io`) that ``arena``, ``judge`` and
``voting`` all use. These modules import nothing of ours; only :mod:`preflab_cli` (the command line)
imports the packages above them."""

__version__ = "0.1.0"
