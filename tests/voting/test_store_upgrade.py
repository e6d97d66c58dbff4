"""A store written by the last released version opens with today's code: nothing lost, one schema version, every
page and export working.

The release's code is taken from git history (``git archive``), so the store is made by the code that shipped,
not by a re-creation of its schema: :mod:`tests.voting.release_store` fills it as the app would.
"""

from __future__ import annotations

import io
import json
import sqlite3
import subprocess
import sys
import tarfile
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa
from streamlit.testing.v1 import AppTest

from tests.voting.test_vote_page import APP, login
from voting.exports import export_votes
from voting.store import SCHEMA_VERSION, load_votes, metadata, open_store

ROOT = Path(__file__).resolve().parents[2]
#: The last released version: main before the store had one schema (its battles and archive tables were made on
#: first use, outside ``SCHEMA_VERSION`` 1).
RELEASE = "ac6637a"
PACKAGES = ("voting", "preflab", "arena", "judge", "judge_arena")


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def release_code(tmp_path_factory) -> Path:
    """The release's packages, unpacked from git history into a folder of their own."""
    try:
        found = _git("cat-file", "-e", f"{RELEASE}^{{commit}}").returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        found = False
    if not found:
        pytest.skip(f"commit {RELEASE} (the last release) is not in this checkout's git history: "
                    "run `git fetch --unshallow` to test the store upgrade")
    out = tmp_path_factory.mktemp("release")
    tar = _git("archive", "--format=tar", RELEASE, *PACKAGES)
    assert tar.returncode == 0, tar.stderr.decode()
    with tarfile.open(fileobj=io.BytesIO(tar.stdout)) as t:
        t.extractall(out, filter="data")
    return out


def build_release_store(release_code: Path, url: str, tmp_path: Path) -> str:
    """Fill the store at ``url`` with the release's code (see :mod:`tests.voting.release_store`)."""
    script = Path(__file__).with_name("release_store.py")
    run = subprocess.run([sys.executable, str(script), url], cwd=release_code, capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(release_code), "HOME": str(tmp_path)},
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().startswith(str(release_code)), run.stdout  # the release's code wrote it
    return url


@pytest.fixture()
def release_url(release_code: Path, tmp_path: Path) -> str:
    """A SQLite store written by the release's code."""
    return build_release_store(release_code, f"sqlite:///{tmp_path / 'release.db'}", tmp_path)


def snapshot(url: str) -> dict[str, list[dict]]:
    """Every row of every table, read with sqlite3 (no preflab code), in a stable order."""
    con = sqlite3.connect(url.split("///", 1)[1])
    con.row_factory = sqlite3.Row
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                            "AND name NOT LIKE 'sqlite_%'")]
        return {t: sorted((dict(r) for r in con.execute(f'SELECT * FROM "{t}"')), key=repr) for t in tables}
    finally:
        con.close()


def test_a_release_store_opens_with_nothing_lost_and_takes_new_votes(release_url):
    before = snapshot(release_url)
    assert {r["value"] for r in before["preflab_meta"] if r["key"] == "schema_version"} == {"1"}
    for table, n in (("votes", 12), ("undone_votes", 1), ("skips", 1), ("rounds", 16), ("invites", 2),
                     ("guests", 1), ("battles", 2), ("archived_votes", 4), ("archived_datasets", 1)):
        assert len(before[table]) == n, table  # the release's store holds every kind of row

    assert set(before) - {"sqlite_sequence"} <= set(metadata.tables)  # every table is in the one schema

    engine = open_store(release_url)
    after = snapshot(release_url)
    assert set(after) == set(metadata.tables) | set(before)
    for table, rows in before.items():
        if table == "preflab_meta":
            continue
        kept = [{c: r[c] for c in rows[0]} for r in after[table]] if rows else after[table]
        assert sorted(kept, key=repr) == rows, f"{table}: rows changed by the upgrade"
    meta = {r["key"]: r["value"] for r in after["preflab_meta"]}
    assert meta["schema_version"] == str(SCHEMA_VERSION) and meta["criteria:poems"] == "Prefer **short** poems."
    cells = pd.DataFrame(after["vote_counts"]).query("n > 0")
    assert cells["n"].sum() == len(after["votes"])  # the counts still match the votes

    open_store(release_url).dispose()
    assert snapshot(release_url) == after  # opening an up-to-date store changes nothing

    from voting.store import Vote, VoteChecks, issue_round, record_vote

    round_id, shown = issue_round(engine, "dan", "poems", "p0", "quokka-13b", "zephyrine-7b")
    record_vote(engine, Vote("dan", "poems", "p0", "quokka-13b", "zephyrine-7b", "A", shown),
                VoteChecks(round_id=round_id))
    assert len(load_votes(engine, "poems")) == 12


def test_every_export_of_a_release_store(release_url):
    from arena.io.battles import load_battles

    engine = open_store(release_url)
    battles = export_votes(engine, "battles")
    assert battles.votes == 12
    path = Path(release_url.split("///", 1)[1]).with_name("b.json")
    path.write_bytes(battles.data)
    df = load_battles(path).df
    assert len(df) == 12 and df["conversation_a"].notna().sum() == 1  # the live battle keeps its conversation
    assert len(pd.read_csv(io.BytesIO(export_votes(engine, "votes").data))) == 12
    labels = pd.read_csv(io.BytesIO(export_votes(engine, "labels").data))
    assert labels["n_votes"].sum() == 12
    pairs = export_votes(engine, "pairs")
    rows = [json.loads(line) for line in pairs.data.decode().splitlines()]
    assert pairs.left_out == {"tie": 3, "bothbad": 3, "missing": 0} and len(rows) == 6  # 5 item votes + 1 battle
    fight = next(r for r in rows if r["dataset"] == "battle")
    assert fight["prompt"] == [{"role": "user", "content": "Write a haiku."}]
    assert (fight["chosen"], fight["chosen_model"]) == ([{"role": "assistant", "content": "Snow melts."}],
                                                         "quokka-13b")
    assert pd.read_parquet(io.BytesIO(export_votes(engine, "pairs", fmt="parquet").data)).shape == (6, 10)


