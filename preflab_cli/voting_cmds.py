"""``preflab`` commands for the voting app and its store: app, demo-seed, export-votes."""

import sys
from pathlib import Path
from typing import Annotated

import typer

from preflab.errors import InputError
from preflab.io import is_stdout, write_output
from preflab_cli.common import DEMO_DIR, app, console, err, fail
from voting.config import DEFAULT_STORE_URL, check_access

#: A quiet, headless server: no file watcher (it re-walks the tree and burns a core), no reruns on save,
#: no forced full garbage collection after every rerun (56% of a vote's server CPU in a profile), no "magic"
#: (a bare expression in a page must not be written to the page), no usage statistics, the viewer toolbar, no
#: "Download as CSV" on tables (it wrote cells raw: formulas ran in spreadsheets; our exports neutralise them)
#: (the settings of .streamlit/config.toml, for any folder).
STREAMLIT_FLAGS = ("--server.headless", "true", "--server.fileWatcherType", "none", "--server.runOnSave",
                   "false", "--runner.postScriptGC", "false", "--runner.magicEnabled", "false",
                   "--browser.gatherUsageStats", "false", "--client.toolbarMode", "viewer",
                   "--client.disableDataExport", "true",
                   "--client.showErrorDetails", "none")  # no tracebacks in the browser (the log has them)
DbOpt = Annotated[str, typer.Option("--db", help="SQLAlchemy URL: sqlite:///path.db or postgresql+psycopg://...")]


@app.command("app")
def app_cmd(
    db: DbOpt = DEFAULT_STORE_URL,
    port: Annotated[int, typer.Option(help="Port to serve on.")] = 8501,
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    strategy: Annotated[str, typer.Option(help="Next pair: uniform, balanced or active.")] = "balanced",
    overlap: Annotated[int, typer.Option(help="Votes wanted per item (0 = no limit).")] = 0,
    reveal: Annotated[bool, typer.Option("--reveal/--no-reveal", help="Show model names after a vote.")] = True,
    access: Annotated[str, typer.Option(help="Who may vote: open (anonymous guest ids, labelled, rate-limited) "
                                             "or invite (links from `preflab invite`).")] = "open",
    arena: Annotated[Path | None, typer.Option(help="Roster TOML of models for the live Battle page "
                                                    "(one [[model]] table each; keys from the environment).")] = None,
    arena_prompts: Annotated[Path | None, typer.Option(help="Prompts (item_id, prompt) a Battle voter may draw "
                                                            "from instead of typing one.")] = None,
    arena_check: Annotated[bool, typer.Option("--arena-check/--no-arena-check",
                                              help="Ask every roster model for one token before serving; "
                                                   "refuse to start when one does not answer.")] = True,
) -> None:
    """Start the voting app (Streamlit). Passcodes come from PREFLAB_PASSCODE / PREFLAB_ADMIN_PASSCODE."""
    import os

    from voting.store import open_store, resolve_url

    db = resolve_url(db)  # the server runs in the repository folder
    open_store(db).dispose()  # create the schema now, and fail here with a clear error on a bad URL
    import voting.app

    script = voting.app.SCRIPT  # ships with the package: the app runs from any folder
    try:
        check_access(access, "--access {!r}")
    except ValueError as e:
        fail(e)
    env = {**os.environ, "PREFLAB_DB": db, "PREFLAB_STRATEGY": strategy, "PREFLAB_OVERLAP": str(overlap),
           "PREFLAB_REVEAL": "1" if reveal else "0", "PREFLAB_ACCESS": access}
    if arena is not None:
        from voting.arena_guard import arena_settings, start_lines
        from voting.battles import load_arena

        env["PREFLAB_ARENA"] = str(arena.resolve())
        roster = load_arena(str(arena))
        if arena_check:
            _check_arena(arena, roster)
        console.print(f"Battle page: {len(roster)} models from {arena}")
        for line in start_lines(arena_settings(str(arena), roster)):  # the limits, and any unknown price
            (err if line.startswith("warning") else console).print(line, highlight=False, markup=False)
        if arena_prompts is not None:
            from answering.model_specs import load_prompts

            load_prompts(arena_prompts)  # a bad file fails here, with its line
            env["PREFLAB_ARENA_PROMPTS"] = str(arena_prompts.resolve())
    console.print(f"preflab app on http://{host}:{port} (database {db.split('@')[-1]}; {access} voting)",
                  soft_wrap=True, highlight=False)  # one line whatever the width: scripts read it (`head -1 app.log`)
    if not env.get("PREFLAB_ADMIN_PASSCODE"):
        err.print("warning: PREFLAB_ADMIN_PASSCODE is not set: the Leaderboard, Data and Judge calibration pages "
                  "are open to anyone who can reach this server (they show a banner saying so)", highlight=False)
    sys.stdout.flush()
    cmd = [sys.executable, "-m", "streamlit", "run", str(script), *STREAMLIT_FLAGS,
           "--server.address", host, "--server.port", str(port)]
    os.execve(sys.executable, cmd, env)  # become the server: signals reach it, no orphan on exit


