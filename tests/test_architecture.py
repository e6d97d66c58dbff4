"""The dependency direction of docs/architecture.md, checked on every module's imports (lazy ones too)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = {"arena", "judge", "voting", "preflab", "preflab_cli"}
#: package -> our packages it must never import (preflab_cli, the command line, is the top: it may import all)
FORBIDDEN = {
    "arena": {"judge", "voting", "preflab_cli"},
    "judge": {"arena", "voting", "preflab_cli"},
    "voting": {"preflab_cli"},
    "preflab": {"arena", "judge", "voting", "preflab_cli"},  # the shared leaf
}


def imported_top_names(path: Path) -> set[str]:
    """Top-level names of the packages a module imports anywhere (module level or inside functions)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def imported_packages(path: Path) -> set[str]:
    """Top-level names of our packages that a module imports anywhere (module level or inside functions)."""
    return imported_top_names(path) & OURS


def modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_run_one_way(package: str) -> None:
    bad = {str(f.relative_to(ROOT)): sorted(imported_packages(f) & FORBIDDEN[package]) for f in modules(package)}
    assert {k: v for k, v in bad.items() if v} == {}


def test_tests_never_import_the_benchmarks() -> None:
    """The benchmarks use the tests' harnesses (servers, browser flags), never the reverse: no import circle
    between the two folders."""
    bad = [str(f.relative_to(ROOT)) for f in modules("tests") if "benchmarks" in imported_top_names(f)]
    assert bad == []


def test_the_checker_sees_lazy_imports(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("def g():\n    from judge.outcomes import X\n    import voting.store\n")
    assert imported_packages(f) == {"judge", "voting"}


def test_judge_metrics_and_runner_load_no_jax() -> None:
    code = "import judge.calibrate, judge.run, judge.pairs, sys; print('jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"


FIT_LEAVING_JAX_AS_IT_WAS = """
import importlib, json, sys
import jax, jax.numpy as jnp
setting = jax.config.jax_enable_x64
for name in sys.argv[1:]:
    importlib.import_module(name)
assert jax.config.jax_enable_x64 is setting, "importing arena changed jax_enable_x64"
from arena.data import load_battles
from arena.leaderboard import fit_leaderboard
lb = fit_leaderboard(load_battles("data/demo/battles.jsonl"), ci="both", n_bootstrap=20, style_control=True)
assert jax.config.jax_enable_x64 is setting, "a fit changed jax_enable_x64"
print(json.dumps({"user": str(jnp.ones(1).dtype), "table": lb.table.to_json(double_precision=15),
                  "style": lb.style.to_json(double_precision=15)}))
"""


def test_importing_arena_and_fitting_leave_the_jax_setting_as_it_was() -> None:
    """Importing every arena module and fitting leave ``jax_enable_x64`` as the host process set it (a
    user's own JAX code keeps float32 when it asked for it), and the fit computes in float64 either way:
    the same table, to the last digit, whether the user's JAX has 64-bit types on or off."""
    names = [f"arena.{f.stem}" for f in modules("arena") if f.stem != "__init__"]
    runs = {}
    for x64 in ("0", "1"):
        out = subprocess.run([sys.executable, "-c", FIT_LEAVING_JAX_AS_IT_WAS, *names], capture_output=True,
                             text=True, cwd=ROOT, timeout=600, env={**os.environ, "JAX_ENABLE_X64": x64})
        assert out.returncode == 0, out.stderr[-3000:]
        runs[x64] = json.loads(out.stdout.strip().splitlines()[-1])
    assert runs["0"]["user"] == "float32" and runs["1"]["user"] == "float64"
    assert runs["0"]["table"] == runs["1"]["table"] and runs["0"]["style"] == runs["1"]["style"]
