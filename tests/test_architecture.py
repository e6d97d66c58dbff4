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
OURS = {"arena", "llm", "answering", "judge", "judge_arena", "voting", "preflab", "preflab_cli"}
#: package -> our packages it must never import (preflab_cli, the command line, is the top: it may import all)
FORBIDDEN = {
    "arena": {"llm", "answering", "judge", "judge_arena", "voting", "preflab_cli"},
    "llm": {"arena", "answering", "judge", "judge_arena", "voting", "preflab_cli"},  # the wire, under both uses
    "answering": {"arena", "judge", "judge_arena", "voting", "preflab_cli"},  # answering models, over llm
    "judge": {"arena", "judge_arena", "voting", "preflab_cli"},
    "judge_arena": {"voting", "preflab_cli"},  # judges and arena statistics together, below the app and the CLI
    "voting": {"preflab_cli"},
    "preflab": {"arena", "llm", "answering", "judge", "judge_arena", "voting", "preflab_cli"},  # the shared leaf
}
#: A package's rooms, bottom first: a module imports only modules of its own room or of rooms below it
#: (a room is a package's sub-package or a module at its top; docs/architecture.md draws them).
ROOMS = {
    "llm": ["prices", "local_server", "providers", "calls"],
    "answering": ["model_specs", "generate", "stream"],
    "judge": ["stats", "report_text", "verdicts", "benchmarks", "metrics", "runner", "gate", "cards"],
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


def room_of(module: str) -> str | None:
    """The room of a dotted module name (``judge.metrics.bias`` -> ``metrics``), None for a package's ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def wrong_way_imports(package: str) -> set[tuple[str, str]]:
    """(module, imported module) pairs where a room imports a room above it (or one not in the order)."""
    order = ROOMS[package]
    bad = set()
    for f in modules(package):
        me = module_name(f)
        mine = room_of(me)
        for module, _ in runtime_imports(f):
            theirs = room_of(module)
            if module.split(".")[0] != package or mine is None or theirs is None or theirs == mine:
                continue
            if mine not in order or theirs not in order or order.index(theirs) > order.index(mine):
                bad.add((me, module))
    return bad


@pytest.mark.parametrize("package", sorted(ROOMS))
def test_rooms_import_one_way(package: str) -> None:
    assert wrong_way_imports(package) == set()


def test_every_room_is_in_the_order() -> None:
    """A new module or sub-package of a roomed package gets its place in :data:`ROOMS` (and in the docs)."""
    found = {p: {f.relative_to(ROOT / p).parts[0].removesuffix(".py") for f in modules(p)} - {"__init__"}
             for p in ROOMS}
    assert found == {p: set(order) for p, order in ROOMS.items()}


def test_the_room_check_sees_an_upward_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for d in ("pkg", "pkg/low", "pkg/high"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "__init__.py").write_text("")
    (tmp_path / "pkg" / "high" / "a.py").write_text("from pkg.low.b import f\n")
    (tmp_path / "pkg" / "low" / "b.py").write_text("def f():\n    from pkg.high import a\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "OURS", {"pkg"})
    monkeypatch.setattr(sys.modules[__name__], "ROOMS", {"pkg": ["low", "high"]})
    assert wrong_way_imports("pkg") == {("pkg.low.b", "pkg.high.a")}


def test_tests_never_import_the_benchmarks() -> None:
    """The benchmarks use the tests' harnesses (servers, browser flags), never the reverse: no import circle
    between the two folders."""
    bad = [str(f.relative_to(ROOT)) for f in modules("tests") if "benchmarks" in imported_top_names(f)]
    assert bad == []


def test_benchmarks_use_only_the_tests_harness() -> None:
    """The benchmarks import the shared harness (``tests.harness``: servers, browser flags), never a test module."""
    bad = {}
    for f in modules("benchmarks"):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else [])
            bad.update({str(f.relative_to(ROOT)): n for n in names
                        if n.split(".")[0] == "tests" and not n.startswith("tests.harness")})
    assert bad == {}


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def runtime_imports(path: Path) -> list[tuple[str, str | None]]:
    """(module, name or None) for each of our imports a module runs, lazy ones included; imports under
    ``if TYPE_CHECKING:`` (for annotations only, never executed) are left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
    out: list[tuple[str, str | None]] = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names if a.name.split(".")[0] in OURS]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.split(".")[0] in OURS:
            out += [(f"{node.module}.{a.name}", None) if is_module(f"{node.module}.{a.name}") else (node.module, a.name)
                    for a in node.names]
    return out


