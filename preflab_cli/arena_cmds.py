"""``preflab`` statistics commands: info, convert, simulate, power, study, lc, arena-hard, rank.

Each command parses options, calls one library function and prints or writes its result.
"""

from pathlib import Path
from typing import Annotated

import typer

from preflab.errors import InputError
from preflab.io import is_stdout
from preflab_cli.common import app, console, err, fail, report_console

LayoutOpt = Annotated[str, typer.Option("--layout", help="Input layout: arena (Chatbot Arena) or llmfao.")]
SkipOpt = Annotated[bool, typer.Option("--skip-bad-rows", help="Drop bad rows, count and report them.")]
ColumnsOpt = Annotated[list[str] | None, typer.Option(
    "--columns", help="Map the file's columns onto model_a, model_b, winner, ...: FILE_COLUMN=COLUMN, comma-separated "
                      "or repeated (e.g. --columns Model_A=model_a,Model_B=model_b).")]
WinnerMapOpt = Annotated[list[str] | None, typer.Option(
    "--winner-map", help="Map the file's winner labels onto model_a, model_b, tie, 'tie (bothbad)': LABEL=WINNER, "
                         "comma-separated or repeated (e.g. --winner-map draw=tie,A=model_a,B=model_b).")]


def battle_layout(layout: str, columns: list[str] | None = None, winner_map: list[str] | None = None):  # noqa: ANN201
    """``--layout`` with ``--columns`` and ``--winner-map`` on top: the layout's name when neither is given,
    else its :class:`arena.io.schema.ColumnMap` extended by them. Bad pairs are an input error naming the flag."""
    from arena.io.schema import LAYOUTS, ColumnMap
    from preflab.outcomes import BATTLE_LABELS

    if not columns and not winner_map:
        return layout
    if layout not in LAYOUTS:
        raise InputError("<options>", None, "--layout", f"unknown layout {layout!r}",
                         f"use one of {', '.join(LAYOUTS)}")
    base = LAYOUTS[layout]
    cols, wins = dict(base.columns), dict(base.winners)
    for flag, specs, target, allowed in (("--columns", columns, cols, None), ("--winner-map", winner_map, wins,
                                                                               BATTLE_LABELS)):
        for spec in (part for s in specs or () for part in s.split(",") if part.strip()):
            source, eq, to = (x.strip() for x in spec.partition("="))
            if not eq or not source or not to:
                raise InputError("<options>", None, flag, f"{spec!r} is not FROM=TO", f"write e.g. {flag} "
                                 + ("Model_A=model_a" if flag == "--columns" else "draw=tie"))
            if allowed and to not in allowed:
                raise InputError("<options>", None, flag, f"{to!r} is not a winner label",
                                 f"map onto one of {', '.join(allowed)}")
            target[source] = to
    return ColumnMap(columns=cols, winners=wins)


def load_or_exit(path: Path, layout: object = "arena", skip_bad_rows: bool = False, lean: bool = False,
                 keep: tuple[str, ...] = (), need: tuple[str, ...] | None = None):
    """Load battles for a command; print a clear error and exit 2 on bad input, report skipped rows.

    ``lean``: keep only the columns the statistics read (``need``: only these optional ones; plus ``keep``),
    for bounded memory."""
    from arena.io.battles import load_battles

    try:
        battles = load_battles(path, layout=layout, on_error="skip" if skip_bad_rows else "raise", lean=lean,
                               keep=keep, need=need)
    except InputError as e:
        fail(e)
    if battles.skipped:
        err.print(f"[yellow]{battles.skip_report()}[/yellow]", highlight=False)
    return battles


@app.command()
def info(path: Path, layout: LayoutOpt = "arena", skip_bad_rows: SkipOpt = False, columns: ColumnsOpt = None,
         winner_map: WinnerMapOpt = None) -> None:
    """Validate a battles file and summarise it: rows, models, outcomes, graph components."""
    from arena.io.battles import aggregate, comparison_components

    try:
        cmap = battle_layout(layout, columns, winner_map)
    except InputError as e:
        fail(e)
    battles = load_or_exit(path, cmap, skip_bad_rows, lean=True, need=())  # names and outcomes only
    counts = aggregate(battles)
    comps = comparison_components(counts)
    outcomes = battles.df["winner"].value_counts().to_dict()
    console.print(f"{path}: {len(battles)} battles, {counts.n_models} models, {len(battles.skipped)} skipped")
    console.print("outcomes: " + ", ".join(f"{k} {v}" for k, v in outcomes.items()))
    if len(comps) > 1:
        console.print(f"[yellow]{len(comps)} disconnected components:[/yellow] " + "; ".join(map(str, comps)))
    else:
        console.print("comparison graph: connected")


