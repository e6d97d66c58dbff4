"""``preflab judge ...``: a thin shell over :mod:`judge` library calls."""

from pathlib import Path
from typing import Annotated

import typer

from preflab.io import is_stdout, write_output
from preflab_cli.common import (
    JUDGE_CACHE,
    CacheOpt,
    MaxTokensOpt,
    NoCacheOpt,
    RpmOpt,
    SamplesOpt,
    TimeoutOpt,
    TpmOpt,
    fail,
    print_lines,
)

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)


# --- preflab judge run -------------------------------------------------------
@app.command("run")
def run_cmd(
    pairs_path: Annotated[Path, typer.Argument(
        help="Pairs JSONL: item_id, prompt, model_x, answer_x, model_y, answer_y.")],
    judge: Annotated[list[str], typer.Option("--judge", help="openai:MODEL, anthropic:MODEL or local:URL#MODEL; "
                                             "repeat for a jury (one verdict file per member, then the panel).")],
    rubric: Annotated[str, typer.Option(help="Built-in rubric (ab, abt, arena5, concise, alpaca, reason) or a TOML "
                                             "file.")] = "abt",
    both_orders: Annotated[bool, typer.Option(
        "--both-orders/--one-order", help="Judge each pair in both orders.")] = True,
    samples: SamplesOpt = 0,
    concurrency: Annotated[int, typer.Option(help="Calls in flight.")] = 16,
    output: Annotated[Path, typer.Option(help="Verdicts JSONL (one row per pair and order).")] = Path("verdicts.jsonl"),
    combined: Annotated[Path | None, typer.Option(help="Also write one row per pair (both orders combined).")] = None,
    combine: Annotated[str, typer.Option(help="Combine orders: conservative or average.")] = "conservative",
    cache: CacheOpt = JUDGE_CACHE,
    no_cache: NoCacheOpt = False,
    rpm: RpmOpt = None,
    tpm: TpmOpt = None,
    timeout: TimeoutOpt = 60.0,
    max_tokens: MaxTokensOpt = None,
    progress: Annotated[bool, typer.Option("--progress/--quiet", help="Show a progress bar.")] = True,
    batch: Annotated[bool, typer.Option("--batch", help="Use the provider's batch API (openai:, anthropic:).")] = False,
    poll: Annotated[float, typer.Option(help="Seconds between batch status polls.")] = 30.0,
    batch_fallback: Annotated[str, typer.Option(help="With --batch: what to do with calls no batch answered (a "
                                                     "failed batch included): none (failed rows) or live (call "
                                                     "them live, full price).")] = "none",
    price: Annotated[str | None, typer.Option(help="Judge price, USD per 1M tokens: in=2.5,out=10, or a TOML file "
                                                   "with [prices] \"model\" = {in = .., out = ..} (default: the "
                                                   "dated table; an unknown price is reported as unknown).")] = None,
    allow_failures: Annotated[int, typer.Option(help="Exit 0 even when up to N verdicts failed after retries "
                                                     "(default 0: any failure exits 1).")] = 0,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Print the calls, estimated tokens and cost; send nothing.")] = False,
    max_cost: Annotated[float | None, typer.Option(help="Stop sending calls once the spend reaches this many USD "
                                                   "(answers kept in the cache; rerun to continue).")] = None,
    jury_rule: Annotated[str, typer.Option(
        help="With several --judge: panel rule majority, mean or dawid-skene (unsupervised here; `judge jury "
             "--human` learns from labels).")] = "majority",
) -> None:
    """Judge every pair (both orders by default) and write verdict probabilities as JSONL.

    Exits 0 only when every verdict is present (or at most --allow-failures failed); failed rows are kept in
    the output with their error, and a rerun with the same cache retries only them."""

    from judge import PairsError, RubricError, RunConfig, load_pairs, load_rubric, run_judge
    from llm.prices import parse_price
    from llm.providers import parse_spec
    from llm.providers.base import ProviderError
    from preflab_cli.common import make_console

    err = make_console(stderr=True)
    try:
        pairs = load_pairs(pairs_path)
        config = RunConfig(load_rubric(rubric), both_orders=both_orders, samples=samples, concurrency=concurrency,
                           rpm=rpm, tpm=tpm, max_tokens=max_tokens, progress=progress, timeout=timeout,
                           max_cost=max_cost, price=parse_price(price, parse_spec(judge[0]).model) if price else None)
        if price and len(judge) > 1:
            raise ValueError("--price prices one judge; give a jury's members their prices in runs of their own")
        if max_cost is not None and max_cost <= 0:
            raise ValueError(f"--max-cost must be a positive number of USD, got {max_cost:g}")
        if dry_run:
            return _print_dry_runs(pairs, judge, config, None if no_cache else cache)
        if len(judge) > 1:
            if batch:
                raise ValueError("--batch takes one --judge; run each member's batch on its own")
            _jury_run(pairs, judge, config, None if no_cache else cache, output, jury_rule, allow_failures)
            return
        judge = judge[0]
        if batch:
            result = _batch_run(pairs, judge, config, None if no_cache else cache, poll, batch_fallback)
        else:
            result = run_judge(pairs, judge, config, cache=None if no_cache else cache)
    except (PairsError, RubricError, ProviderError, ValueError) as e:
        fail(e)
    result.write_jsonl(output)
    df = result.verdicts
    say = err.print if is_stdout(output) or is_stdout(combined) else typer.echo
    say(f"{len(pairs)} pairs, {len(df)} verdicts -> {'stdout' if is_stdout(output) else output}")
    say(result.stats.summary())
    answered = df[df["error"].isna()] if "error" in df else df  # a failed call is no verdict: never counted as one
    if len(answered):
        say("verdicts by slot: " + ", ".join(f"{k} {v}" for k, v in answered["verdict"].value_counts(
            dropna=False).items()) + (f"; {len(df) - len(answered)} failed (no verdict)" if len(answered) < len(df)
                                      else ""))
        if both_orders:
            _report_orders(answered, combine, combined, say)
    _exit_for_failures(df, result.stats.failed, output, max_cost, allow_failures, err)


