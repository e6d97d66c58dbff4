"""judge_arena: judges' verdicts and arena statistics together, for the command line and the app alike.

It sits above :mod:`arena` and :mod:`judge` (neither imports the other, nor this) and below :mod:`voting`
and :mod:`preflab_cli`: verdicts as battles (:mod:`judge_arena.battles_from_verdicts`), the judge-assisted (PPI++)
leaderboard and the calibration report with its PPI gain (:mod:`judge_arena.assist`), and a judge's
leaderboard beside the human one (:mod:`judge_arena.versus_human`). The public names below load on first use.
"""

from preflab.lazy import lazy_names

_HOMES = {
    "calibration_report": "judge_arena.assist",
    "judge_assisted_leaderboard": "judge_arena.assist",
    "judge_ppi_gain": "judge_arena.assist",
    "verdict_battles": "judge_arena.battles_from_verdicts",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
