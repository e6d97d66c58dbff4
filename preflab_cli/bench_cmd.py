"""``preflab judge bench``: a published benchmark's own headline (JudgeBench, RewardBench, RewardBench 2) with
intervals, beside preflab's calibration of the same file against its correctness labels."""

from pathlib import Path
from typing import Annotated

import typer

from preflab.io import is_stdout, write_output
from preflab_cli.common import fail, make_console
from preflab_cli.judge_cmds import app


@app.command("bench")
def bench_cmd(
    results: Annotated[Path, typer.Argument(help="A JudgeBench outputs/*.jsonl file, a RewardBench "
                                            "eval-set-scores JSON or *_outputs.jsonl, or a RewardBench 2 "
                                            "eval-set-scores JSON; or a folder of one benchmark's files (a board "
                                            "of judges).")],
    fmt: Annotated[str, typer.Option("--format", help="auto, judgebench, rewardbench or rewardbench2.")] = "auto",
    n_bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap resamples for intervals.")] = 1000,
    seed: Annotated[int, typer.Option(help="Random seed for the bootstraps.")] = 0,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write both reports as JSON here.")] = None,
    calibrate: Annotated[bool, typer.Option(help="Also calibrate the judge against the correctness labels "
                                            "(preflab's metrics beside the benchmark's).")] = True,
    tie_margin: Annotated[float, typer.Option(
        help="Reward-model scores, for preflab's calibration: |score_x − score_y| at or below this is a tie.")] = 0.0,
) -> None:
    """The benchmark's own headline by its own rule, per category, each with a 95% bootstrap interval."""
    from judge import BenchSettings, ScoreReading, benchmark_pairs, benchmark_report, report_json
    from preflab.errors import InputError

    if n_bootstrap < 0 or not tie_margin >= 0:
        fail(ValueError(f"need --bootstrap >= 0 and --tie-margin >= 0, got {n_bootstrap} and {tie_margin}"))
    out = make_console(stderr=is_stdout(json_out))
    if results.is_dir():
        return _board(results, fmt, BenchSettings(n_bootstrap=n_bootstrap, seed=seed), json_out, out)
    try:
        rep = benchmark_report(results, fmt, BenchSettings(n_bootstrap=n_bootstrap, seed=seed))
    except (InputError, ValueError, OSError) as e:
        fail(e)
    pairs, skipped = None, None
    if calibrate:
        try:
            pairs = benchmark_pairs(results, rep["format"], ScoreReading(tolerance=tie_margin))
        except InputError as e:  # e.g. a classifier's results without scores: the headline stands on its own
            skipped = str(e)
    _print_report(rep, out)
    if skipped:
        out.print(f"note: preflab's calibration left out: {skipped}", highlight=False, markup=False)
    res = _calibration(pairs, n_bootstrap, seed, out) if pairs is not None else None
    if json_out:
        payload = {"benchmark": rep, **({"preflab": res} if res is not None else {})}
        make_console(stderr=True).print(f"metrics -> {write_output(json_out, report_json(payload))}", markup=False)


def _print_report(rep: dict, out) -> None:
    """The benchmark's table (headline, categories, baseline), its rule and its notes."""
    from rich.markup import escape
    from rich.table import Table

    from judge import benchmark_rows

    table = Table(title=escape(rep["benchmark"]) + (f" ({escape(rep['model'])})" if rep.get("model") else ""))
    for col in ("", rep["unit"], "%", "95% interval"):
        table.add_column(col, justify="left" if not col else "right")
    for row in benchmark_rows(rep):
        table.add_row(*(escape(c) for c in row))
    out.print(table)
    out.print(f"rule: {rep['rule']}", highlight=False, markup=False)
    for note in rep["notes"]:
        out.print(f"note: {note}", highlight=False, markup=False)


def _calibration(pairs, n_bootstrap: int, seed: int, out) -> dict:
    """preflab's calibration of the same pairs against the correctness labels, printed as ``label: value``."""
    from judge import summary_rows
    from judge_arena.assist import calibration_report

    res = calibration_report(pairs, n_bootstrap=max(n_bootstrap, 1), seed=seed)
    out.print("preflab, against the correctness labels:", highlight=False, markup=False)
    for k, v in summary_rows(res):
        out.print(f"  {k}: {v}", highlight=False, markup=False)
    for note in res["notes"]:
        out.print(f"note: {note}", highlight=False, markup=False)
    return res


def _board(folder: Path, fmt: str, settings, json_out: Path | None, out) -> None:
    """One row per results file of a folder: the judges side by side on one benchmark."""
    from rich.markup import escape
    from rich.table import Table

    from judge import benchmark_board, board_rows, report_json
    from preflab.errors import InputError

    try:
        reports = benchmark_board(folder, fmt, settings)
    except (InputError, ValueError, OSError) as e:
        fail(e)
    header, rows = board_rows(reports)
    table = Table(title=escape(f"{reports[0]['benchmark']}: {len(reports)} judges"))
    for col in header:
        table.add_column(escape(col), justify="left" if col == "judge" else "right")
    for row in rows:
        table.add_row(*(escape(c) for c in row))
    out.print(table)
    out.print(f"rule: {reports[0]['rule']}", highlight=False, markup=False)
    out.print("one file at a time shows each judge's notes and preflab's calibration", highlight=False, markup=False)
    if json_out:
        make_console(stderr=True).print(f"metrics -> {write_output(json_out, report_json({'board': reports}))}",
                                        markup=False)
