"""Progress on a terminal only: ``preflab simulate`` and the read of ``preflab rank`` show a spinner on stderr
when it is a terminal (a pseudo-terminal from :mod:`pty` here) and write nothing of it to a pipe."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "data" / "demo" / "battles.jsonl"
CLI = [sys.executable, "-c", "from preflab_cli import main; main()"]
SIM = ["simulate", "-n", "2000", "-k", "4", "--seed", "1"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_TERMINAL", "TTY_COMPATIBLE", "TTY_INTERACTIVE",
                                                             "NO_COLOR", "COLUMNS", "PREFLAB_TIMINGS")}
    return {**env, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color"}


def _stderr_on_a_terminal(args: list[str]) -> str:
    """Everything ``preflab ARGS`` writes to stderr when stderr is a pseudo-terminal (stdout a pipe)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL,
                            cwd=ROOT, env=_env())
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the terminal closed: the command has exited
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    proc.stdout.read()
    assert proc.wait(timeout=300) == 0
    return b"".join(chunks).decode(errors="replace")


def _stderr_in_a_pipe(args: list[str]) -> str:
    res = subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=ROOT, env=_env(), timeout=300)
    assert res.returncode == 0, res.stderr
    return res.stderr


@pytest.mark.parametrize(("args", "text"), [
    (["rank", str(DEMO), "--bootstrap", "20"], "reading battles.jsonl"),
    ([*SIM, "-o", "{tmp}/sim.jsonl"], "simulating 2,000 battles"),
])
def test_progress_on_a_terminal_only(tmp_path, args, text):
    args = [a.format(tmp=tmp_path) for a in args]
    assert text in _stderr_on_a_terminal(args)
    piped = _stderr_in_a_pipe(args)
    assert text not in piped
    assert "\x1b[" not in piped  # no cursor movement or colour in a log