@app.command()
def convert(src: Path, dst: Path, layout: LayoutOpt = "arena", skip_bad_rows: SkipOpt = False,
            columns: ColumnsOpt = None, winner_map: WinnerMapOpt = None) -> None:
    """Convert battles between JSON, JSONL, CSV and Parquet (by extension), validating on the way."""
    from arena.io.battles import write_battles

    try:
        cmap = battle_layout(layout, columns, winner_map)
    except InputError as e:
        fail(e)
    battles = load_or_exit(src, cmap, skip_bad_rows)
    write_battles(battles, dst)
    report_console(dst).print(f"wrote {len(battles)} battles to {'stdout' if is_stdout(dst) else dst}")




# ---------------------------------------------------------------------------------- simulate / power / study


TiesOpt = Annotated[str, typer.Option("--ties", help="Ties model: half (plain Bradley-Terry: a tie is half a "
                                                 "win; the simulator draws no ties), rao-kupper or davidson.")]


def ties_model(ties: str) -> str:
    """The simulator's name for a ties model (``half`` is plain BT, which it calls ``none``)."""
    return "none" if ties in ("half", "none") else ties


def _floats(text: str | None) -> list[float] | None:
    return [float(x) for x in text.replace(",", " ").split()] if text else None


@app.command()
def simulate(
    output: Annotated[Path, typer.Option("--output", "-o", help="Battles file (.jsonl/.json/.csv/.parquet).")],
    battles: Annotated[int, typer.Option("--battles", "-n", help="Number of battles.")] = 10_000,
    models: Annotated[int | None, typer.Option("--models", "-k", help="Number of models (default 5).")] = None,
    strengths: Annotated[str, typer.Option(help="True natural-log BT strengths, e.g. '1.6,1.2,0.9,0.4,0'.")] = "",
    spread: Annotated[float, typer.Option(help="Strengths evenly spaced from SPREAD down to 0.")] = 2.0,
    ties: TiesOpt = "half",
    tie_rate: Annotated[float, typer.Option(help="Tie probability between equally strong models.")] = 0.0,
    bothbad_share: Annotated[float, typer.Option(help="Share of ties recorded as 'tie (bothbad)'.")] = 0.0,
    position_bias: Annotated[float, typer.Option(help="Logit bonus of the left answer (model_a).")] = 0.0,
    length_bias: Annotated[float, typer.Option(help="Logit weight on (len_a - len_b)/(len_a + len_b).")] = 0.0,
    length_spread: Annotated[float, typer.Option(help="Per-model mean lengths 500*exp(+-spread).")] = 0.7,
    mean_tokens: Annotated[str, typer.Option(help="Per-model mean answer tokens, e.g. '900,300,...'.")] = "",
    voters: Annotated[int, typer.Option(help="Number of voters (written as the judge column).")] = 1,
    voter_noise: Annotated[str, typer.Option(help="Voter shares, e.g. 'random=0.1,adversarial=0.05'.")] = "",
    sampling: Annotated[str, typer.Option(help="uniform or active pair sampling.")] = "uniform",
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    truth: Annotated[Path | None, typer.Option(help="Truth JSON (default: OUTPUT stem + .truth.json).")] = None,
    conv_metadata: Annotated[bool, typer.Option(help="Also write nested conv_metadata per row.")] = True,
) -> None:
    """Simulate an arena with known truth and write Chatbot Arena-format battles plus a truth file."""
    from arena.simulation.files import simulate_to_files, spec_from_options

    try:
        spec = spec_from_options(models=models, strengths=_floats(strengths), spread=spread, ties=ties_model(ties),
                                 tie_rate=tie_rate, position_bias=position_bias, length_bias=length_bias,
                                 length_spread=length_spread, mean_tokens=_floats(mean_tokens), voters=voters,
                                 voter_noise=voter_noise, seed=seed, bothbad_share=bothbad_share)
        if sampling not in ("uniform", "active"):
            raise ValueError(f"--sampling must be uniform or active; got {sampling!r}")
    except ValueError as e:
        fail(e)
    from preflab_cli.progress import step_status

    with step_status(f"simulating {battles:,} battles"):
        out, truth_path, sim = simulate_to_files(spec, battles, output, truth, seed=seed,
                                                 sampling=sampling,  # type: ignore[arg-type]
                                                 conv_metadata=conv_metadata)
    shares = sim.df["winner"].value_counts(normalize=True)
    show = report_console(output)
    show.print(f"wrote {len(sim)} battles between {spec.n_models} models to {'stdout' if is_stdout(out) else out}"
               f"; truth in {truth_path or '(not written: give --truth)'}", soft_wrap=True)
    show.print("outcomes: " + ", ".join(f"{k} {v:.1%}" for k, v in shares.items() if v > 0))


