"""``preflab compare``: did the change help? A thin shell over :func:`judge.gate.compare_run.run_compare`
(``--plan``: :func:`judge_arena.compare_plan.plan_for_items`)."""

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from preflab.io import is_stdout, strict_json, write_output
from preflab_cli.common import (
    JUDGE_CACHE,
    CacheOpt,
    MaxTokensOpt,
    NoCacheOpt,
    RpmOpt,
    SamplesOpt,
    TimeoutOpt,
    TpmOpt,
    app,
    fail,
    print_lines,
    report_console,
)

#: The exit status of a gate whose guard's judge fails its own checks (docs/compare.md, "Exit codes").
NO_VERDICT_EXIT = 3

if TYPE_CHECKING:
    from rich.console import Console

    from judge import CompareRequest, RunConfig


def _plain_table(out, header, cells) -> None:
    """Columns padded to their widest cell: one line a row whatever the terminal's width."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *cells, strict=True)]
    for row in (header, *cells):
        out.print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(), markup=False,
                  highlight=False, soft_wrap=True)


def _print_dimensions(report: dict, out) -> None:
    """The judged rubrics' table and the three checks with their warnings."""
    from rich.markup import escape

    from judge import check_lines, format_interval

    out.print(f"{report['candidate']} (candidate) vs {report['base']} (base): {report.get('test', '')}",
              markup=False, highlight=False, soft_wrap=True)
    header = ("dimension", "wins", "losses", "ties (flips)", "decisive", "win rate [95%]", "p", "p Holm", "verdict")
    cells = [[r["dimension"], str(r["wins"]), str(r["losses"]), f"{r['ties']} ({r['inconsistent']})",
              str(r["decisive"]), format_interval(r["win_rate"]), f"{r['p_value']:.4f}", f"{r['p_holm']:.4f}",
              r["verdict"]] for r in report["dimensions"]]
    _plain_table(out, header, cells)
    for line in check_lines(report["checks"]):
        out.print(line, markup=False, highlight=False, soft_wrap=True)
    for w in report["checks"]["warnings"]:
        out.print(f"[yellow]warning:[/yellow] {escape(w)}", highlight=False, soft_wrap=True)


def print_report(report: dict, out) -> None:
    """The console tables: dimensions, checks, lm-eval tasks, differing settings, the gate."""
    from rich.markup import escape

    from judge import format_interval

    if report["dimensions"]:
        _print_dimensions(report, out)
    for dim, run in (report.get("judge_runs") or {}).items():
        out.print(f"judge on {dim}: {run['summary']}", markup=False, highlight=False, soft_wrap=True)
    if report.get("sequential"):
        s = report["sequential"]
        out.print(f"sequential: {s['pairs_judged']} of {s['pairs_available']} prompts judged ({s['stopped_because']});"
                  " stopped after " + ", ".join(f"{d} {'—' if n is None else n}" for d, n in s["stopped_at"].items())
                  + (f"; cost ${s['cost']:.4f}" if s.get("cost") is not None else ""),
                  markup=False, highlight=False, soft_wrap=True)
    if report["tasks"]:
        out.print("lm-eval tasks (candidate − base; delta with its 95% paired bootstrap interval)", markup=False,
                  highlight=False, soft_wrap=True)
        _plain_table(out, ("task", "metric", "n", "base [95%]", "candidate [95%]", "delta [95%]", "McNemar p"),
                     [[r["task"], f"{r['metric']},{r['filter']}", str(r["n"]), format_interval(r["base"]),
                       format_interval(r["candidate"]), format_interval(r["delta"], signed=True),
                       "—" if r["mcnemar_p"] is None else f"{r['mcnemar_p']:.4f}"] for r in report["tasks"]])
        for s in report["settings"]:
            if s["differs"]:
                out.print(f"[yellow]setting differs:[/yellow] {escape(s['setting'])}: base "
                          f"{escape(json.dumps(s['base']))}, candidate {escape(json.dumps(s['candidate']))}",
                          highlight=False, soft_wrap=True)
    for note in report.get("notes", []):
        out.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
    _print_gate(report["gate"], out)


def _print_gate(g: dict, out) -> None:  # noqa: ANN001 - a rich Console
    """The gate's line: passed, FAILED (exit 1) or no verdict (exit 3: a guard's judge is not usable)."""
    from rich.markup import escape

    if not g["checked"]:
        return
    if g.get("no_verdict"):
        out.print(f"[red]gate: no verdict[/red]: the judge is not usable on guard {escape(', '.join(g['unreliable']))}"
                  " (its two orders disagree above the flip limit): judge again with a better judge", soft_wrap=True)
    elif g["passed"]:
        out.print(f"gate: passed (no guard significantly worse: {', '.join(g['checked'])})", markup=False,
                  soft_wrap=True)
    else:
        out.print(f"[red]gate: FAILED[/red]: significantly worse on guard {escape(', '.join(g['failed']))}",
                  soft_wrap=True)