def import_circles(package: str) -> list[list[str]]:
    """The import circles among ``package``'s modules (strongly connected groups of two or more)."""
    graph = {module_name(f): {m for m, _ in runtime_imports(f) if m.split(".")[0] == package}
             for f in modules(package)}
    order, low, stack, circles = {}, {}, [], []

    def visit(v: str) -> None:
        order[v] = low[v] = len(order)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in order:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], order[w])
        if low[v] == order[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
            if len(group) > 1:
                circles.append(sorted(group))

    for v in sorted(graph):
        if v not in order:
            visit(v)
    return sorted(circles)


#: Circles that need functions moved between modules other work is editing now; the restructure of arena
#: into rooms removes them (then this is empty, and the check fails if one comes back).
KNOWN_CIRCLES = {
}


@pytest.mark.parametrize("package", sorted(OURS))
def test_imports_inside_a_package_run_one_way(package: str) -> None:
    assert import_circles(package) == KNOWN_CIRCLES.get(package, [])


def test_the_circle_check_sees_a_lazy_circle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("from pkg.b import f\n")
    (tmp_path / "pkg" / "b.py").write_text("def f():\n    from pkg import a\n")
    (tmp_path / "pkg" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import x\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "OURS", {"pkg"})
    assert import_circles("pkg") == [["pkg.a", "pkg.b"]]


def test_no_module_imports_another_modules_private_name() -> None:
    """A ``_name`` is its module's own: no other module imports it (make it public or move it). A private
    module (``pkg._impl``) is its package's own: only modules of that package import it."""
    bad = set()
    for package in sorted(OURS):
        for f in modules(package):
            me = module_name(f)
            for module, name in runtime_imports(f):
                if name and name.startswith("_") and not name.startswith("__") and module != me:
                    bad.add((me, f"{module}.{name}"))
                private = next((p for p in module.split(".") if p.startswith("_") and not p.startswith("__")), None)
                if private and module.split(".")[0] != package:
                    bad.add((me, module))
    assert bad == set()


def test_the_checker_sees_lazy_imports(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("def g():\n    from judge.verdicts.judged_pairs import column\n    import voting.store\n")
    assert imported_packages(f) == {"judge", "voting"}


def test_judge_metrics_and_runner_load_no_jax() -> None:
    code = ("import judge, judge.metrics.calibrate, judge.runner.run, judge.verdicts.pairs, llm, answering.generate,"
            " sys; print('jax' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"


FIT_LEAVING_JAX_AS_IT_WAS = """
import importlib, json, sys
import jax, jax.numpy as jnp
setting = jax.config.jax_enable_x64
for name in sys.argv[1:]:
    importlib.import_module(name)
assert jax.config.jax_enable_x64 is setting, "importing arena changed jax_enable_x64"
from arena.io.battles import load_battles
from arena.leaderboard import fit_leaderboard
from arena.leaderboard_options import IntervalOptions
intervals = IntervalOptions("both", n_bootstrap=20)
lb = fit_leaderboard(load_battles("data/demo/battles.jsonl"), intervals, style_control=True)
assert jax.config.jax_enable_x64 is setting, "a fit changed jax_enable_x64"
print(json.dumps({"user": str(jnp.ones(1).dtype), "table": lb.table.to_json(double_precision=15),
                  "style": lb.style.to_json(double_precision=15)}))
"""


def test_importing_arena_and_fitting_leave_the_jax_setting_as_it_was() -> None:
    """Importing every arena module and fitting leave ``jax_enable_x64`` as the host process set it (a
    user's own JAX code keeps float32 when it asked for it), and the fit computes in float64 either way:
    the same table, to the last digit, whether the user's JAX has 64-bit types on or off."""
    names = [module_name(f) for f in modules("arena")]
    runs = {}
    for x64 in ("0", "1"):
        out = subprocess.run([sys.executable, "-c", FIT_LEAVING_JAX_AS_IT_WAS, *names], capture_output=True,
                             text=True, cwd=ROOT, timeout=600, env={**os.environ, "JAX_ENABLE_X64": x64})
        assert out.returncode == 0, out.stderr[-3000:]
        runs[x64] = json.loads(out.stdout.strip().splitlines()[-1])
    assert runs["0"]["user"] == "float32" and runs["1"]["user"] == "float64"
    assert runs["0"]["table"] == runs["1"]["table"] and runs["0"]["style"] == runs["1"]["style"]