def _batch_run(pairs, judge: str, config, cache: Path | None, poll: float, fallback: str):
    """``--batch``: the provider's batch API, answers collected into the cache; its summary on stderr."""
    from judge import batch_judge

    if cache is None:
        raise ValueError("--batch collects answers into the cache; drop --no-cache")
    summary, result = batch_judge(pairs, judge, config, cache, poll_s=poll, fallback=fallback)
    typer.echo("batch: " + ", ".join(f"{k} {', '.join(v) if isinstance(v, list) else v}"
                                     for k, v in summary.items()), err=True)
    return result


def _report_orders(df, combine: str, combined: Path | None, say) -> None:
    """How often the two orders agree and the combined winners; ``--combined`` writes the one-row-per-pair table."""
    from judge import combined_table

    table = combined_table(df, combine)
    say(f"orders agree on {int(table['consistent'].sum())} of {len(table)} pairs ({combine} rule: "
        + ", ".join(f"{k} {v}" for k, v in table["winner"].value_counts(dropna=False).items()) + ")")
    if combined is not None:
        write_output(combined, table.to_json(orient="records", lines=True, force_ascii=False))


def _print_dry_runs(pairs, specs: list[str], config, cache: Path | None) -> None:
    """``--dry-run``: each judge's planned calls, tokens and cost; nothing is sent."""
    from judge import dry_run
    from llm.calls.estimate import dry_run_lines

    print_lines(dry_run_lines([dry_run(pairs, spec, config, cache) for spec in specs], total=False))


