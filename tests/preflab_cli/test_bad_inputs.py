"""Issue 14: every bad input ends with exit 2 and one message naming the file and field, never a traceback;
anything unexpected inside any command is one line plus a pointer to --debug, exit 1."""

from __future__ import annotations

import functools

import pytest
import typer.main

from tests.preflab_cli.bad_cases import CASES, classify, run_case
from tests.preflab_cli.bad_score_cases import SCORE_CASES


@pytest.mark.parametrize("case", CASES + SCORE_CASES, ids=[c.name for c in CASES + SCORE_CASES])
def test_bad_input_is_one_clear_error(case, tmp_path):
    res = run_case(case, tmp_path)
    text = " ".join(res.err.split())
    assert res.code == 2, f"exit {res.code}: {res.err[-800:]}{res.out[-300:]}"
    assert "Traceback" not in res.err + res.out
    assert "np." not in text, text  # values quoted as written, not as numpy scalars (np.float64(nan))
    errors = [line for line in res.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, res.err
    assert case.filename in text, text
    if case.field is not None:
        assert case.field in text, text
    assert classify(case, res) == "clear"


def _leaf_commands():
    """(path of names, click command) for every command of the ``preflab`` CLI, subcommands included."""
    from preflab_cli import app

    root = typer.main.get_command(app)
    ctx = root.context_class(root)  # Typer may vendor its own click: use its classes

    def walk(group, prefix):
        for name in group.list_commands(ctx):
            cmd = group.get_command(ctx, name)
            if hasattr(cmd, "list_commands"):
                yield from walk(cmd, prefix + [name])
            else:
                yield prefix + [name], cmd

    return list(walk(root, []))


def _minimal_argv(path: list[str], cmd) -> list[str]:
    argv = list(path)
    for p in cmd.params:
        if p.required:
            argv += ["x"] if p.param_type_name == "argument" else [p.opts[0], "x"]
    return argv


def _all_typer_commands():
    from preflab_cli import app

    stack, out = [app], []
    while stack:
        t = stack.pop()
        out += t.registered_commands
        stack += [g.typer_instance for g in t.registered_groups]
    return out


def test_every_command_turns_an_unexpected_error_into_one_line(monkeypatch, capsys):
    from preflab_cli import main

    def boom_like(f):
        @functools.wraps(f)  # keeps the signature Typer reads the options from
        def boom(*args, **kwargs):
            raise RuntimeError("boom inside the command")
        return boom

    for info in _all_typer_commands():
        monkeypatch.setattr(info, "callback", boom_like(info.callback))
    commands = _leaf_commands()
    assert {"info", "rank", "lc", "arena-hard", "run", "calibrate"} <= {p[-1] for p, _ in commands}
    for path, cmd in commands:
        with pytest.raises(SystemExit) as exit_:
            main(_minimal_argv(path, cmd))
        err = capsys.readouterr().err
        assert exit_.value.code == 1, (path, err)
        assert err.splitlines() == ["error: RuntimeError: boom inside the command",
                                    "run with --debug for the traceback"], (path, err)
    with pytest.raises(RuntimeError):  # --debug shows the real exception (and so its traceback)
        main(_minimal_argv(*commands[0]) + ["--debug"])


def test_debug_shows_the_input_error_itself(tmp_path):
    from preflab.errors import InputError
    from preflab_cli import main

    empty = tmp_path / "b.jsonl"
    empty.write_text("")
    with pytest.raises(InputError, match="no battles"):
        main(["info", str(empty), "--debug"])


def test_an_input_error_escaping_a_command_is_one_plain_line(monkeypatch, capsys):
    """The root's own InputError path (a command that does not catch it): exit 2, no markup tags printed."""
    from preflab.errors import InputError
    from preflab_cli import main
    from preflab_cli.arena_cmds import app  # noqa: F401  (commands registered)

    def bad(*args, **kwargs):
        raise InputError("f.jsonl", 3, "winner", "unknown winner label ('[x]')", "use model_a, model_b or tie")

    monkeypatch.setattr("arena.io.battles.load_battles", bad)
    monkeypatch.setattr("preflab_cli.arena_cmds.fail", lambda e, status=2: (_ for _ in ()).throw(e))
    with pytest.raises(SystemExit) as exit_:
        main(["info", "f.jsonl"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip() == ("error: f.jsonl, line 3: field 'winner': unknown winner label "
                                               "('[x]'). use model_a, model_b or tie")
