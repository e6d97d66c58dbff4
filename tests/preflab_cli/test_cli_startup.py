"""What keeps a warm ``preflab rank`` fast: stored programs (nothing of ours traced on a warm
run), no scipy.sparse import on a connected arena, and the ``PREFLAB_TIMINGS`` breakdown that
benchmarks/bench_rank.py reads."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from arena.io.counts import reaches_all

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "data" / "demo" / "battles.jsonl"


def python_prints(code: str, **env: str) -> str:
    """What a fresh interpreter prints running ``code`` with this checkout on its path (and ``env``); it must
    exit 0."""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT), **env})
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


def scipy_strongly_connected(k: int, src: np.ndarray, dst: np.ndarray) -> bool:
    graph = coo_matrix((np.ones(src.size), (src, dst)), shape=(k, k))
    return connected_components(graph, directed=True, connection="strong")[0] == 1


@pytest.mark.parametrize("seed", range(40))
def test_reaches_all_both_ways_is_strong_connectivity(seed: int) -> None:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 30))
    n_edges = int(rng.integers(0, 3 * k))
    src, dst = rng.integers(0, k, n_edges), rng.integers(0, k, n_edges)
    ours = reaches_all(k, src, dst, max_steps=k + 1) and reaches_all(k, dst, src, max_steps=k + 1)
    assert ours == scipy_strongly_connected(k, src, dst)


def test_reaches_all_gives_up_on_a_long_chain() -> None:
    k = 100
    src, dst = np.arange(k - 1), np.arange(1, k)
    assert reaches_all(k, src, dst, max_steps=10) is None  # the caller then asks scipy
    assert reaches_all(k, src, dst, max_steps=k) is True
    assert reaches_all(k, dst, src, max_steps=k) is False


RUN = """import sys, jax.monitoring
compiled, traced = [], set()
jax.monitoring.register_event_listener(lambda e, **k: compiled.append(e))
jax.monitoring.register_event_duration_secs_listener(
    lambda e, s, **k: traced.add(k.get("fun_name")) if e.endswith("jaxpr_trace_duration") else None)
from preflab_cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("compiled", compiled.count("/jax/compilation_cache/compile_requests_use_cache"), file=sys.stderr)
print("traced", sorted(traced - {"solve", "call_exported"}), file=sys.stderr)
print("scipy.sparse", "scipy.sparse" in sys.modules, file=sys.stderr)
print("scipy.linalg", "scipy.linalg" in sys.modules, file=sys.stderr)
"""


def test_a_warm_rank_traces_none_of_our_code_and_loads_no_scipy_sparse(tmp_path: Path) -> None:
    """The second run loads the stored programs: nothing of ours is traced, at most four programs are
    fetched from the compilation cache, the table is the same, and the timings line names each part.
    Neither run imports scipy.sparse, nor scipy.linalg (LAPACK's kernels come without it)."""
    env = {**os.environ, "PREFLAB_CACHE": str(tmp_path), "PREFLAB_TIMINGS": "1", "PYTHONPATH": str(ROOT)}
    runs = [subprocess.run([sys.executable, "-c", RUN, "rank", str(DEMO), "--ci", "both", "--bootstrap", "20"],
                           capture_output=True, text=True, cwd=ROOT, timeout=600, env=env) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr
    cold, warm = runs
    # (the Hessian in fit; the demo's items repeat, so the sandwich is the item-clustered one)
    assert "traced ['_hessian_and_item_outer', 'fit', 'refit_signed_chunk']" in cold.stderr
    assert "traced []" in warm.stderr, warm.stderr
    assert re.search(r"^compiled [1-4]$", warm.stderr, re.M), warm.stderr
    assert "scipy.sparse False" in warm.stderr
    assert "scipy.linalg False" in cold.stderr and "scipy.linalg False" in warm.stderr
    assert warm.stdout == cold.stdout
    line = next(x for x in warm.stderr.splitlines() if x.startswith("timings: "))
    names = re.findall(r"(?:^timings: |; )([A-Za-z +]+) [0-9.]+ s \(cpu [0-9.]+\)", line)
    assert names == ["start", "read", "imports", "fit + CIs", "output", "total"], line


def test_stored_programs_are_off_in_the_library_and_after_a_command() -> None:
    import arena.jax_setup
    from preflab_cli import main

    assert arena.jax_setup.STORE_PROGRAMS is False
    with pytest.raises(SystemExit):
        main(["rank", str(DEMO), "--ci", "sandwich", "--output", "/nonexistent/dir/x.csv"])
    assert arena.jax_setup.STORE_PROGRAMS is False


def test_the_console_script_writes_everything(tmp_path: Path) -> None:
    """After ``rank`` through the console script: the table on stdout, the file and the stderr lines must all
    be there, and the exit status 0. The path is longer than 80 columns: stderr's lines are not cut there (a
    ``wrote`` line was split mid-path under pytest-xdist)."""
    out = tmp_path / ("a-folder-with-a-long-name-" * 3) / "board.csv"
    out.parent.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PREFLAB_TIMINGS": "1"}
    res = subprocess.run([sys.executable, "-c", "from preflab_cli import main; main()", "rank", str(DEMO),
                          "--bootstrap", "20", "--output", str(out)], capture_output=True, text=True, cwd=ROOT,
                         timeout=600, env=env)
    assert res.returncode == 0, res.stderr
    assert "Leaderboard" in res.stdout and "┘" in res.stdout
    assert res.stdout.rstrip().endswith("on one item")  # the table's last line: its sampling unit
    assert f"wrote {out}" in res.stderr and res.stderr.rstrip().splitlines()[-1].startswith("timings: ")
    assert len(out.read_text().splitlines()) == 6  # header + 5 models


def test_the_console_script_exits_through_the_interpreter(tmp_path: Path) -> None:
    """A warm ``rank`` ends like any Python program: exit handlers run (a user's, JAX's, the logging
    module's), not skipped by an ``os._exit`` after the output is flushed."""
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('exit handlers ran', file=sys.stderr))\n"
            "from preflab_cli import main\n"
            "main()\n")
    res = subprocess.run([sys.executable, "-c", code, "rank", str(DEMO), "--bootstrap", "20"], capture_output=True,
                         text=True, cwd=ROOT, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT),
                                                                "PREFLAB_CACHE": str(tmp_path)})
    assert res.returncode == 0, res.stderr
    assert "Leaderboard" in res.stdout
    assert res.stderr.splitlines()[-1:] == ["exit handlers ran"], res.stderr


