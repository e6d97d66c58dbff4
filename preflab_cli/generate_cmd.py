"""``preflab generate``: answer prompts with your own models (a thin shell over :mod:`answering.generate`)."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from preflab.io import is_stdout
from preflab_cli.common import app, err, fail, print_lines

if TYPE_CHECKING:
    import pandas as pd

    from answering.generate import GenerateResult


@app.command("generate")
def generate_cmd(
    prompts: Annotated[Path, typer.Argument(
        help="Prompts (JSONL, CSV or Parquet): item_id, prompt, optional category.")],
    output: Annotated[Path, typer.Option(help="Items file to write (.jsonl, .csv, .parquet or - for stdout): "
                                              "item_id, prompt, model, answer, tokens, latency, cost, finish "
                                              "reason, settings; `preflab import` reads it.")],
    model: Annotated[list[str] | None, typer.Option(
        "--model", help="A model: provider spec (openai:MODEL, anthropic:MODEL, local:URL#MODEL) with optional "
                        ";name=...;system=...;temperature=...;top_p=...;seed=...;max_tokens=... (repeat for "
                        "each model).")] = None,
    roster: Annotated[Path | None, typer.Option(help="Roster TOML with one [[model]] table per model "
                                                     "(name, spec, system, max_tokens, temperature, ...).")] = None,
    pairs: Annotated[Path | None, typer.Option(
        help="Also write `judge run` pairs (every two models per item).")] = None,
    concurrency: Annotated[int, typer.Option(help="Calls in flight.")] = 16,
    rpm: Annotated[float | None, typer.Option(help="Requests per minute limit, per endpoint.")] = None,
    tpm: Annotated[float | None, typer.Option(help="Tokens per minute limit, per endpoint.")] = None,
    cache: Annotated[Path, typer.Option(help="SQLite answer cache (a rerun generates only what is missing).")] = (
        Path.home() / ".cache" / "preflab" / "generate.sqlite"),
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the answer cache.")] = False,
    max_attempts: Annotated[int, typer.Option(help="Tries per call (429, 5xx, timeouts are retried).")] = 8,
    progress: Annotated[bool, typer.Option("--progress/--quiet", help="Show a progress bar.")] = True,
    max_cost: Annotated[float | None, typer.Option(help="Stop sending calls once the spend (all models) reaches "
                                                        "this many USD; needs a known price for every model.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the calls, estimated tokens and cost per model; "
                                                            "send nothing.")] = False,
    allow_failures: Annotated[int, typer.Option(help="Exit 0 even when up to N answers failed after retries "
                                                     "(default 0: any failure exits 1).")] = 0,
) -> None:
    """Run every model on every prompt and write an items file (one row per prompt and model).

    Keys come from OPENAI_API_KEY, ANTHROPIC_API_KEY or PREFLAB_LOCAL_API_KEY. Answers are cached as they
    arrive, so a killed run restarts without generating anything twice. Answers cut at max_tokens (finish
    reason length) are kept, counted and reported. Exits 1 when answers failed (see --allow-failures)."""
    from answering.generate import GenerateConfig, pairs_table, run_generate
    from answering.model_specs import load_prompts, load_roster, parse_model_spec, unique_names
    from llm.providers.base import ServerUnreachable
    from preflab.io import write_table

    specs = (load_roster(roster) if roster else []) + [parse_model_spec(m) for m in model or []]
    if not specs:
        fail("give at least one --model SPEC (or --roster FILE)")
    specs = unique_names(specs)
    table = load_prompts(prompts)
    if dry_run:
        return _print_dry_run(table, specs, None if no_cache else cache)
    config = GenerateConfig(concurrency=concurrency, rpm=rpm, tpm=tpm, max_attempts=max_attempts, progress=progress,
                            max_cost=max_cost)
    try:
        if max_cost is not None and max_cost <= 0:
            raise ValueError(f"--max-cost must be a positive number of USD, got {max_cost:g}")
        result = run_generate(table, specs, config, cache=None if no_cache else cache)
    except (ValueError, ServerUnreachable) as e:
        fail(e)
    to_stderr = is_stdout(output) or is_stdout(pairs)

    def say(line: str) -> None:
        err.print(line, highlight=False, markup=False) if to_stderr else typer.echo(line)

    where = write_table(result.answers, output, stdout_format="jsonl")
    say(f"{len(table)} prompts x {len(specs)} models: {len(result.answers)} answers -> {where}")
    say(result.stats.summary())
    if pairs is not None:
        pair_rows = pairs_table(result.answers)
        say(f"{len(pair_rows)} pairs -> {write_table(pair_rows, pairs, stdout_format='jsonl')}")
    _warn_about_answers(result)
    _exit_for_failures(result, where, max_cost, no_cache, allow_failures)


def _print_dry_run(table: "pd.DataFrame", specs: list, cache: Path | None) -> None:
    """``--dry-run``: calls, estimated tokens and cost per model and in all; nothing is sent."""
    from answering.generate import estimate_generate
    from llm.calls.estimate import dry_run_lines

    estimates = estimate_generate(table, specs, cache)
    print_lines(dry_run_lines(estimates, header=f"dry run: {len(table)} prompts x {len(specs)} models", per_model=True))


def _warn_about_answers(result: "GenerateResult") -> None:
    """Answers kept but cut at max_tokens, or empty: counted on stderr."""
    if note := result.truncation_note():
        err.print(f"warning: {note}", highlight=False, markup=False)
    empty = sum(result.stats.empty.values())
    if empty:
        per_model = ", ".join(f"{m} {k}" for m, k in result.stats.empty.items())
        err.print(f"warning: {empty} empty answers ({per_model})", highlight=False, markup=False)


def _exit_for_failures(result: "GenerateResult", where: str, max_cost: float | None, no_cache: bool,
                       allow_failures: int) -> None:
    """Exit 1 when the --max-cost cap left answers unsent or more than --allow-failures answers failed;
    warn (and return) for accepted failures."""
    from llm.providers.base import NOT_SENT_COST_CAP

    unsent = int((result.failures["kind"] == NOT_SENT_COST_CAP).sum())
    if unsent:
        fail(f"stopped at --max-cost ${max_cost:g}: {unsent} of {unsent + len(result.answers)} answers not sent "
             f"(the {len(result.answers)} answered are in {where}" + ("" if no_cache else " and cached, so a rerun "
             "with a higher --max-cost continues from there") + ")", status=1)
    failed = len(result.failures)
    if not failed:
        return
    top = result.failures["error"].str.slice(0, 120).value_counts().head(3)
    line = (f"{failed} of {failed + len(result.answers)} answers failed after retries: "
            + "; ".join(f"{n} x {msg}" for msg, n in top.items())
            + f" (not in {where}; " + ("rerun to retry them)" if no_cache else
                                      "rerun with the same cache to retry only them)"))
    if failed > allow_failures:
        fail(line + ("" if allow_failures else "; pass --allow-failures N to accept up to N"), status=1)
    err.print(f"warning: {line}", highlight=False, markup=False)