@app.command()
def power(
    win_rate: Annotated[str, typer.Option(help="True win rates for the A-vs-B table.")] = "0.55,0.60,0.65,0.70,0.80",
    alpha: Annotated[float, typer.Option(help="Two-sided significance level.")] = 0.05,
    target: Annotated[float, typer.Option("--power", help="Target power.")] = 0.80,
    strengths: Annotated[str, typer.Option(help="Plan a leaderboard: true natural-log strengths.")] = "",
    ties: TiesOpt = "half",
    tie_rate: Annotated[float, typer.Option(help="Tie probability between equally strong models.")] = 0.0,
) -> None:
    """Sample sizes: decisive pairs for a paired A-vs-B test (normal and exact), or votes for a leaderboard."""
    from arena.simulation.power import leaderboard_votes_needed, power_table

    if strengths:
        from arena.simulation.simulate import default_model_names

        values = _floats(strengths) or []
        plan = leaderboard_votes_needed(values, level=1 - alpha, power=target, ties=ties_model(ties), tie_rate=tie_rate,
                                        models=default_model_names(len(values)))
        console.print(f"votes (uniform pairs) for {target:.0%} power that each adjacent gap is significant "
                      f"(votes_gap) and that the two intervals separate (votes_overlap):", soft_wrap=True)
        console.print(plan.to_string(index=False), soft_wrap=True)
        console.print(f"total votes needed: {int(plan['votes_gap'].max())} (gap), "
                      f"{int(plan['votes_overlap'].max())} (non-overlapping intervals)")
        return
    table = power_table(_floats(win_rate) or [], alpha, target)
    console.print(f"decisive pairs for {target:.0%} power, two-sided alpha {alpha}:")
    console.print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"), soft_wrap=True)


@app.command()
def study(
    name: Annotated[str, typer.Argument(help="recovery, coverage, bias or active.")],
    votes: Annotated[str, typer.Option(help="Vote budgets, e.g. '50,500,5000' (active: the first).")] = "",
    arenas: Annotated[int, typer.Option(help="Simulated arenas (coverage, active).")] = 400,
    boot_arenas: Annotated[int, typer.Option(help="coverage: arenas that also get bootstrap CIs.")] = 200,
    sampling: Annotated[str, typer.Option(help="coverage: uniform or active pair sampling.")] = "uniform",
    n_bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates per fit.")] = 500,
    models: Annotated[int, typer.Option(help="active: number of evenly spaced models.")] = 10,
    spread: Annotated[float, typer.Option(help="active: strength spread.")] = 3.0,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
) -> None:
    """Simulation studies with known truth (seed setting: strengths 1.6, 1.2, 0.9, 0.4, 0)."""
    from arena.simulation import studies
    from arena.simulation.simulate import spread_strengths

    budgets = [int(v) for v in (_floats(votes) or [])]
    if name == "recovery":
        out = studies.recovery_table(n_votes=budgets or (50, 500, 5000), n_bootstrap=n_bootstrap, seed=seed)
    elif name == "coverage":
        out = studies.coverage_study(n_votes=budgets or (50, 500, 5000), n_arenas=arenas,
                                     n_boot_arenas=min(arenas, boot_arenas), n_bootstrap=n_bootstrap,
                                     seed=seed, sampling=sampling)
        out = out.drop(columns="per_model")
    elif name == "bias":
        out = studies.bias_study(n_votes=budgets[0] if budgets else 20_000, seed=seed)
    elif name == "active":
        out = studies.active_vs_uniform(spread_strengths(models, spread), budgets[0] if budgets else 3000,
                                        n_arenas=arenas, seed=seed)
        console.print(out.round(4).to_string(), soft_wrap=True)
        console.print(f"uniform needs {out.attrs['variance_ratio']:.2f}x the votes of active sampling for the "
                      f"same adjacent-gap variance (MSE ratio {out.attrs['mse_ratio']:.2f})", soft_wrap=True)
        return
    else:
        err.print(f"[red]error:[/red] unknown study {name!r}; choose recovery, coverage, bias or active")
        raise typer.Exit(2)
    console.print(out.round(3).to_string(index=False), soft_wrap=True)




