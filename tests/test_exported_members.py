"""Each package's declared public surface (``__all__``), pinned: adding or removing a public name is a
deliberate edit of this file. The names load lazily, so importing a package stays light."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PUBLIC = {
    "arena": ["ArenaSpec", "Battles", "EloScale", "IntervalOptions", "Leaderboard", "PairCounts", "aggregate",
              "baseline_leaderboard",
              "fit_leaderboard", "forest_plot", "lc_leaderboard", "leaderboard_votes_needed", "load_arena_hard",
              "load_battles", "load_lc_table", "next_pair", "over_time_plot", "parse_filters", "power_table",
              "ppi_leaderboard", "rank_battles", "ratings_over_time", "style_fit", "win_rate_heatmap",
              "write_battles"],
    "arena.bootstrap": ["PoissonTable", "Replicates", "WeightKind", "bootstrap_fits", "draw_weights",
                        "percentile_interval", "rank_from_intervals", "usable_replicates"],
    "arena.bt": ["Fit", "PairData", "apply_filters", "cluster_sandwich", "fit_ratings", "item_units", "pair_data",
                 "parse_filters", "strong_groups", "tie_parameter_for_rate"],
    "arena.io": ["Battles", "ColumnMap", "PairCounts", "aggregate", "load_battles", "validate", "write_battles"],
    "arena.lc": ["LCDivergenceWarning", "LCPenalty", "bootstrap_lc", "lc_leaderboard", "load_alpaca_table",
                 "load_lc_table", "table_from_frame"],
    "arena.ppi": ["Items", "PPIFit", "build_items", "fit_ppi", "llmfao_study", "ppi_leaderboard",
                  "unlimited_judge_gain"],
    "arena.simulation": ["ArenaSpec", "coverage_study", "fit_arenas", "leaderboard_votes_needed", "next_pair",
                         "power_table", "sign_test_power", "simulate_codes", "spread_strengths", "uniform_pairs"],
    "arena.style": ["ConfoundedStyleWarning", "STYLE_FEATURES", "markdown_counts", "style_fit"],
    "judge": ["BenchSettings", "CompareRequest", "GateSettings", "Pair", "PairsError", "RULES", "RubricError",
              "RunConfig", "ScoreReading", "ScoreRunConfig", "SequentialSettings", "align_members",
              "annotator_columns", "attach_human", "attach_lengths", "batch_judge", "benchmark_board",
              "benchmark_pairs", "benchmark_report", "benchmark_rows", "board_rows", "calibrate", "check_lines",
              "clustered_wilson_interval", "column", "combined_table", "drift_report", "drift_rows", "dry_run",
              "dry_run_compare", "failure_summary", "fleiss_kappa", "format_interval", "join_human", "join_votes",
              "jury_report", "jury_rows", "krippendorff_alpha_nominal", "load_answers", "load_any", "load_family",
              "load_members", "load_pairs", "load_rubric", "load_verdicts_jsonl", "panel_frame",
              "position_bias_by_model", "render_card", "report_json", "run_compare", "run_judge", "run_jury_panel",
              "score_pairs", "summary_rows", "swap_sides", "verdict_lines", "write_card", "write_gate_report",
              "write_jury_card"],
    "judge.benchmarks": ["BenchSettings", "benchmark_board", "benchmark_pairs", "benchmark_report", "benchmark_rows",
                         "board_rows", "detect_format"],
    "judge.cards": ["jury_report", "jury_rows", "render_card", "summary_rows", "write_card", "write_gate_report",
                    "write_jury_card"],
    "judge.gate": ["CompareRequest", "DEFAULT_PRIOR", "GateSettings", "SequentialSettings", "check_lines",
                   "dry_run_compare", "load_answers", "run_compare", "simulate"],
    "judge.metrics": ["JuryTable", "RULES", "align_members", "attach_human", "attach_lengths", "ceiling_rows",
                      "drift_report", "drift_rows", "effective_judges", "fleiss_kappa", "human_ceiling", "join_human",
                      "join_votes", "judge_codes", "kappa_interval", "krippendorff_alpha_nominal", "load_any",
                      "load_family", "load_llmfao", "load_members", "load_pandalm", "null_baselines", "panel_frame",
                      "panel_verdicts", "position_bias_by_model", "report_json", "score_calibration"],
    "judge.runner": ["RunConfig", "RunResult", "ScoreRunConfig", "batch_judge", "dry_run", "failure_summary",
                     "member_output", "run_judge", "run_jury", "run_jury_panel", "score_pairs"],
    "judge.verdicts": ["BUILTIN", "NO_LOGPROBS", "OUTCOMES", "Pair", "PairsError", "ProvenanceTally", "Rubric",
                       "RubricError", "ScoreReading", "Verdict", "annotator_columns", "by_identity", "column",
                       "combine_order_codes", "combined_table", "has", "judge_single", "load_pairs", "load_rubric",
                       "load_scores", "load_verdicts_jsonl", "p_x_single", "read_verdict", "require_one_judge",
                       "run_columns", "sampled_verdict", "scores_table", "served_columns", "swap_sides", "unparsable",
                       "usable"],
    "judge_arena": ["calibration_report", "judge_assisted_leaderboard", "judge_ppi_gain", "verdict_battles"],
    "llm": ["FREE", "Price", "ProviderError", "free_port", "llama_server", "make_provider", "parse_price",
            "parse_spec", "price_for", "smollm2_gguf"],
    "llm.calls": ["CallCache", "CallStats", "RateLimiter", "RunEstimate", "SpendMeter", "cache_key",
                  "call_with_retries", "dry_run_lines", "estimated_input_tokens", "generation_line", "known_price",
                  "per_token", "prompt_hash", "requests_per_call", "run_pool", "spec_price", "total_summary"],
    "llm.providers": ["Completion", "JudgeRequest", "JudgeSpec", "LogprobsUnsupported", "Provider", "ProviderError",
                      "make_provider", "parse_spec"],
    "answering": ["GenerateConfig", "GenerateResult", "GenerationCache", "ModelSpec", "estimate_generate",
                  "load_prompts", "load_roster", "pairs_table", "parse_model_spec", "run_generate", "stream_answers",
                  "unique_names"],
    "voting": ["export_bytes", "export_votes", "import_items", "load_items", "load_votes", "open_store"],
    "voting.pages": [],
    "voting.serve": [],
    "preflab": ["InputError", "Outcome", "write_table"],
    "preflab_cli": ["OPTION_ALIASES", "app", "canonical_args", "main"],
}


def test_every_package_is_pinned_here() -> None:
    tops = ("arena", "llm", "answering", "judge", "judge_arena", "voting", "preflab", "preflab_cli")
    found = {".".join(f.parent.relative_to(ROOT).parts) for top in tops for f in (ROOT / top).rglob("__init__.py")}
    assert found == set(PUBLIC)


@pytest.mark.parametrize("package", sorted(PUBLIC))
def test_exported_members(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__ == PUBLIC[package]
    top = package.split(".")[0]
    for name in module.__all__:
        value = getattr(module, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert value.__module__.split(".")[0] == top, f"{package}.{name} is not ours"
        assert importlib.util.find_spec(f"{package}.{name}") is None, f"{package}.{name} is also a submodule"
    assert set(module.__all__) <= set(dir(module))


def test_an_unknown_name_is_an_attribute_error() -> None:
    import arena

    with pytest.raises(AttributeError, match="has no attribute 'fit_leaderbord'"):
        arena.fit_leaderbord  # noqa: B018
    from arena import bt  # a submodule, not a public name: still imported as usual

    assert bt.__name__ == "arena.bt"


def test_importing_the_packages_loads_none_of_their_names() -> None:
    """The surface is declared, not imported: ``import judge`` and ``import arena`` load no JAX (nor pandas),
    and using ``judge.run_judge`` still loads no JAX."""
    code = ("import sys, arena, arena.io, arena.bt, arena.bootstrap, arena.style, arena.lc, arena.ppi,"
            " arena.simulation, llm, llm.calls, answering, judge, judge.verdicts, judge.runner, judge.metrics,"
            " judge.gate, judge.cards, judge_arena, voting, preflab\n"
            "light = not any(m in sys.modules for m in ('jax', 'pandas', 'numpy'))\n"
            "judge.run_judge, llm.make_provider\n"
            "print(light, 'jax' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False"]
