"""The reports a person reads: the judge card (``card``), the jury card (``jury_card``) and the gate report
(``compare_card``). The top room of judge: no other room imports it.

The names below load on first use.
"""

from preflab.lazy import lazy_names

_HOMES = {
    "jury_report": "judge.cards.jury_card",
    "jury_rows": "judge.cards.jury_card",
    "render_card": "judge.cards.card",
    "summary_rows": "judge.cards.card",
    "write_card": "judge.cards.card",
    "write_gate_report": "judge.cards.compare_card",
    "write_jury_card": "judge.cards.jury_card",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