def _print_plan(items: Path | None, rubrics: int, judge: str | None, alpha: float, tie_rate: float,
                json_out: Path | None, out) -> None:
    """``--plan``: the power, calls and cost for the items file's prompts; nothing is judged."""
    from judge_arena.compare_plan import plan_for_items

    res = plan_for_items(items, rubrics, judge, alpha, tie_rate)
    n = res["prompts"]
    mdw = res["min_detectable_win_rate"]
    out.print(f"{n} prompts ({res['decisive_assumed']} decisive assumed): smallest win rate detectable at "
              f"80% power (exact sign test, alpha {alpha}): "
              + ("none (too few prompts)" if mdw is None else f"{mdw:.3f}"), markup=False, highlight=False,
              soft_wrap=True)
    cost = ("unknown (no price for this judge)" if judge and not res["price_known"] else
            "—" if res["cost"] is None else f"${res['cost']:.4f}")
    out.print(f"judge calls: {res['judge_calls']} ({res['rubrics']} rubric(s) x 2 orders); cost: {cost}",
              markup=False, highlight=False, soft_wrap=True)
    if json_out:
        write_output(json_out, json.dumps(strict_json({"plan": res}), indent=2) + "\n")


def _write_outputs(report: dict, json_out: Path | None, report_path: Path | None, out) -> None:
    """``--json`` (stable keys, ``judge_runs`` last) and ``--report`` (the HTML gate report)."""
    if json_out:
        payload = {k: v for k, v in report.items() if k != "judge_runs"} | {"judge_runs": report.get("judge_runs")}
        where = write_output(json_out, json.dumps(strict_json(payload), indent=2, default=str) + "\n")
        if not is_stdout(json_out):
            out.print(f"report -> {where}", markup=False)
    if report_path:
        from judge import write_gate_report

        write_gate_report(report_path, report)
        if not is_stdout(report_path):
            out.print(f"gate report -> {report_path}", markup=False)


def _judge_run_config(rubric: str, **settings: object) -> "RunConfig":
    """The judge's run settings for ``compare`` (its first rubric; the runner swaps in each one)."""
    from judge import RunConfig, load_rubric

    return RunConfig(load_rubric(rubric), **settings)


def _print_dry_run(request: "CompareRequest", out: "Console") -> None:
    """``--dry-run``: the judge calls, estimated tokens and cost per rubric; nothing is sent."""
    from judge import dry_run_compare
    from llm.calls.estimate import dry_run_lines

    print_lines(dry_run_lines(dry_run_compare(request), nothing="dry run: no judge is called (verdict files and "
                                                                "lm-eval logs are read); nothing to send"), out)


@app.command("compare", help="Is the candidate better than the base, on what, and by how much? Exits 1 when a "
                             "--guard is significantly worse, 3 with no verdict.")  # one line in `preflab --help`