# ----------------------------------------------------------------------------------------- lc / arena-hard


@app.command("lc")
def lc_cmd(
    annotations: Annotated[list[Path], typer.Argument(help="AlpacaEval annotations.json[.gz], one per model "
                                                          "(or generic tables with --table).")],
    baseline: Annotated[str | None, typer.Option(help="Keep files judged against this baseline, or, if it "
                                                      "names a model, also report LC vs that model.")] = None,
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap refits over instructions.")] = 1000,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the table (.csv/.json/...).")] = None,
    table: Annotated[bool, typer.Option("--table", help="Inputs are generic tables (instruction, model, "
                                                         "baseline, output, baseline_output, preference).")] = False,
    difficulty: Annotated[Path | None, typer.Option(help="CSV instruction,difficulty (else estimated).")] = None,
    save_difficulty: Annotated[Path | None, typer.Option(help="Write the estimated difficulty CSV (reuse it "
                                                              "for subsets with --difficulty).")] = None,
    gamed: Annotated[list[Path] | None, typer.Option(help="Annotations of gamed baseline rewrites.")] = None,
    level: Annotated[float, typer.Option(help="CI level.")] = 0.95,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
) -> None:
    """Length-controlled win rates (AlpacaEval GLM): raw and LC win rate, SE, CI and average length per model."""
    import warnings

    import pandas as pd

    from arena.lc.board import LCDivergenceWarning, lc_leaderboard
    from arena.lc.data import (
        format_lc_table,
        load_alpaca_table,
        load_difficulty,
        load_lc_table,
        with_baseline_rows,
    )
    from preflab.io import write_table

    try:
        if table:
            tab = pd.concat([load_lc_table(p) for p in annotations], ignore_index=True)
        else:
            tab = load_alpaca_table(annotations, baseline=baseline, baseline_may_be_model=True)
        reference = baseline if baseline is not None and baseline in set(tab["model"]) else None
        gamed_tab = load_alpaca_table(gamed) if gamed else None
        diff = load_difficulty(difficulty) if difficulty else None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", LCDivergenceWarning)
            res = lc_leaderboard(tab, n_bootstrap=bootstrap, level=level, seed=seed, difficulty=diff,
                                 gamed=gamed_tab, reference=reference)
    except (InputError, ValueError) as e:
        fail(e)
    own = tab.attrs.get("baseline_files", [])
    res = with_baseline_rows(res, own)
    show = report_console(output)
    show.print(f"{len(res) - len(own)} models vs baseline '{res.attrs['baseline']}', {res.attrs['n_instructions']} "
                  f"instructions, {bootstrap} bootstrap refits; win rates in %", highlight=False,
                  soft_wrap=True)
    show.print(format_lc_table(res), highlight=False, soft_wrap=True)
    for w in caught:
        err.print(f"[yellow]warning:[/yellow] {w.message}", highlight=False, soft_wrap=True)
    for o in own:
        err.print(f"note: {o['source']} is the baseline '{o['model']}' judged against itself: listed at 50% by "
                  "definition, as AlpacaEval's leaderboard does (not fitted)", highlight=False, soft_wrap=True)
    if save_difficulty:
        table = res.attrs["difficulty"].rename_axis("instruction").reset_index()
        err.print(f"wrote {write_table(table, save_difficulty)}")
    if output:
        err.print(f"wrote {write_table(res, output)}")


