"""preflab_cli.plain_options: option values without pydantic give exactly typer's values and messages."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

from preflab_cli import plain_options

_coercion = pytest.importorskip("typer._coercion", reason="typer before 0.29: click converts option values")

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ["12", "0", "-3", "007", "+5", " 7", "1_000", "1e3", "1E-2", "0.95", "-0.5", ".5", "1.", "nan", "inf",
           "abc", "", "-", "x.csv", str(ROOT / "README.md"), str(ROOT), "a,b", 3, 0.5, True, None, Path("p"),
           ("a", "b"), ["x"], (), ("a", 1)]


def _params():
    from preflab_cli import app

    root = typer.main.get_command(app)
    ctx = root.context_class(root)

    def walk(group):
        for name in group.list_commands(ctx):
            cmd = group.get_command(ctx, name)
            yield from walk(cmd) if hasattr(cmd, "list_commands") else ((cmd, p) for p in cmd.params)

    return ctx, [(cmd, p) for cmd, p in walk(root) if hasattr(p, "type_descriptor")]


def _typers(value, descriptor, param, ctx):
    try:
        return "ok", _coercion.build_runtime_param(descriptor).coerce(value, param=param, ctx=ctx)
    except Exception as e:  # noqa: BLE001  (the message is the result)
        return "error", f"{type(e).__name__}: {e}"


def test_every_option_of_every_command_takes_the_values_typer_gives():
    """For each option of the CLI and each sample (plain and unusual spellings, defaults' types, bad values),
    the value or the message is typer's own; the plain path decides the usual ones."""
    ctx, params = _params()
    assert len(params) > 100
    decided = 0
    for cmd, param in params:
        descriptor = param.type_descriptor
        plain = plain_options.PlainRuntime.build(descriptor)
        for value in [*SAMPLES, param.default]:
            want = _typers(value, descriptor, param, ctx)
            try:
                got = "ok", plain.coerce(value, param=param, ctx=ctx)
            except Exception as e:  # noqa: BLE001
                got = "error", f"{type(e).__name__}: {e}"
            assert repr(got) == repr(want) and type(got[1]) is type(want[1]), (cmd.name, param.name, value)
            decided += plain_options.plain_value(descriptor.annotation, descriptor.parameter_info,
                                                 value) is not plain_options.TYPER
    assert decided > 300


@pytest.mark.parametrize("argv", [["rank", "x.parquet", "--bootstrap", "ten"], ["rank", "x.parquet", "--level", "high"]])
def test_a_bad_number_gets_typers_message(argv, capsys):
    from preflab_cli import main

    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert "Invalid value for" in capsys.readouterr().err


def test_a_rank_loads_no_pydantic(tmp_path):
    code = ("import sys\nfrom preflab_cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print('pydantic' in sys.modules)\n")
    res = subprocess.run([sys.executable, "-c", code, "rank", str(ROOT / "data" / "demo" / "battles.jsonl"),
                          "--bootstrap", "20", "--level", "0.9", "--top", "2", "--output", str(tmp_path / "t.csv"),
                          "--filter", "dedup"],
                         capture_output=True, text=True, cwd=ROOT, timeout=600,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines()[-1] == "False"
