"""`pip install .` (not editable) works from any folder: the wheel carries the app, its pages and the demo.

The wheel is built from the checkout and installed with ``--no-deps`` into a fresh venv whose dependencies
come from the test venv's site-packages (a plain path entry, so its editable-install hook never runs):
what is tested is the wheel's own content, run from a folder outside the checkout.
"""

from __future__ import annotations

import os
import shutil
import signal
import site
import subprocess
import sys
import time
import urllib.request
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"  # build from a copy: setuptools writes build/ and *.egg-info beside the sources
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "__pycache__",
                                                             "*.db", ".pytest_cache"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp / "dist"), str(src)],
                   check=True, cwd=tmp)
    wheel = next((tmp / "dist").glob("preflab-*.whl"))
    env_dir = tmp / "venv"
    venv.create(env_dir, with_pip=False)
    py = env_dir / "bin" / "python"
    own = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    (Path(own) / "test-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", str(wheel)],
                   check=True, cwd=tmp)
    return env_dir


def run(env_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(env_dir / "bin" / "preflab"), *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=600)


def test_wheel_is_imported_from_the_install_not_the_checkout(installed, tmp_path) -> None:
    code = "import arena, judge, judge_arena.assist, voting, preflab_cli, preflab.demo; print(judge_arena.__file__)"
    out = subprocess.run([str(installed / "bin" / "python"), "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, check=True).stdout
    assert str(installed) in out and str(ROOT) not in out


def test_the_wheel_ships_no_test_servers(installed, tmp_path) -> None:
    """The loopback fault server fakes paid APIs for the tests and benchmarks: it lives under tests/."""
    code = "import importlib.util as u, judge; print(u.find_spec('judge.fault_server'), judge.__file__)"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    out = subprocess.run([str(installed / "bin" / "python"), "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, env=env, check=True).stdout.split()
    assert out[0] == "None" and str(installed) in out[1]


def test_demo_seed_and_rank_from_another_folder(installed, tmp_path) -> None:
    seeded = run(installed, "demo-seed", "--db", f"sqlite:///{tmp_path / 'demo.db'}", cwd=tmp_path)
    assert seeded.returncode == 0, seeded.stderr
    assert "40 items and 1500 votes added" in seeded.stdout
    exported = run(installed, "export-votes", "b.json", "--db", f"sqlite:///{tmp_path / 'demo.db'}", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    ranked = run(installed, "rank", "b.json", "--bootstrap", "20", cwd=tmp_path)
    assert ranked.returncode == 0, ranked.stderr
    assert "atlas-terse" in ranked.stdout


def test_app_serves_and_its_pages_run_from_the_wheel(installed, tmp_path) -> None:
    db = f"sqlite:///{tmp_path / 'app.db'}"
    assert run(installed, "demo-seed", "--db", db, cwd=tmp_path).returncode == 0
    page = ("import os, voting.app; from streamlit.testing.v1 import AppTest\n"
            "at = AppTest.from_file(voting.app.__file__, default_timeout=120); at.run()\n"
            "assert not at.exception, at.exception\n"
            "print('buttons', len(at.button))\n")
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PREFLAB_DB": db}
    out = subprocess.run([str(installed / "bin" / "python"), "-c", page], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    with socket_port() as port:
        pass
    proc = subprocess.Popen([str(installed / "bin" / "preflab"), "app", "--db", db, "--port", str(port)],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    try:
        deadline = time.monotonic() + 120
        ok = False
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                    ok = r.read().strip() == b"ok"
                    break
            except OSError:
                time.sleep(0.3)
        assert ok, "the installed app never answered /_stcore/health"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.communicate(timeout=20)


class socket_port:
    """A free loopback port (bound, read, released)."""

    def __enter__(self) -> int:
        import socket

        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        return self.s.getsockname()[1]

    def __exit__(self, *exc: object) -> None:
        self.s.close()