@app.command("arena-hard")
def arena_hard_cmd(
    judgments: Annotated[list[Path], typer.Argument(help="Arena-Hard judgment JSONL files (v2 or v0.1), or "
                                                         "`preflab judge run` output with --verdicts.")],
    baseline: Annotated[str | None, typer.Option(help="The baseline model (default: the files' own baseline, or "
                                                      "the one model in every game; reported).")] = None,
    verdicts: Annotated[bool, typer.Option("--verdicts", help="Inputs are `preflab judge run` JSONL.")] = False,
    indirect: Annotated[bool, typer.Option("--indirect", help="Also fit games between non-baseline models "
                                                              "(BT with the baseline pinned).")] = False,
    strong_weight: Annotated[float, typer.Option(help="Weight of strong verdicts (A>>B, B>>A).")] = 3.0,
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap refits over prompts.")] = 1000,
    style: Annotated[list[Path] | None, typer.Option(help="Answer JSONL with style metadata: style control.")] = None,
    compare_weights: Annotated[bool, typer.Option(help="Also show CI widths for strong weight 1 vs the "
                                                       "chosen one.")] = False,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the table (.csv/.json/...).")] = None,
    level: Annotated[float, typer.Option(help="CI level.")] = 0.95,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
) -> None:
    """Judge-vs-baseline leaderboard: BT with the baseline pinned, win rate vs baseline with prompt-bootstrap CIs."""
    import pandas as pd

    from arena import arenahard as ah
    from arena import arenahard_files
    from preflab.io import write_table

    def load(weight: float) -> pd.DataFrame:
        if verdicts:
            from judge import load_verdicts_jsonl

            parts = [arenahard_files.games_from_verdicts(load_verdicts_jsonl(p), str(p)) for p in judgments]
            out = pd.concat(parts, ignore_index=True)
            out.attrs.update(skipped=sum(p.attrs.get("skipped", 0) for p in parts),
                             models=sorted({m for p in parts for m in p.attrs.get("models", ())}))
            return out
        return arenahard_files.load_arena_hard(judgments, baseline=baseline, strong_weight=weight)

    try:
        games = load(strong_weight)
        base = baseline or ah.detect_baseline(games)
        feats = arenahard_files.load_answer_style(style) if style else None
        lb = ah.baseline_leaderboard(games, base, n_bootstrap=bootstrap, level=level, seed=seed, style=feats,
                                     allow_indirect=indirect)
        widths = (ah.ci_width_by_weight(load, (1.0, strong_weight), baseline=base, n_bootstrap=bootstrap,
                                        level=level, seed=seed, allow_indirect=indirect) if compare_weights else None)
    except (InputError, ValueError, OSError) as e:
        fail(e)
    skipped = games.attrs.get("skipped", 0)
    how = "given" if baseline else "detected: " + ("named in the files" if games.attrs.get("baseline")
                                                   else "the one model in every game")
    n_models = int((lb["model"] != base).sum())
    show = report_console(output)
    show.print(f"{n_models} models vs baseline '{base}' ({how}), {games['uid'].nunique()} prompts, "
               f"{len(games)} games ({skipped} unreadable skipped), strong weight {strong_weight:g}"
               + (", style-controlled" if feats is not None else "") + "; CIs resample prompts",
               highlight=False, soft_wrap=True)
    for name, n in games.attrs.get("other_baselines", {}).items():
        err.print(f"[yellow]note:[/yellow] {n} records judged against baseline '{name}' left out", highlight=False)
    if lb.attrs.get("indirect_games"):
        err.print(f"[yellow]note:[/yellow] {lb.attrs['indirect_games']} games do not involve '{base}'; models not "
                  "judged against it get a BT-inferred win rate (see the note column)", highlight=False,
                  soft_wrap=True)
    if lb.attrs.get("no_games"):
        err.print(f"[yellow]note:[/yellow] no readable games for {', '.join(lb.attrs['no_games'])}: listed "
                  "without a rating", highlight=False, soft_wrap=True)
    show.print(ah.format_baseline_table(lb), highlight=False, soft_wrap=True)
    if widths is not None:
        show.print("CI width (win-rate points) by strong-verdict weight:")
        show.print(widths.round(2).to_string(), highlight=False)
    if output:
        err.print(f"wrote {write_table(lb, output)}")