def test_importing_the_cli_leaves_typer_as_it_is() -> None:
    """Option values are coerced by typer's own machinery: importing the CLI replaces nothing in typer."""
    code = ("import typer.core as core, typer.main as main\n"
            "before = {m: dict(vars(m)) for m in (core, main)}\n"
            "import preflab_cli\n"
            "print(sorted(f'{m.__name__}.{k}' for m in before for k, v in vars(m).items()\n"
            "             if k in before[m] and before[m][k] is not v))\n")
    out = python_prints(code)
    assert out == "[]", out


def test_numpy_and_pandas_load_before_the_jax_import_thread_starts() -> None:
    """Two threads initialising numpy's C extension at once failed about one warm rank in four
    ("partially initialized module numpy._core._multiarray_umath"): the thread may start only once numpy
    and pandas are loaded."""
    code = ("import sys, threading\n"
            "seen = []\n"
            "start = threading.Thread.start\n"
            "def record(self):\n"
            "    seen.append(('numpy' in sys.modules, 'pandas' in sys.modules))\n"
            "    start(self)\n"
            "threading.Thread.start = record\n"
            "from preflab_cli.common import import_jax_in_background\n"
            "import_jax_in_background().join()\n"
            "print(seen[0])\n")  # (JAX may start threads of its own later)
    out = python_prints(code)
    assert out == "(True, True)", out


def test_lapack_kernels_without_scipy_linalg_leave_it_importable_as_usual() -> None:
    """JAX's LAPACK calls work after LAPACK is set up from scipy's two kernel modules alone, and a later
    ``import scipy.linalg`` loads the package and those modules as usual."""
    code = ("import sys, numpy as np\n"
            "from arena.jax_setup import load_lowering_libraries\n"
            "load_lowering_libraries()\n"
            "assert not any(m.startswith('scipy.linalg') for m in sys.modules), 'scipy.linalg imported'\n"
            "import jax.numpy as jnp\n"
            "a, b = np.array([[4.0, 1.0], [1.0, 3.0]]), np.array([1.0, 2.0])\n"
            "assert np.allclose(np.asarray(jnp.linalg.solve(a, b)), np.linalg.solve(a, b), rtol=1e-14)\n"
            "import scipy.linalg\n"
            "from scipy.linalg import cython_lapack\n"
            "assert scipy.linalg.cython_blas.__pyx_capi__ and cython_lapack.__pyx_capi__\n"
            "assert np.allclose(scipy.linalg.solve(a, b), np.linalg.solve(a, b))\n"
            "print('ok')\n")
    out = python_prints(code, JAX_ENABLE_X64="1")  # (its own solve)
    assert out == "ok", out


def test_openblas_workers_sleep_at_once_on_a_rank() -> None:
    """Idle OpenBLAS workers spin 2^28 cycles by default (~0.2 s of CPU after H^-1 on two cores): the rank
    command's start-up asks for 2^4 before numpy loads, unless the user chose a value."""
    code = ("import os, sys\n"
            "import preflab_cli\n"
            "from preflab_cli.common import import_jax_in_background\n"
            "assert 'numpy' not in sys.modules  # (it reads the variable when it loads)\n"
            "import_jax_in_background().join()\n"
            "print(os.environ.get('OPENBLAS_THREAD_TIMEOUT'))\n")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    for preset, expected in ((None, "4"), ("20", "20")):
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                             env={**env, "PYTHONPATH": str(ROOT), **({"OPENBLAS_THREAD_TIMEOUT": preset} if preset
                                                                    else {})})
        assert res.returncode == 0, res.stderr
        assert res.stdout.strip() == expected