def _exit_for_failures(df, failed_calls: int, output: Path, max_cost: float | None, allow_failures: int, err) -> None:
    """Exit 1 when the --max-cost cap left verdicts unsent or more than --allow-failures verdicts failed;
    warn (and return) for accepted failures."""
    from rich.markup import escape

    from judge import failure_summary
    from llm.providers.base import NOT_SENT_COST_CAP

    failed = int(df["error"].notna().sum()) if "error" in df else failed_calls
    unsent = int((df["error_kind"] == NOT_SENT_COST_CAP).sum()) if "error_kind" in df else 0
    if unsent:
        fail(f"stopped at --max-cost ${max_cost:g}: {unsent} of {len(df)} verdicts not sent (rows kept in "
             f"{output}; the answered calls are cached, so a rerun with a higher --max-cost continues from there)",
             status=1)
    if failed:
        line = failure_summary(df) + f" (rows kept in {output} with their error; rerun to retry only them)"
        if failed > allow_failures:
            fail(line + (f"; more than --allow-failures {allow_failures}" if allow_failures else
                         "; pass --allow-failures N to accept up to N"), status=1)
        err.print(f"[yellow]{escape(line)}[/yellow]", highlight=False, soft_wrap=True)


def _jury_run(pairs, specs: list[str], config, cache, output: Path, rule: str, allow_failures: int) -> None:
    """Several judges (:func:`judge.runner.jury_run.run_jury_panel`): print each member's file, the panel and
    its report; exit 1 when more than --allow-failures member verdicts failed."""
    from judge import jury_report, jury_rows, run_jury_panel

    run = run_jury_panel(pairs, specs, config, cache, output, rule)
    for k, (spec, path, res) in enumerate(run.members, start=1):
        typer.echo(f"member {k} {spec}: {len(res.verdicts)} verdicts -> {path}; {res.stats.summary()}")
    typer.echo(f"panel ({rule}) of {len(specs)} judges on {len(run.table.keys)} pairs -> {output}")
    for k, v in jury_rows(jury_report(run.table, rule, n_bootstrap=200)):
        typer.echo(f"  {k}: {v}")
    if run.failed > allow_failures:
        fail(f"{run.failed} member verdicts failed (kept with their error; the panel counts them as abstentions); "
             "rerun to retry only them, or pass --allow-failures N", status=1)
# --- end preflab judge run -----------------------------------------------------------------------------