def _admin_page(monkeypatch, url: str, page: str) -> AppTest:
    monkeypatch.setenv("PREFLAB_DB", url)
    monkeypatch.setenv("PREFLAB_ADMIN_PASSCODE", "boss")
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.switch_page(f"voting/pages/{page}.py").run()
    at.text_input[0].input("boss")
    at.button[0].click().run()
    assert not at.exception, (page, at.exception)
    return at


@pytest.mark.parametrize("page", ["leaderboard", "calibration", "data"])
def test_every_admin_page_reads_a_release_store(monkeypatch, release_url, page):
    at = _admin_page(monkeypatch, release_url, page)
    assert not at.error, [e.value for e in at.error]
    if page == "leaderboard":
        assert len(at.dataframe[0].value) == 3
    if page == "data":
        assert "Votes on" in " ".join(s.value for s in at.subheader)


def test_the_vote_page_on_a_release_store(monkeypatch, release_url):
    monkeypatch.setenv("PREFLAB_DB", release_url)
    monkeypatch.setenv("PREFLAB_ACCESS", "invite")
    at = login(AppTest.from_file(APP, default_timeout=120).run(), "eve")
    assert not at.exception and not at.error
    assert "Prefer **short** poems." in [m.value for m in at.markdown]  # the release's criteria, first
    at.button(key="criteria_ok").click().run()
    assert any(b.key and b.key.startswith("vote_A-") for b in at.button)  # a pair to vote on
    engine = open_store(release_url)
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT COUNT(*) FROM rounds WHERE voter = 'eve'")).scalar_one() == 1


def test_the_upgrade_is_one_transaction_and_a_newer_store_is_refused(monkeypatch, release_url):
    from voting import migrations

    before = snapshot(release_url)

    def broken(conn, found) -> None:  # noqa: ANN001
        raise RuntimeError("a step failed")

    monkeypatch.setattr(migrations, "STEPS", (*migrations.STEPS, migrations.Step("broken", broken)))
    with pytest.raises(RuntimeError, match="a step failed"):
        open_store(release_url)
    assert snapshot(release_url) == before  # the steps before it were rolled back too
    monkeypatch.undo()

    engine = open_store(release_url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE preflab_meta SET value = :v WHERE key = 'schema_version'"),
                     {"v": str(SCHEMA_VERSION + 1)})
    with pytest.raises(migrations.NewerStore, match=f"schema version {SCHEMA_VERSION + 1}, newer than"):
        open_store(release_url)


@pytest.mark.postgres
def test_a_release_store_on_postgresql_upgrades_with_every_row_kept(release_code, pg_clean_url, tmp_path):
    build_release_store(release_code, pg_clean_url, tmp_path)

    def counts() -> dict[str, int]:
        engine = sa.create_engine(pg_clean_url)
        with engine.connect() as conn:
            names = sa.inspect(conn).get_table_names()
            out = {t: conn.execute(sa.text(f'SELECT COUNT(*) FROM "{t}"')).scalar_one() for t in names}
        engine.dispose()
        return out

    before = counts()
    assert before["battles"] == 2 and before["archived_votes"] == 4
    engine = open_store(pg_clean_url)
    after = counts()
    assert {t: after[t] for t in before} == before and set(after) == set(metadata.tables)
    with engine.connect() as conn:
        version = conn.execute(sa.text("SELECT value FROM preflab_meta WHERE key = 'schema_version'")).scalar_one()
    assert version == str(SCHEMA_VERSION)
    assert export_votes(engine, "pairs").left_out == {"tie": 3, "bothbad": 3, "missing": 0}
    engine.dispose()


def test_the_battle_page_on_a_release_store(monkeypatch, tmp_path, release_url):
    from voting.battles import battles_t

    roster = "".join(f'[[model]]\nname = "{n}"\nspec = "local:http://127.0.0.1:9/v1#{n}"\n\n'
                     for n in ("zephyrine-7b", "quokka-13b"))
    (tmp_path / "roster.toml").write_text(roster)
    monkeypatch.setenv("PREFLAB_DB", release_url)
    monkeypatch.setenv("PREFLAB_ARENA", str(tmp_path / "roster.toml"))
    monkeypatch.setenv("PREFLAB_ACCESS", "invite")
    monkeypatch.setenv("PREFLAB_ARENA_PER_MINUTE", "0")  # refused before any call: no server needed
    page = str(ROOT / "voting" / "pages" / "battle.py")
    at = login(AppTest.from_file(page, default_timeout=120).run(), "ann")
    at.text_area(key="battle_text").input("A prompt longer than ten characters")
    at.button(key="FormSubmitter:battle_prompt-Send").click().run()
    assert not at.exception
    assert "You can send 0 prompts a minute" in "\n".join(w.value for w in at.warning)
    with open_store(release_url).connect() as conn:  # the release's battles are read
        assert conn.execute(sa.select(sa.func.count()).where(battles_t.c.voter == "bob")).scalar_one() == 1
