"""judge: run pairwise LLM judges in both orders and calibrate them against humans.

Rooms, bottom first (each imports only the rooms below it; ``tests/test_architecture.py`` checks it):
``stats.py`` and ``report_text.py`` (intervals and tests, an interval as text: read by every room);
``verdicts/`` (rubrics, parsing, pairs, orders, provenance, the verdict file); ``metrics/`` (agreement, bias,
calibration, ceiling, drift, juries, adapters); ``runner/`` (run, batch, jury runs, dry runs); ``gate/``
(``preflab compare``); ``cards/`` (the reports). The wire to the APIs is :mod:`llm`; answering models is
:mod:`answering`.

The names below are what the command line and the app use; they load on first use, and none of them
imports JAX.
"""

from preflab import __version__  # noqa: F401  (one version for the whole distribution)
from preflab.lazy import lazy_names

_HOMES = {
    "BenchSettings": "judge.benchmarks.report",
    "CompareRequest": "judge.gate.compare_run",
    "GateSettings": "judge.gate.compare",
    "Pair": "judge.verdicts.pairs",
    "PairsError": "judge.verdicts.pairs",
    "RULES": "judge.metrics.jury",
    "RubricError": "judge.verdicts.rubrics",
    "RunConfig": "judge.runner.run",
    "ScoreReading": "judge.verdicts.scores",
    "ScoreRunConfig": "judge.runner.scoring",
    "SequentialSettings": "judge.gate.sequential",
    "align_members": "judge.metrics.jury",
    "annotator_columns": "judge.verdicts.judged_pairs",
    "attach_human": "judge.metrics.human_join",
    "attach_lengths": "judge.metrics.human_join",
    "batch_judge": "judge.runner.batch",
    "benchmark_board": "judge.benchmarks.report",
    "benchmark_pairs": "judge.benchmarks.pairs",
    "benchmark_report": "judge.benchmarks.report",
    "benchmark_rows": "judge.benchmarks.report",
    "board_rows": "judge.benchmarks.report",
    "calibrate": "judge.metrics.calibrate",
    "check_lines": "judge.gate.compare",
    "clustered_wilson_interval": "judge.stats",
    "column": "judge.verdicts.judged_pairs",
    "combined_table": "judge.verdicts.pairs",
    "drift_report": "judge.metrics.drift",
    "drift_rows": "judge.metrics.drift",
    "dry_run": "judge.runner.estimate",
    "dry_run_compare": "judge.gate.compare_run",
    "failure_summary": "judge.runner.run",
    "fleiss_kappa": "judge.metrics.agreement",
    "format_interval": "judge.report_text",
    "join_human": "judge.metrics.human_join",
    "join_votes": "judge.metrics.human_join",
    "jury_report": "judge.cards.jury_card",
    "jury_rows": "judge.cards.jury_card",
    "krippendorff_alpha_nominal": "judge.metrics.agreement",
    "load_answers": "judge.gate.compare_inputs",
    "load_any": "judge.metrics.adapters",
    "load_family": "judge.metrics.adapters",
    "load_members": "judge.metrics.jury_members",
    "load_pairs": "judge.verdicts.pairs",
    "load_rubric": "judge.verdicts.rubrics",
    "load_verdicts_jsonl": "judge.verdicts.verdict_file",
    "panel_frame": "judge.metrics.jury_members",
    "position_bias_by_model": "judge.metrics.calibrate",
    "render_card": "judge.cards.card",
    "report_json": "judge.metrics.calibrate",
    "run_compare": "judge.gate.compare_run",
    "run_judge": "judge.runner.run",
    "run_jury_panel": "judge.runner.jury_run",
    "score_pairs": "judge.runner.scoring",
    "summary_rows": "judge.cards.card",
    "swap_sides": "judge.verdicts.judged_pairs",
    "verdict_lines": "judge.cards.card",
    "write_card": "judge.cards.card",
    "write_gate_report": "judge.cards.compare_card",
    "write_jury_card": "judge.cards.jury_card",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