def _check_arena(path: Path, roster: list) -> None:
    """Refuse (exit 2) a roster with a model that does not answer one token now: every battle it drew would
    fail after the voter typed a prompt."""
    from voting.battle_runs import check_roster

    console.print(f"Checking the {len(roster)} roster models (one token each) ...")
    dead = check_roster(roster)
    for name, why in dead.items():
        err.print(f"error: {path}: model {name!r} did not answer: {why}", highlight=False, markup=False)
    if dead:
        err.print("fix its spec or endpoint, or remove it from the roster (--no-arena-check serves anyway)",
                  highlight=False)
        raise typer.Exit(2)


@app.command("demo-seed")
def demo_seed(
    db: DbOpt = DEFAULT_STORE_URL,
    items: Annotated[Path, typer.Option(help="Items JSONL/CSV (item_id, prompt, model, answer).")] = DEMO_DIR
    / "items.jsonl",
    battles: Annotated[Path, typer.Option(help="Battles in the Chatbot Arena layout.")] = DEMO_DIR
    / "battles.jsonl",
    dataset: Annotated[str, typer.Option(help="Dataset name in the store.")] = "demo",
) -> None:
    """Seed a store with the bundled demo items and votes (idempotent: a second run adds nothing)."""
    from voting.items import ItemDataError
    from voting.store import count_rows, open_store
    from voting.votes import seed_demo

    engine = open_store(db)
    try:
        n_items, n_votes = seed_demo(engine, items, battles, dataset)
    except (ItemDataError, InputError) as e:
        fail(e)
    console.print(f"dataset {dataset!r}: {n_items} items and {n_votes} votes added; "
                  f"the store now holds {count_rows(engine, 'items')} items and {count_rows(engine)} votes")


@app.command("export-votes")
def export_votes(
    out: Annotated[Path, typer.Argument(help="File to write (- for stdout).")],
    db: DbOpt = DEFAULT_STORE_URL,
    kind: Annotated[str, typer.Option("--as", help="battles (Chatbot Arena JSON), votes (CSV), labels "
                                                   "(judge_labels.csv) or pairs (alias dpo: prompt, chosen, "
                                                   "rejected for TRL; .jsonl, or .parquet by suffix).")] = "battles",
    dataset: Annotated[str | None, typer.Option(help="Only this dataset (default: all).")] = None,
) -> None:
    """Export the app's votes, e.g. as Chatbot Arena battles for `preflab rank`, or preference pairs for DPO."""
    from voting.exports import EXPORTS, export_kind, export_votes
    from voting.store import open_store

    try:
        kind = export_kind(kind)
    except ValueError:
        fail(f"--as {kind!r}: use one of battles, votes, labels, pairs (or dpo)")
    fmt = "parquet" if out.suffix.lower() in (".parquet", ".pq") else "jsonl"
    if kind == "pairs" and not is_stdout(out) and out.suffix.lower() not in (".jsonl", ".parquet", ".pq"):
        fail(f"{out}: --as pairs writes .jsonl or .parquet; name the file with one of those suffixes")
    try:
        engine = open_store(db, create=False)
    except InputError as e:
        fail(InputError(db, None, "--db", e.problem, "check the --db URL: export-votes reads a store and never "
                        "creates one (`preflab demo-seed`, `preflab import` or `preflab app` create it)"))
    done = export_votes(engine, kind, dataset, fmt)
    where = write_output(out, done.data)
    show = err if is_stdout(out) else console
    what = (f"{done.rows} {EXPORTS[kind]} from {done.votes} votes" if kind == "pairs"
            else f"{done.votes} votes as {EXPORTS[kind]}")
    show.print(f"wrote {what} to {where}", highlight=False)
    if done.left_out_text():
        err.print(done.left_out_text(), highlight=False)


@app.command("invite")
def invite(
    voters: Annotated[list[str], typer.Argument(help="Voter names, one invite each (a new one replaces the old).")],
    db: DbOpt = DEFAULT_STORE_URL,
    base_url: Annotated[str, typer.Option(help="The app's address, for the links.")] = "http://127.0.0.1:8501",
) -> None:
    """Issue invite links: one per voter, printed once (the store keeps only a hash of each)."""
    from voting.access import invite_url, issue_invite
    from voting.store import open_store

    engine = open_store(db)
    for voter in voters:
        typer.echo(f"{voter}\t{invite_url(base_url, issue_invite(engine, voter))}")  # tab-separated, for scripts


@app.command("import")
def import_cmd(
    items: Annotated[Path, typer.Argument(help="Items (JSONL/JSON/CSV/Parquet): item_id, prompt, model, answer, "
                                               "optional category; or the pairs layout.")],
    dataset: Annotated[str, typer.Option(help="Dataset name in the store.")],
    db: DbOpt = DEFAULT_STORE_URL,
) -> None:
    """Add your own prompts and model answers as a dataset to vote on (no votes are added)."""
    from voting.items import load_items
    from voting.store import count_rows, import_items, open_store

    loaded = load_items(items)
    engine = open_store(db)
    n = import_items(engine, loaded, dataset)
    console.print(f"dataset {dataset!r}: {n} items ({len(loaded.answers)} answers from {len(loaded.models)} "
                  f"models) added; the store holds {count_rows(engine)} votes", highlight=False)