# --- preflab judge calibrate ----------------------------------------------
@app.command("calibrate")
def calibrate_cmd(
    verdicts: Annotated[Path, typer.Argument(help="Verdicts: `preflab judge run` JSONL, judge_labels.csv, or a "
                                             "PandaLM / LLMFAO / AlpacaEval data folder or file.")],
    human: Annotated[Path | None, typer.Option(
        help="Human labels (CSV/JSONL: item_id, human = A/B/tie by identity).")] = None,
    lengths: Annotated[Path | None, typer.Option(
        help="Answer lengths: pairs.jsonl (answer_x/answer_y) or item_id,len_x,len_y.")] = None,
    layout: Annotated[str, typer.Option(help="auto, verdicts, scores, labels, pandalm, llmfao, alpaca, judgebench, "
                                              "rewardbench or rewardbench2.")] = "auto",
    tie_margin: Annotated[float, typer.Option(
        help="Scores files: |score_x − score_y| at or below this is a tie.")] = 0.0,
    judge_name: Annotated[str | None, typer.Option(
        "--judge", help="Which judge in a shared set (gpt4, gpt3, gpt-3.5-turbo, pandalm-7b).")] = None,
    family: Annotated[Path | None, typer.Option(help="CSV model,family for self-preference.")] = None,
    judge_family: Annotated[str | None, typer.Option(help="The judge's own family (with --family).")] = None,
    length_threshold: Annotated[float, typer.Option(help="Length-bias pairs must differ by more than this.")] = 0.0,
    n_bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap resamples for intervals.")] = 1000,
    seed: Annotated[int, typer.Option(help="Random seed for the bootstraps.")] = 0,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the metrics as JSON here.")] = None,
    report: Annotated[Path | None, typer.Option(help="Write the HTML judge card here.")] = None,
    judge_model: Annotated[str | None, typer.Option(help="Card checklist: judge model.")] = None,
    rubric: Annotated[str | None, typer.Option(help="Card checklist: rubric.")] = None,
    temperature: Annotated[str | None, typer.Option(help="Card checklist: temperature.")] = None,
    samples: Annotated[str | None, typer.Option(help="Card checklist: samples per order.")] = None,
    date: Annotated[str | None, typer.Option(help="Card checklist: date the judge ran.")] = None,
    allow_mixed: Annotated[bool, typer.Option(
        "--allow-mixed", help="Pool verdicts whose judges, model versions or rubric texts differ (refused "
                              "otherwise; the card lists the mix).")] = False,
) -> None:
    """Calibrate a judge against humans: bias, agreement, calibration — every number with its interval."""
    from rich.markup import escape
    from rich.table import Table

    from judge import (
        attach_human,
        attach_lengths,
        load_any,
        load_family,
        position_bias_by_model,
        report_json,
        summary_rows,
        verdict_lines,
        write_card,
    )
    from preflab.errors import InputError
    from preflab_cli.common import make_console

    err = make_console(stderr=True)
    out = err if is_stdout(json_out) or is_stdout(report) else make_console()
    try:
        from judge import ScoreReading

        pairs = load_any(verdicts, layout, judge_name, allow_mixed, ScoreReading(tolerance=tie_margin))
        pairs = attach_human(pairs, human) if human else pairs
        pairs = attach_lengths(pairs, lengths) if lengths else pairs
        families = load_family(family) if family else None
    except (InputError, ValueError, OSError) as e:
        fail(e)
    from judge_arena.assist import calibration_report

    res = calibration_report(pairs, family=families, judge_family=judge_family, length_threshold=length_threshold,
                             n_bootstrap=n_bootstrap, seed=seed)
    table = Table(title=escape(f"Judge calibration: {res['source']}"), show_header=False)
    for k, v in summary_rows(res):
        table.add_row(escape(k), escape(v))
    out.print(table)
    for kind, line in verdict_lines(res):
        out.print(f"[{'green' if kind == 'usable for' else 'red'}]{kind}[/]: {escape(line)}", highlight=False)
    for note in res["notes"]:
        out.print(f"note: {note}", highlight=False, markup=False)
    by_model = position_bias_by_model(pairs) if "model_y" in pairs and pairs["model_y"].nunique() > 1 else None
    if by_model is not None and len(by_model):
        out.print("position bias by model (P(win | shown first) − P(win | shown second)):")
        for r in by_model.itertuples():
            out.print(f"  {r.model}: {r.difference:+.3f} [{r.lower:+.3f}, {r.upper:+.3f}] favours {r.favours}",
                      highlight=False, markup=False)
    if json_out:
        err.print(f"metrics -> {write_output(json_out, report_json(res))}", markup=False)
    if report:
        given = {"judge model": judge_model or judge_name, "rubric": rubric, "temperature": temperature,
                 "samples": samples, "date": date}
        settings = {**pairs.attrs.get("settings", {}), **{k: v for k, v in given.items() if v is not None}}
        write_card(report, res, pairs, settings, title=f"Judge card: {verdicts.name}", by_model=by_model)
        err.print(f"judge card -> {'stdout' if is_stdout(report) else report}", markup=False)


# --- end preflab judge calibrate -------------------------------------------------------------------------


