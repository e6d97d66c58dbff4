"""The dependency direction of docs/architecture.md, checked on every module's imports (lazy ones too)."""

from __future__ import annotations

import ast
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


def imported_packages(path: Path) -> set[str]:
    """Top-level names of our packages that a module imports anywhere (module level or inside functions)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found & OURS


def modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_run_one_way(package: str) -> None:
    bad = {str(f.relative_to(ROOT)): sorted(imported_packages(f) & FORBIDDEN[package]) for f in modules(package)}
    assert {k: v for k, v in bad.items() if v} == {}


def test_the_checker_sees_lazy_imports(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("def g():\n    from judge.outcomes import X\n    import voting.store\n")
    assert imported_packages(f) == {"judge", "voting"}


def test_judge_metrics_and_runner_load_no_jax() -> None:
    code = "import judge.calibrate, judge.run, judge.pairs, sys; print('jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"


def test_every_module_that_loads_jax_turns_on_float64() -> None:
    """arena's package init loads no JAX, so a computing module must import ``arena._jax`` (x64 and the
    compilation cache), itself or through what it imports; else its fits would silently run in float32.
    Each module is imported alone, in a fresh interpreter."""
    from concurrent.futures import ThreadPoolExecutor

    names = [f"arena.{f.stem}" for f in modules("arena") if f.stem not in ("__init__", "_jax")]
    code = ("import importlib, sys; importlib.import_module(sys.argv[1]); "
            "print('jax' in sys.modules and not sys.modules['jax'].config.jax_enable_x64)")

    def float32(name: str) -> bool:
        out = subprocess.run([sys.executable, "-c", code, name], capture_output=True, text=True, cwd=ROOT)
        return out.stdout.strip() != "False"

    with ThreadPoolExecutor(4) as pool:
        bad = [n for n, b in zip(names, pool.map(float32, names), strict=True) if b]
    assert bad == []
