"""Fixtures for the app tests: small voting datasets, seeded SQLite stores, a real PostgreSQL server."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest

from tests.harness import pg_server
from voting.items import load_items
from voting.store import import_items, open_store

# Distinctive names, so "no model name in the page" checks cannot pass by accident.
MODELS = ("zephyrine-7b", "quokka-13b", "marmoset-70b")
EVIL = "Hello <script>window.__pwned = 1</script> and <img src=x onerror=\"window.__pwned = 2\"> end"


def tiny_items(n_items: int = 4, models: tuple[str, ...] = MODELS) -> pd.DataFrame:
    """``n_items`` prompts answered by every model; every answer to item 0 carries an HTML attack and a
    fenced code block holding HTML (so whichever pair is drawn shows both)."""
    rows = []
    for i in range(n_items):
        for m, model in enumerate(models):
            answer = f"Answer {i} from side {m}: **bold** text."
            if i == 0:
                answer = f"{EVIL} (side {m})\n\nCode:\n\n```python\nprint('<b>not bold</b>')\n```\n"
            rows.append({"item_id": f"q{i:03d}", "prompt": f"Prompt number {i}?", "category": "test",
                         "model": model, "answer": answer})
    return pd.DataFrame(rows)


@pytest.fixture(autouse=True)
def _no_minimum_time_on_pair(monkeypatch):
    """AppTest clicks come microseconds after a pair is drawn: no minimum time unless a test sets one."""
    monkeypatch.setenv("PREFLAB_MIN_SECONDS", "0")


def round_button(at, name: str):  # noqa: ANN001, ANN201
    """The vote page's button ``name`` (``vote_A`` ... ``skip``) of the round on screen: its key carries the
    round's id (``vote_A-<round id>``); other buttons by their plain key."""
    found = [b for b in at.button if b.key == name or (b.key or "").startswith(name + "-")]
    assert len(found) == 1, f"{len(found)} buttons {name!r}: {[b.key for b in at.button]}"
    return found[0]


@pytest.fixture()
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'votes.db'}"


@pytest.fixture()
def seeded_url(sqlite_url: str) -> str:
    """A SQLite store holding the tiny dataset as ``tiny`` (4 items x 3 models)."""
    engine = open_store(sqlite_url)
    import_items(engine, load_items(tiny_items()), "tiny")
    engine.dispose()
    return sqlite_url


@pytest.fixture(scope="session")
def postgres_url():
    """A throw-away PostgreSQL 15 server (see :mod:`tests.harness.pg_server`); skips when the binaries are absent."""
    if not pg_server.available():
        pytest.skip(f"PostgreSQL binaries not found in {pg_server.PG_BIN} (install Debian's postgresql package)")
    pytest.importorskip("psycopg")
    with pg_server.temporary_postgres() as url:
        yield url


@pytest.fixture()
def pg_clean_url(postgres_url: str) -> str:
    """The PostgreSQL server with preflab's tables dropped (each test starts from an empty schema)."""
    import sqlalchemy as sa

    from voting.store import metadata

    engine = sa.create_engine(postgres_url)
    metadata.drop_all(engine)
    engine.dispose()
    return postgres_url


def wait_for(predicate, timeout: float = 60.0, every: float = 0.1):  # noqa: ANN001, ANN201
    """Poll ``predicate`` until it returns a truthy value (returned) or fail after ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout} s waiting for {predicate}")


@pytest.fixture()
def downloads(monkeypatch):
    """``bytes_of(at, key)``: the bytes an AppTest page offers in its download button ``key`` (Streamlit keeps
    them in its media storage, recorded here as the page hands them over)."""
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    files: dict[str, bytes] = {}
    keep = MemoryMediaFileStorage.load_and_get_id

    def load_and_get_id(self, data, mimetype, kind, filename=None):  # noqa: ANN001, ANN202
        file_id = keep(self, data, mimetype, kind, filename)
        files[file_id] = data
        return file_id

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", load_and_get_id)

    def bytes_of(at, key: str) -> bytes:  # noqa: ANN001
        found = [b for b in at.get("download_button") if b.key == key]
        assert len(found) == 1, f"{len(found)} download buttons {key!r}: {[b.key for b in at.get('download_button')]}"
        return files[found[0].proto.url.rsplit("/", 1)[1].split(".")[0]]

    return bytes_of


def settle(at):  # noqa: ANN001, ANN201  (an AppTest)
    """Run the page again once its battle's answers finished: the browser redraws them every REDRAW_S (a
    fragment's run_every, which AppTest does not run), so a test waits on the run's state, then reruns."""
    from voting.battle_runs import live_run

    try:
        current = at.session_state["battle"]
    except KeyError:
        return at
    wait_for(lambda: live_run(current["id"]) is None, timeout=600)
    return at.run()