# --- preflab judge jury / drift (juries of judges, drift between runs) ----------------------------------
@app.command("jury")
def jury_cmd(
    members: Annotated[list[str], typer.Argument(help="Two or more members: verdict files (any `judge calibrate` "
                                                 "layout), or FOLDER#JUDGE for a shared data set (llmfao#gpt3).")],
    human: Annotated[Path | None, typer.Option(help="Human labels (as for `judge calibrate --human`).")] = None,
    lengths: Annotated[Path | None, typer.Option(
        help="Answer lengths (as for `judge calibrate --lengths`): the longer-answer baseline.")] = None,
    rule: Annotated[str, typer.Option(help="Panel rule: majority, mean (probability) or dawid-skene.")] = "majority",
    output: Annotated[Path | None, typer.Option(help="Write the panel's verdict per pair (JSONL).")] = None,
    report: Annotated[Path | None, typer.Option(help="Write the HTML jury card here.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the jury report as JSON here.")] = None,
    n_bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap resamples for intervals.")] = 1000,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    allow_mixed: Annotated[bool, typer.Option("--allow-mixed", help="Accept a member file whose judges, model "
                                              "versions or rubric texts differ (refused otherwise).")] = False,
) -> None:
    """A panel verdict per pair from several judges, and the jury card: members and panel vs humans."""
    from judge import (
        RULES,
        align_members,
        jury_report,
        jury_rows,
        load_members,
        panel_frame,
        report_json,
        write_jury_card,
    )
    from preflab.errors import InputError

    if rule not in RULES:
        fail(ValueError(f"--rule must be one of {', '.join(RULES)}, got {rule!r}"))
    if len(members) < 2:
        fail(ValueError("a jury needs at least two members"))
    if n_bootstrap < 1:
        fail(ValueError(f"--bootstrap must be at least 1 resample, got {n_bootstrap}"))
    try:
        tables = load_members(members, human, allow_mixed, lengths)
    except (InputError, ValueError, OSError) as e:
        fail(e)
    table = align_members(tables)
    rep = jury_report(table, rule, n_bootstrap=n_bootstrap, seed=seed)
    say = typer.echo if not any(is_stdout(p) for p in (output, report, json_out)) else (
        lambda s: typer.echo(s, err=True))
    _say_rows_and_notes(jury_rows(rep), tables, say)
    if output:
        write_output(output, panel_frame(table, rule, seed).to_json(orient="records", lines=True, force_ascii=False))
    if json_out:
        write_output(json_out, report_json(rep))
    if report:
        write_jury_card(report, rep, title="Jury card: " + ", ".join(table.members))


def _say_rows_and_notes(rows, tables: dict, say) -> None:
    """``label: value`` per row, then each input's reader notes (repeated rows, a mix pooled with --allow-mixed)."""
    for k, v in rows:
        say(f"{k}: {v}")
    for name, pairs in tables.items():
        for note in pairs.attrs.get("notes", []):
            say(f"note ({name}): {note}")


@app.command("drift")
def drift_cmd(
    old: Annotated[Path, typer.Argument(help="The earlier run's verdicts (any `judge calibrate` layout).")],
    new: Annotated[Path, typer.Argument(help="The later run (or new judge version) on the same pairs.")],
    tolerance: Annotated[float, typer.Option(
        help="Systematic changes up to this size count as the same judge.")] = 0.05,
    alpha: Annotated[float, typer.Option(help="False-flag rate for an unchanged judge.")] = 0.05,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the drift report as JSON here.")] = None,
    n_bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap resamples for kappa.")] = 1000,
    allow_mixed: Annotated[bool, typer.Option("--allow-mixed", help="Accept a run whose judges, model versions or "
                                              "rubric texts differ between rows (refused otherwise).")] = False,
) -> None:
    """Has the judge changed? Agreement, kappa, McNemar and probability shifts between two runs.

    Exit status 0 for "same judge", 1 for "changed"."""
    from judge import drift_report, drift_rows, load_any, report_json
    from preflab.errors import InputError

    if not 0 < alpha < 1 or tolerance < 0:
        fail(ValueError("need 0 < --alpha < 1 and --tolerance >= 0"))
    if n_bootstrap < 1:
        fail(ValueError(f"--bootstrap must be at least 1 resample, got {n_bootstrap}"))
    try:
        runs = {run: load_any(path, allow_mixed=allow_mixed) for run, path in (("old", old), ("new", new))}
        rep = drift_report(runs["old"], runs["new"], tolerance=tolerance, alpha=alpha, n_bootstrap=n_bootstrap)
    except (InputError, ValueError, OSError) as e:
        fail(e)
    say = (lambda s: typer.echo(s, err=True)) if is_stdout(json_out) else typer.echo
    _say_rows_and_notes(drift_rows(rep), {f"{run} run": pairs for run, pairs in runs.items()}, say)
    if json_out:
        write_output(json_out, report_json(rep))
    if rep["verdict"] == "changed":
        raise typer.Exit(1)
# --- end preflab judge jury / drift ----------------------------------------------------------------------