def test_jax_import_reads_the_metadata_of_plugin_candidates_only() -> None:
    """JAX's import looks for ROCm plugins by parsing every installed distribution's metadata (~0.12 s):
    in the rank command's import thread it reads none but ``jax_rocm*`` candidates', and afterwards
    ``importlib.metadata`` is as it was."""
    code = ("import importlib.metadata as md, sys\n"
            "reads = []\n"
            "original = md.PathDistribution.read_text\n"
            "def read_text(self, name):\n"
            "    if name in ('METADATA', 'PKG-INFO') and threading.current_thread().name.startswith('preflab'):\n"
            "        reads.append(self._normalized_name)\n"
            "    return original(self, name)\n"
            "import threading\n"
            "md.PathDistribution.read_text = read_text\n"
            "from preflab_cli.common import import_jax_in_background\n"
            "import_jax_in_background().join()\n"
            "assert 'jax' in sys.modules and md.distributions.__module__ == 'importlib.metadata'\n"
            "print(reads, len(list(md.distributions())) > 10)\n")
    out = python_prints(code)
    assert out == "[] True", out


def test_the_plugin_scan_filter_serves_other_callers_everything() -> None:
    import importlib.metadata as md

    from preflab_cli.common import jax_plugin_scan_by_folder_name

    every = sorted(d._normalized_name for d in md.distributions())
    with jax_plugin_scan_by_folder_name():
        ours = sorted(d._normalized_name for d in md.distributions())
        jax_module = {"__name__": "jax._src.numpy.array_constructors", "md": md}
        exec("found = [d._normalized_name for d in md.distributions()]", jax_module)  # noqa: S102
    assert ours == every and "jax" in every
    assert all(name.startswith("jax_rocm") for name in jax_module["found"])
    assert md.distributions.__module__ == "importlib.metadata"


def test_rank_starts_its_jax_import_thread_before_jax_is_loaded() -> None:
    """JAX (~0.5 s) is imported in a thread while the file is read: nothing ``rank`` imports before that thread
    starts may load it (``rank_output`` once did, through ``arena.leaderboard_table``, so the import ran
    first on the main thread, and a warm rank took longer). The process stops as the thread starts."""
    code = ("import os, sys, threading\n"
            "def stop(self):\n"
            "    print(self.name, sorted(m for m in ('jax', 'jaxlib', 'arena.leaderboard', 'arena.io.json_array')\n"
            "                             if m in sys.modules), flush=True)\n"
            "    os._exit(0)\n"
            "threading.Thread.start = stop\n"
            "from preflab_cli import main\n"
            f"main(['rank', {str(DEMO)!r}, '--ci', 'both', '--top', '3'])\n")
    out = python_prints(code)
    assert out == "preflab-import-jax []", out


def test_help_loads_no_library_of_the_commands() -> None:
    """``preflab --help`` lists every command from their modules' signatures alone: it loads no numerics, no
    data frames, no store, no HTTP client and none of the judge (whose names load on first use)."""
    code = ("import sys\n"
            "from preflab_cli import main\n"
            "try:\n"
            "    main(['--help'])\n"
            "except SystemExit:\n"
            "    pass\n"
            "heavy = ('jax', 'numpy', 'pandas', 'pyarrow', 'scipy', 'sqlalchemy', 'streamlit', 'httpx', 'ssl',\n"
            "         'matplotlib', 'judge', 'arena.io', 'llm', 'answering')\n"
            "print(sorted(m for m in heavy if m in sys.modules), file=sys.stderr)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode == 0, res.stderr
    assert "Usage: preflab" in res.stdout and "judge" in res.stdout
    assert res.stderr.strip() == "[]", res.stderr


def test_command_signatures_hold_objects_not_strings() -> None:
    """Typer reads each command's signature twice per run, compiling and evaluating every string annotation
    each time (postponed annotations: ~25 ms of every ``preflab`` start for ~300 options); evaluated once when
    the module loads, they cost that once. Every command's annotations are objects."""
    import typer

    from preflab_cli import app

    def callbacks(typer_app: typer.Typer) -> Iterator[Callable]:
        yield from (c.callback for c in typer_app.registered_commands)
        for group in typer_app.registered_groups:
            yield from callbacks(group.typer_instance)

    found = list(callbacks(app))
    postponed = sorted(f"{f.__module__}.{f.__name__}" for f in found
                       if any(isinstance(a, str) for a in f.__annotations__.values()))
    assert len(found) == 21 and postponed == []  # (15 commands and `judge`'s 6)
