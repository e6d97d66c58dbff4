"""Measuring a judge: agreement, biases, probability scores, the human ceiling, calibration, drift, juries
(``agreement``, ``bias``, ``probability``, ``ceiling``, ``calibrate``, ``drift``, ``jury``), a jury's members and
panel table (``jury_members``), the null baselines (``baselines``), a scoring judge's temperature
(``temperature``), the file adapters (``adapters``) and the human-label, length and vote joins (``human_join``).
Over :mod:`judge.verdicts`, :mod:`judge.benchmarks` and :mod:`judge.stats`; below the runner; no JAX.

The names below load on first use (``calibrate``, whose module has the same name, is :data:`judge.calibrate`).
"""

from preflab.lazy import lazy_names

_HOMES = {
    "JuryTable": "judge.metrics.jury",
    "RULES": "judge.metrics.jury",
    "align_members": "judge.metrics.jury",
    "attach_human": "judge.metrics.human_join",
    "attach_lengths": "judge.metrics.human_join",
    "ceiling_rows": "judge.metrics.ceiling",
    "drift_report": "judge.metrics.drift",
    "drift_rows": "judge.metrics.drift",
    "effective_judges": "judge.metrics.jury",
    "fleiss_kappa": "judge.metrics.agreement",
    "human_ceiling": "judge.metrics.ceiling",
    "join_human": "judge.metrics.human_join",
    "join_votes": "judge.metrics.human_join",
    "judge_codes": "judge.metrics.calibrate",
    "kappa_interval": "judge.metrics.agreement",
    "krippendorff_alpha_nominal": "judge.metrics.agreement",
    "load_any": "judge.metrics.adapters",
    "load_family": "judge.metrics.adapters",
    "load_llmfao": "judge.metrics.adapters",
    "load_members": "judge.metrics.jury_members",
    "load_pandalm": "judge.metrics.adapters",
    "null_baselines": "judge.metrics.baselines",
    "panel_frame": "judge.metrics.jury_members",
    "panel_verdicts": "judge.metrics.jury",
    "position_bias_by_model": "judge.metrics.calibrate",
    "report_json": "judge.metrics.calibrate",
    "score_calibration": "judge.metrics.temperature",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
