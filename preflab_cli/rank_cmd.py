"""``preflab rank``: battles -> Bradley-Terry leaderboard with bootstrap and/or sandwich intervals.

Its own module (from :mod:`preflab_cli.arena_cmds`): what keeps a warm run short (JAX imported while the file
is read, stored programs, per-part timings) lives with the one command that needs it.
"""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from preflab.errors import InputError
from preflab.io import is_stdout
from preflab_cli.arena_cmds import ColumnsOpt, LayoutOpt, SkipOpt, WinnerMapOpt, battle_layout, load_or_exit
from preflab_cli.common import app, cli_words, err, fail, report_console

if TYPE_CHECKING:
    from rich.console import Console

    from arena.leaderboard import Leaderboard


def _columns_needed(style_columns: tuple[str, ...], style_control: bool, unit: str,
                    reads_optional: bool) -> tuple[str, ...] | None:
    """The columns a lean read keeps: all of them (None) for filters and judge matching, else the names and
    outcomes plus the style metadata and the item id the fit uses."""
    if reads_optional:
        return None
    items = ("question_id",) if unit == "item" else ()  # the item id, for the sampling unit
    return (*style_columns, *items) if style_control else items


def _print_tie_and_style(show: "Console", lb: "Leaderboard", ties: str) -> None:
    """The tie parameter with its intervals, and the style coefficients, when the fit has them."""
    if lb.tie_parameter:
        tp = lb.tie_parameter
        show.print(f"tie parameter ({ties}): {tp['value']:.4f}  " + "  ".join(
            f"{m} [{tp[f'lower_{m}']:.4f}, {tp[f'upper_{m}']:.4f}]" for m in ("sandwich", "bootstrap")
            if f"lower_{m}" in tp))
    if lb.style is not None:
        show.print("style coefficients (log-odds per SD):\n"
                   + lb.style[["coefficient", "lower", "upper"]].round(4).to_string(), highlight=False)


def _write_plots(lb: "Leaderboard", plot: Path | None, heatmap: Path | None) -> None:
    if plot or heatmap:
        from arena.plots import forest_plot, win_rate_heatmap  # matplotlib only when asked for

        if plot:
            err.print(f"wrote {forest_plot(lb.table, plot)}")
        if heatmap:
            err.print(f"wrote {win_rate_heatmap(lb.observed_win_rates(), heatmap)}")


def _rank_over_time(battles, window: str, intervals, *, ties: str, scale, anchor: str | None,
                    output: Path | None, plot: Path | None) -> None:
    """``rank --over-time``: one board per date window, printed as one row per window and model."""
    from arena.over_time import ratings_over_time
    from preflab.io import write_table

    try:
        res = ratings_over_time(battles, window, intervals=intervals, ties=ties, scale=scale, anchor=anchor)
    except ValueError as e:
        fail(cli_words(str(e)).replace("window ", "--over-time "))
    if res.attrs["skipped_no_tstamp"]:
        err.print(f"skipped {res.attrs['skipped_no_tstamp']} battle(s) without a tstamp", highlight=False)
    show = report_console(output if is_stdout(output) else plot)
    shown = res.assign(window_start=res["window_start"].dt.strftime("%Y-%m-%d %H:%M"),
                       interval=[f"{lo - r:+.1f} / {hi - r:+.1f}" for r, lo, hi in
                                 zip(res["rating"], res["lower"], res["upper"], strict=True)],
                       rating=res["rating"].map("{:.1f}".format), battles=res["battles"].map("{:.0f}".format))
    show.print(f"ratings by {res.attrs['window']} window of tstamp (UTC), {intervals.level:.0%} {intervals.ci} "
               "intervals; each window is centred on its own models", highlight=False, soft_wrap=True)
    show.print(shown[["window_start", "model", "rating", "interval", "battles"]].to_string(index=False),
               highlight=False, soft_wrap=True)
    if output:
        err.print(f"wrote {write_table(res, output, meta_key='ratings_over_time')}")
    if plot:
        from arena.plots import over_time_plot

        err.print(f"wrote {over_time_plot(res, plot)}")


