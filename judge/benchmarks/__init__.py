"""Published benchmarks read as published (JudgeBench, RewardBench v1, RewardBench 2): each one's headline by
its own rule with bootstrap intervals, and the same files as judged pairs labelled by correctness."""

from preflab.lazy import lazy_names

_HOMES = {
    "BenchSettings": "judge.benchmarks.report",
    "benchmark_board": "judge.benchmarks.report",
    "benchmark_pairs": "judge.benchmarks.pairs",
    "benchmark_report": "judge.benchmarks.report",
    "benchmark_rows": "judge.benchmarks.report",
    "board_rows": "judge.benchmarks.report",
    "detect_format": "judge.benchmarks.report",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
