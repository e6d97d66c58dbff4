"""``preflab demo-seed`` on the bundled demo data and ``preflab app`` serving it (what ``make demo`` runs)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from preflab_cli import app
from tests.app.conftest import wait_for
from tests.app.pg_server import free_port
from voting.store import count_rows, load_votes, open_store

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "data" / "demo"


@pytest.fixture()
def demo_files() -> tuple[Path, Path]:
    items, battles = DEMO / "items.jsonl", DEMO / "battles.jsonl"
    if not (items.exists() and battles.exists()):
        pytest.skip("bundled demo data (data/demo/items.jsonl, battles.jsonl) not written yet")
    return items, battles


def test_demo_seed_imports_once(tmp_path, demo_files):
    items, battles = demo_files
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    n_items = len({line.split('"item_id":')[1].split(",")[0] for line in items.read_text().splitlines()})
    n_battles = sum(1 for line in battles.read_text().splitlines() if line.strip())
    args = ["demo-seed", "--db", url, "--items", str(items), "--battles", str(battles)]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert f"{n_items} items and {n_battles} votes added" in " ".join(first.output.split())
    second = CliRunner().invoke(app, args)
    assert "0 items and 0 votes added" in " ".join(second.output.split())
    engine = open_store(url)
    assert count_rows(engine, "items") == n_items and count_rows(engine) == n_battles
    assert load_votes(engine)["conv_metadata"].notna().all()  # style totals kept for style control


def test_demo_seed_reports_bad_items(tmp_path):
    bad = tmp_path / "items.jsonl"
    bad.write_text('{"item_id": "a", "prompt": "p", "model": "m", "answer": "x"}\n')
    out = CliRunner().invoke(app, ["demo-seed", "--db", f"sqlite:///{tmp_path / 'x.db'}", "--items", str(bad),
                                   "--battles", str(tmp_path / "none.jsonl")])
    assert out.exit_code == 2 and "has only one answer" in " ".join(out.output.split())


def _serve(cwd: Path, url: str, port: int, **popen: object) -> tuple[subprocess.Popen, str]:
    """``preflab app`` on ``url`` in its own process group, and its base URL."""
    proc = subprocess.Popen([str(Path(sys.executable).with_name("preflab")), "app", "--db", url, "--port", str(port)],
                            cwd=cwd, start_new_session=True, env={**os.environ}, **popen)
    return proc, f"http://127.0.0.1:{port}"


def _wait_healthy(proc: subprocess.Popen, base: str) -> None:
    def health() -> bool:
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as r:
                return r.read().strip() == b"ok"
        except OSError:
            return proc.poll() is not None

    wait_for(health, timeout=90, every=0.3)


@pytest.mark.slow
def test_preflab_app_serves_the_voting_page(tmp_path):
    port = free_port()
    url = f"sqlite:///{tmp_path / 'app.db'}"
    proc, base = _serve(tmp_path, url, port, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _wait_healthy(proc, base)
        assert proc.poll() is None
        with urllib.request.urlopen(base, timeout=5) as r:
            assert r.status == 200 and b"<div id=\"root\">" in r.read()
        assert (tmp_path / "app.db").exists()  # the schema was created before serving
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        out = proc.communicate(timeout=20)[0]
    assert f"preflab app on http://127.0.0.1:{port}" in out


def test_export_votes_feeds_the_arena(seeded_url, tmp_path):
    from arena.io.battles import load_battles
    from tests.app.conftest import MODELS
    from voting.store import Vote, record_vote

    engine = open_store(seeded_url)
    record_vote(engine, Vote("ann", "tiny", "q001", MODELS[0], MODELS[1], "B"))
    record_vote(engine, Vote("bob", "tiny", "q001", MODELS[1], MODELS[2], "tie"))
    out = CliRunner().invoke(app, ["export-votes", str(tmp_path / "b.json"), "--db", seeded_url])
    assert out.exit_code == 0 and "wrote 2 votes" in out.output
    battles = load_battles(tmp_path / "b.json")
    assert battles.df[["model_a", "model_b", "winner", "judge"]].astype(str).values.tolist() == [
        [MODELS[0], MODELS[1], "model_b", "ann"], [MODELS[1], MODELS[2], "tie", "bob"]]
    bad = CliRunner().invoke(app, ["export-votes", str(tmp_path / "x"), "--db", seeded_url, "--as", "xml"])
    assert bad.exit_code == 2 and "use one of battles, votes, labels" in bad.output


@pytest.mark.slow
def test_idle_app_server_is_quiet(tmp_path):
    """``preflab app`` with no voter: under 2% of a core over 20 s (the file watcher is off)."""
    psutil = pytest.importorskip("psutil")
    port, url = free_port(), f"sqlite:///{tmp_path / 'app.db'}"
    (tmp_path / "many").mkdir()
    for k in range(2000):  # files a watcher would walk
        (tmp_path / "many" / f"f{k}.py").write_text("x = 1\n")
    proc, base = _serve(tmp_path, url, port, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_healthy(proc, base)
        assert proc.poll() is None
        server = psutil.Process(proc.pid)  # execve: the preflab process became the server
        assert "--runner.postScriptGC" in server.cmdline() and "none" in server.cmdline()
        urllib.request.urlopen(base, timeout=5).read()
        import time

        time.sleep(3)  # start-up work done
        before, t0 = server.cpu_times(), time.monotonic()
        time.sleep(20)
        after, t1 = server.cpu_times(), time.monotonic()
        share = (after.user + after.system - before.user - before.system) / (t1 - t0)
        assert share <= 0.02, f"idle server used {share:.1%} of a core"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