@app.command()
def rank(
    path: Path,
    layout: LayoutOpt = "arena",
    skip_bad_rows: SkipOpt = False,
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates (vmapped refits).")] = 1000,
    ci: Annotated[str, typer.Option("--ci", help="bootstrap | sandwich | both")] = "bootstrap",
    ties: Annotated[str, typer.Option("--ties", help="half | rao-kupper | davidson")] = "half",
    style_control: Annotated[bool, typer.Option("--style-control", help="Adjust for length/markdown.")] = False,
    anchor: Annotated[str | None, typer.Option("--anchor", help="Pin a model: NAME=RATING.")] = None,
    level: Annotated[float, typer.Option("--level", help="Interval level.")] = 0.95,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    filters: Annotated[list[str] | None, typer.Option(
        "--filter",
        help="category=A,B | language=X | exclude=M1,M2 | anony | daily-cap=N | dedup (repeatable)")] = None,
    output: Annotated[Path | None, typer.Option("--output", help="Write the table: .csv, .json or .parquet (every "
                                                "column), or .md or .html (the table to share).")] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="Forest plot of ratings: .png or .html.")] = None,
    heatmap: Annotated[Path | None, typer.Option("--heatmap", help="Observed win-rate heatmap: .png/.html.")] = None,
    scale: Annotated[float, typer.Option("--scale")] = 400.0,
    base: Annotated[float, typer.Option("--base")] = 10.0,
    init: Annotated[float, typer.Option("--init", help="Mean rating (or the anchor's default).")] = 1000.0,
    weights: Annotated[str, typer.Option("--weights", help="multinomial | poisson resampling")] = "multinomial",
    min_battles: Annotated[int, typer.Option("--min-battles", help="Warn below this many battles.")] = 10,
    device: Annotated[str | None, typer.Option("--device", help="JAX platform: cpu, gpu/cuda, tpu.")] = None,
    top: Annotated[int | None, typer.Option("--top", help="Show only the first N rows.")] = None,
    ridge: Annotated[float | None, typer.Option("--ridge", help="Ridge prior on the log strengths (e.g. 0.01): "
                                                "finite ratings and intervals even when Ford's condition "
                                                "fails; default: none (1e-6 numerical pin only).")] = None,
    style_features: Annotated[str | None, typer.Option(
        "--style-features", help="Comma list from length,headers,lists,bold (default all).")] = None,
    judge_battles: Annotated[Path | None, typer.Option(
        "--judge-battles", help="Judge battles or a `preflab judge run` verdict file: PPI++ leaderboard.")] = None,
    judge_labels: Annotated[str, typer.Option("--judge-labels", help="auto | hard | soft judge labels.")] = "auto",
    allow_mixed: Annotated[bool, typer.Option("--allow-mixed", help="Pool a verdict file whose judges, model "
                                              "versions or rubric texts differ (refused otherwise).")] = False,
    unit: Annotated[str, typer.Option("--unit", help="Sampling unit of the intervals: item (question_id x model "
                                      "pair, when one repeats; else battle) | battle.")] = "item",
    over_time: Annotated[str | None, typer.Option("--over-time", help="Refit on each date window of tstamp "
                                                  "(e.g. 7D, 30D, 12h): ratings over time; --plot draws them.")]
    = None,
    columns: ColumnsOpt = None,
    winner_map: WinnerMapOpt = None,
) -> None:
    """Rank models from battles: Bradley-Terry ratings with bootstrap and/or sandwich intervals.

    With --judge-battles, judge verdicts sharpen the human ratings by prediction-powered inference (PPI++):
    items are matched by question_id (or item_id) and the model pair; the table adds `ess`."""
    import warnings

    from preflab_cli.common import Timings, import_jax_in_background
    from preflab_cli.rank_output import check_output

    if check_output(output):
        fail(check_output(output))
    timings = Timings()
    jax_imported = import_jax_in_background()  # overlaps reading the file
    from arena.io.battles import STYLE_COLUMNS

    text = ("conversation_a", "conversation_b") if style_control else ()  # style totals from text, if no metadata
    need = _columns_needed(STYLE_COLUMNS, style_control, unit, bool(filters) or judge_battles is not None)
    if over_time is not None and need is not None:
        need = (*need, "tstamp")
    from preflab_cli.progress import step_status

    try:
        with step_status(f"reading {path.name}"):
            battles = load_or_exit(path, battle_layout(layout, columns, winner_map), skip_bad_rows, lean=True,
                                   keep=(*text, "item_id"), need=need)
    except InputError as e:
        fail(e)
    finally:  # also on bad input: no exit while a thread is still importing
        timings.lap("read")
        jax_imported.join()
    import arena.jax_setup
    from arena.bt.hygiene import parse_filters
    from arena.leaderboard import fit_leaderboard
    from arena.leaderboard_options import EloScale, IntervalOptions
    from preflab_cli.rank_output import bootstrap_progress, rich_table, write_board

    arena.jax_setup.STORE_PROGRAMS = True  # a warm run loads its programs instead of tracing them
    timings.lap("imports")
    if over_time is not None:
        return _rank_over_time(battles, over_time, IntervalOptions(ci, level, bootstrap, seed, unit, weights),
                               ties=ties, scale=EloScale(scale, base, init), anchor=anchor, output=output, plot=plot)
    if judge_battles is not None:  # judge-assisted leaderboard (PPI++)
        from preflab_cli.judge_assist import rank_with_judge

        return rank_with_judge(battles, judge_battles, layout=layout, skip_bad_rows=skip_bad_rows,
                               labels=judge_labels, ci=ci, bootstrap=bootstrap, ties=ties, level=level, seed=seed,
                               scale=scale, base=base, init=init, output=output, top=top,
                               allow_mixed=allow_mixed)
    feats = tuple(f.strip() for f in style_features.split(",")) if style_features else None
    try:
        with bootstrap_progress(bootstrap if ci != "sandwich" else 0, enabled=err.is_terminal) as advance, \
                warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lb = fit_leaderboard(battles, IntervalOptions(ci, level, bootstrap, seed, unit, weights), ties=ties,
                                 scale=EloScale(scale, base, init), anchor=anchor, style_control=style_control,
                                 style_features=feats, min_battles=min_battles, filters=parse_filters(filters or []),
                                 device=device, progress=advance, **({} if ridge is None else {"ridge": ridge}))
    except (ValueError, RuntimeError) as e:
        fail(cli_words(str(e)))
    timings.lap("fit + CIs")
    for line in lb.hygiene:
        err.print(line, highlight=False)
    for w in caught:
        err.print(f"[yellow]warning:[/yellow] {cli_words(str(w.message))}", highlight=False)
    show = report_console(output if is_stdout(output) else plot if is_stdout(plot) else heatmap)
    show.print(rich_table(lb.table, top))
    _print_tie_and_style(show, lb, ties)
    if output:
        err.print(f"wrote {write_board(lb.table, output)}")
    _write_plots(lb, plot, heatmap)
    timings.lap("output")
    timings.report()
