"""What keeps a warm ``preflab rank`` fast (issue 16): no scipy.sparse import on a connected arena, a
bounded number of compiled programs (each costs a trace and a cache load on every run), and the
``PREFLAB_TIMINGS`` breakdown that benchmarks/bench_rank.py reads."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from arena.counts import reaches_all

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "data" / "demo" / "battles.jsonl"


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


def test_warm_rank_loads_no_scipy_sparse_compiles_few_programs_and_reports_its_parts(tmp_path: Path) -> None:
    code = ("import sys, jax.monitoring\n"
            "seen = []\n"
            "jax.monitoring.register_event_listener(lambda e, **k: seen.append(e))\n"
            "from preflab_cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print('compiled', seen.count('/jax/compilation_cache/compile_requests_use_cache'),\n"
            "      'scipy.sparse' in sys.modules, file=sys.stderr)\n")
    env = {"PREFLAB_CACHE": str(tmp_path), "PREFLAB_TIMINGS": "1", "PYTHONPATH": str(ROOT)}
    res = subprocess.run([sys.executable, "-c", code, "rank", str(DEMO), "--ci", "both", "--bootstrap", "20"],
                         capture_output=True, text=True, cwd=ROOT, timeout=600,
                         env={**__import__("os").environ, **env})
    assert res.returncode == 0, res.stderr
    # fit, Hessian, sandwich, bootstrap refits: a new jitted step on this path costs every warm run
    assert re.search(r"^compiled [1-4] False$", res.stderr, re.M), res.stderr
    line = next(x for x in res.stderr.splitlines() if x.startswith("timings: "))
    names = re.findall(r"(?:^timings: |; )([A-Za-z +]+) [0-9.]+ s \(cpu [0-9.]+\)", line)
    assert names == ["start", "read", "imports", "fit + CIs", "output", "total"], line
