"""The A/B gate of ``preflab compare``: dimensions, checks and guards (``compare``), its inputs
(``compare_inputs``), lm-eval logs (``lm_eval_logs``), the anytime-valid sequential test (``sequential``) and the run
that ties them together (``compare_run``). Over :mod:`judge.runner`, :mod:`judge.metrics` and :mod:`judge.verdicts`.

The names below load on first use.
"""

from preflab.lazy import lazy_names

_HOMES = {
    "CompareRequest": "judge.gate.compare_run",
    "DEFAULT_PRIOR": "judge.gate.sequential",
    "GateSettings": "judge.gate.compare",
    "SequentialSettings": "judge.gate.sequential",
    "check_lines": "judge.gate.compare",
    "dry_run_compare": "judge.gate.compare_run",
    "load_answers": "judge.gate.compare_inputs",
    "run_compare": "judge.gate.compare_run",
    "simulate": "judge.gate.sequential",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
