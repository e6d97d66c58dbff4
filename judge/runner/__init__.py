"""Running a judge: the runner in both orders with retries and the cache (``run``), the batch APIs (``batch``),
a jury of several judges and its panel (``jury_run``), the dry run's plan (``estimate``) and a reward model's
scores (``scoring``). Over :mod:`judge.metrics`, :mod:`judge.verdicts` and :mod:`llm`.

The names below load on first use.
"""

from preflab.lazy import lazy_names

_HOMES = {
    "RunConfig": "judge.runner.run",
    "RunResult": "judge.runner.run",
    "ScoreRunConfig": "judge.runner.scoring",
    "batch_judge": "judge.runner.batch",
    "dry_run": "judge.runner.estimate",
    "failure_summary": "judge.runner.run",
    "member_output": "judge.runner.jury_run",
    "run_judge": "judge.runner.run",
    "run_jury": "judge.runner.jury_run",
    "run_jury_panel": "judge.runner.jury_run",
    "score_pairs": "judge.runner.scoring",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
