"""``preflab rank HUMAN --judge-battles JUDGE``: the judge-assisted (PPI++) leaderboard.

The library call is :func:`judge_arena.assist.judge_assisted_leaderboard`, the one the app's Leaderboard
page ("sharpen with a judge") makes too; this module only prints.
"""

from __future__ import annotations

from pathlib import Path


def rank_with_judge(battles, judge_path: Path, *, layout: str, skip_bad_rows: bool, labels: str, ci: str,
                    bootstrap: int, ties: str, level: float, seed: int, scale: float, base: float, init: float,
                    output: Path | None, top: int | None, allow_mixed: bool = False) -> None:
    """Fit and print the PPI++ leaderboard; the usual table plus ``ess`` and a footer (lambda, items, gain)."""
    import warnings

    from arena.leaderboard_options import EloScale, IntervalOptions
    from judge_arena.assist import footer, judge_assisted_leaderboard
    from preflab.errors import InputError
    from preflab_cli.common import console, err, fail
    from preflab_cli.rank_output import rich_table, write_board

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            table = judge_assisted_leaderboard(battles, judge_path, layout=layout, skip_bad_rows=skip_bad_rows,
                                               labels=labels, intervals=IntervalOptions(ci, level, bootstrap, seed),
                                               ties=ties, scale=EloScale(scale, base, init), allow_mixed=allow_mixed)
    except (InputError, ValueError) as e:
        fail(e)
    for w in caught:
        err.print(f"[yellow]warning:[/yellow] {w.message}", highlight=False)
    for note in table.attrs["diagnostics"]:
        err.print(f"[yellow]note:[/yellow] {note}", highlight=False)
    console.print(rich_table(table, top))
    console.print(footer(table, judge_path.name), highlight=False, soft_wrap=True)
    if output:
        err.print(f"wrote {write_board(table, output)}")