def compare_cmd(
    items: Annotated[Path | None, typer.Argument(help="The two versions' answers: JSONL item_id, prompt, model, "
                                                 "answer (or the pairs layout).")] = None,
    base: Annotated[str | None, typer.Option(help="The old version (a model in the items / verdicts).")] = None,
    candidate: Annotated[str | None, typer.Option(help="The new version.")] = None,
    rubric: Annotated[list[str] | None, typer.Option("--rubric", help="A rubric to judge on (repeat): built-in "
                                                     "(ab, abt, arena5, concise, alpaca) or a TOML file.")] = None,
    verdicts: Annotated[list[Path] | None, typer.Option("--verdicts", help="A `preflab judge run` verdict file per "
                                                        "rubric (repeat); no judge is called.")] = None,
    judge: Annotated[str | None, typer.Option(
        "--judge", help="openai:MODEL, anthropic:MODEL or local:URL#MODEL.")] = None,
    guard: Annotated[list[str] | None, typer.Option("--guard", help="A dimension that must not regress (repeat): "
                                                    "exit 1 when it is significantly worse.")] = None,
    alpha: Annotated[float, typer.Option(help="Family-wise error rate (Holm across dimensions).")] = 0.05,
    lm_eval: Annotated[tuple[Path, Path] | None, typer.Option("--lm-eval", help="BASE_DIR CANDIDATE_DIR: two "
                                                              "lm-eval --log_samples output folders.")] = None,
    tasks: Annotated[list[str] | None, typer.Option("--tasks", help="lm-eval tasks to compare (default: all).")] = None,
    metric: Annotated[str | None, typer.Option(help="lm-eval metric (default: the task's own).")] = None,
    filter_name: Annotated[str | None, typer.Option(
        "--filter", help="lm-eval filter (default: the task's own).")] = None,
    allow_prompt_change: Annotated[bool, typer.Option(
        "--allow-prompt-change",
        help="Accept lm-eval items whose prompt_hash differs (a prompt change is what you compare).")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the judge calls, estimated tokens and cost "
                                                            "per rubric; send nothing.")] = False,
    plan_only: Annotated[bool, typer.Option("--plan", help="Print the power, calls and cost; judge nothing.")] = False,
    tie_rate: Annotated[float, typer.Option(help="--plan: share of pairs expected to tie.")] = 0.0,
    sequential: Annotated[bool, typer.Option("--sequential", help="Judge prompts in random order and stop each "
                                             "dimension when an anytime-valid test decides.")] = False,
    max_items: Annotated[int | None, typer.Option(help="--sequential: at most this many prompts.")] = None,
    max_cost: Annotated[float | None, typer.Option(help="--sequential: stop before spending more (USD).")] = None,
    seed: Annotated[int, typer.Option(help="Random order (--sequential) and bootstrap seed.")] = 0,
    concurrency: Annotated[int, typer.Option(help="Judge calls in flight.")] = 16,
    cache: CacheOpt = JUDGE_CACHE,
    no_cache: NoCacheOpt = False,
    rpm: RpmOpt = None,
    tpm: TpmOpt = None,
    timeout: TimeoutOpt = 60.0,
    samples: SamplesOpt = 0,
    max_tokens: MaxTokensOpt = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the report as JSON here (- = stdout).")] = None,
    report_path: Annotated[Path | None, typer.Option("--report", help="Write the HTML gate report here.")] = None,
    allow_mixed: Annotated[bool, typer.Option(
        "--allow-mixed", help="Pool verdicts whose judges, model versions or rubric texts differ (refused "
                              "otherwise; the notes list the mix).")] = False,
) -> None:
    from judge import CompareRequest, GateSettings, SequentialSettings, run_compare
    from llm.providers.base import ServerUnreachable
    from preflab.errors import InputError

    out = report_console(json_out if is_stdout(json_out) else report_path)
    rubrics = tuple(rubric or ())
    try:
        if plan_only:
            return _print_plan(items, len(rubrics), judge, alpha, tie_rate, json_out, out)
        if lm_eval is None and (base is None or candidate is None):
            raise InputError("<options>", None, "--base" if base is None else "--candidate", "missing",
                             "name the two versions with --base and --candidate")
        if judge and not rubrics and not verdicts:
            rubrics = ("abt",)
        run_config = _judge_run_config(rubrics[0], concurrency=concurrency, rpm=rpm, tpm=tpm, timeout=timeout,
                                       samples=samples, max_tokens=max_tokens) if judge else None
        request = CompareRequest(
            base=base or "base", candidate=candidate or "candidate", items=items, verdicts=tuple(verdicts or ()),
            rubrics=rubrics, judge=None if verdicts else judge, run_config=run_config,
            cache=None if no_cache else cache, gate=GateSettings(alpha=alpha, guards=tuple(guard or ())),
            sequential=SequentialSettings(alpha=alpha, max_items=max_items, max_cost=max_cost, seed=seed)
            if sequential else None,
            lm_eval=lm_eval, lm_eval_options={"tasks": tasks, "metric": metric, "filter_name": filter_name,
                                              "allow_prompt_change": allow_prompt_change, "seed": seed},
            allow_mixed=allow_mixed)
        if not (request.verdicts or request.judge or request.lm_eval):
            raise InputError(str(items or "<options>"), None, None, "nothing to compare on",
                             "pass --judge SPEC with --rubric, or --verdicts FILE, or --lm-eval BASE_DIR CANDIDATE_DIR")
        if dry_run:
            return _print_dry_run(request, out)
        report = run_compare(request)
        if verdicts and (judge or rubric):
            report["notes"].append("--judge and --rubric are not used with --verdicts: each verdict file names its "
                                   "rubric and no judge is called")
    except (InputError, ValueError, ServerUnreachable) as e:
        fail(e)
    print_report(report, out)
    _write_outputs(report, json_out, report_path, out)
    if report["gate"].get("no_verdict"):
        raise typer.Exit(NO_VERDICT_EXIT)
    if not report["gate"]["passed"]:
        raise typer.Exit(1)
