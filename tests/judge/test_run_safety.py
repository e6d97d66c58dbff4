"""Judge runs: fail loudly (exit status), keep secrets (redaction), share a cache between processes,
lose at most the calls in flight on SIGKILL, and a fault server driven from the command line."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judge.runner.run import RunConfig, run_judge
from judge.verdicts.rubrics import BUILTIN
from preflab.redact import redact
from tests.judge.fault_server import Faults, FaultServer, build_parser, faults_from_args
from tests.judge.test_faults import make_pairs

KEYS = {"local": ("PREFLAB_LOCAL_API_KEY", "sk-local-4f9a2b7c1d0e8f6a5b4c3d2e"),
        "openai": ("OPENAI_API_KEY", "sk-proj-9Zq8Yw7Xv6Uu5Tt4Ss3Rr2Qq1Pp0"),
        "anthropic": ("ANTHROPIC_API_KEY", "sk-ant-api03-AbCdEfGhIjKlMnOpQrSt")}


def write_pairs(path: Path, n: int, start: int = 0) -> Path:
    with path.open("w") as fh:
        for p in make_pairs(start + n)[start:]:
            fh.write(json.dumps({"item_id": p.item_id, "prompt": p.prompt, "model_x": p.model_x,
                                 "answer_x": p.answer_x, "model_y": p.model_y, "answer_y": p.answer_y}) + "\n")
    return path


def cli(*args: str) -> list[str]:
    return [sys.executable, "-c", "from preflab_cli import main; main()", "judge", "run", *args]


def spec_for(provider: str, srv: FaultServer) -> str:
    return {"local": f"local:{srv.url}#fault", "openai": f"openai:{srv.url}#gpt-4.1-mini",
            "anthropic": f"anthropic:{srv.url.removesuffix('/v1')}#claude-haiku-4-5"}[provider]


def test_redact_known_keys_and_key_shapes(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "my-own-format-key-123")
    text = "HTTP 401: bad key my-own-format-key-123, also sk-ant-api03-xyzxyzxyz and Bearer abcdefgh12345"
    out = redact(text)
    assert "my-own-format-key-123" not in out and "sk-ant" not in out and "abcdefgh12345" not in out
    assert out.count("[REDACTED]") == 3 and out.startswith("HTTP 401: bad key ")


@pytest.mark.parametrize("provider", ["local", "openai", "anthropic"])
def test_an_echoed_key_never_reaches_errors_outputs_or_the_cache(provider, tmp_path):
    var, key = KEYS[provider]
    env = {**os.environ, var: key, "JAX_PLATFORMS": "cpu"}
    pairs, out, cache = write_pairs(tmp_path / "pairs.jsonl", 2), tmp_path / "v.jsonl", tmp_path / "c.sqlite"
    with FaultServer(Faults(rate_401=1.0, echo_key=True)) as srv:
        done = subprocess.run(cli(str(pairs), "--judge", spec_for(provider, srv), "--cache", str(cache),
                                  "--output", str(out), "--quiet", "--timeout", "5", "--samples", "1"),
                              env=env, capture_output=True, text=True, timeout=120)
    assert srv.outcomes["401"] > 0
    echoed = out.read_text()
    assert "invalid API key (you sent" in echoed  # the server did echo it: the redaction had work to do
    for where in (done.stdout, done.stderr, echoed, cache.read_bytes().decode("latin-1")):
        assert key not in where
    assert "[REDACTED]" in echoed


def test_retried_errors_are_redacted_too(monkeypatch):
    monkeypatch.setenv("PREFLAB_LOCAL_API_KEY", KEYS["local"][1])
    with FaultServer(Faults(rate_500=1.0, echo_key=True)) as srv:
        res = run_judge(make_pairs(2), f"local:{srv.url}#fault",
                        RunConfig(BUILTIN["abt"], max_attempts=2, backoff_base=0.001))
    assert res.stats.failed == 4
    errors = " ".join(res.verdicts["error"])
    assert "server error (you sent Bearer [REDACTED])" in errors and KEYS["local"][1] not in errors


def test_failed_verdicts_make_the_run_fail_unless_allowed(tmp_path):
    pairs, out = write_pairs(tmp_path / "pairs.jsonl", 2), tmp_path / "v.jsonl"
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    with FaultServer(Faults(rate_401=1.0)) as srv:
        base = [str(pairs), "--judge", f"local:{srv.url}#fault", "--no-cache", "--output", str(out), "--quiet"]
        failed = subprocess.run(cli(*base), env=env, capture_output=True, text=True, timeout=120)
        allowed = subprocess.run(cli(*base, "--allow-failures", "4"), env=env, capture_output=True, text=True,
                                 timeout=120)
        too_few = subprocess.run(cli(*base, "--allow-failures", "3"), env=env, capture_output=True, text=True,
                                 timeout=120)
    assert failed.returncode == 1, failed.stderr
    assert "verdicts by slot" not in failed.stdout and "None" not in failed.stdout  # before: "None 4"
    msg = " ".join(failed.stderr.split())
    assert "4 of 4 verdicts failed after retries: 4 x HTTP 401" in msg and "--allow-failures" in msg
    assert "Traceback" not in failed.stderr
    assert len(out.read_text().splitlines()) == 4  # the failed rows are still written, with their error
    assert allowed.returncode == 0, allowed.stderr
    assert too_few.returncode == 1


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_refused_connection_stops_the_run_within_a_few_quick_tries():
    """Before: 14 retries over 44 s, then 6 "failed" verdicts announced as "None 6"."""
    from llm.providers.base import REFUSED_TRIES, ServerUnreachable

    url = f"http://127.0.0.1:{closed_port()}/v1"
    t0 = time.perf_counter()
    with pytest.raises(ServerUnreachable, match=r"connection refused .*no server is listening there") as caught:
        run_judge(make_pairs(3), f"local:{url}#m", RunConfig(BUILTIN["ab"], concurrency=1, progress=False))
    assert time.perf_counter() - t0 < 5.0  # REFUSED_TRIES tries, at most 0.5 s apart
    assert caught.value.url == url and str(caught.value).startswith(url) and REFUSED_TRIES == 3


def test_the_cli_stops_a_run_on_a_refused_connection_with_one_line(tmp_path):
    pairs, out = write_pairs(tmp_path / "pairs.jsonl", 3), tmp_path / "v.jsonl"
    url = f"http://127.0.0.1:{closed_port()}/v1"
    done = subprocess.run(cli(str(pairs), "--judge", f"local:{url}#m", "--no-cache", "--output", str(out),
                              "--quiet"), env={**os.environ, "JAX_PLATFORMS": "cpu"}, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {url}: connection refused"), done.stderr
    assert "Traceback" not in done.stderr and "--debug" not in done.stderr
    assert "verdicts by slot" not in done.stdout and not out.exists()


def test_all_verdicts_present_exits_zero(tmp_path):
    pairs, out = write_pairs(tmp_path / "pairs.jsonl", 3), tmp_path / "v.jsonl"
    with FaultServer(Faults()) as srv:
        done = subprocess.run(cli(str(pairs), "--judge", f"local:{srv.url}#fault", "--no-cache", "--output",
                                  str(out), "--quiet"), env={**os.environ, "JAX_PLATFORMS": "cpu"},
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_two_processes_share_one_cache(tmp_path):
    """Two concurrent runs on one cache file both finish, and every answer of both is cached."""
    cache = tmp_path / "shared.sqlite"
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    with FaultServer(Faults(delay=0.002)) as srv:
        procs = []
        for k in range(2):
            pairs = write_pairs(tmp_path / f"p{k}.jsonl", 300, start=300 * k)
            procs.append(subprocess.Popen(cli(str(pairs), "--judge", f"local:{srv.url}#fault", "--cache", str(cache),
                                              "--output", str(tmp_path / f"v{k}.jsonl"), "--quiet",
                                              "--concurrency", "32"),
                                          env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        results = [p.communicate(timeout=240) for p in procs]
    for p, (_, err) in zip(procs, results, strict=True):
        assert p.returncode == 0, err[-2000:]
        assert "locked" not in err
    with sqlite3.connect(cache) as db:
        assert db.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == 2 * 2 * 300
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_sigkill_loses_at_most_the_calls_in_flight(tmp_path):
    pairs, cache = write_pairs(tmp_path / "pairs.jsonl", 400), tmp_path / "c.sqlite"
    concurrency = 8
    with FaultServer(Faults(delay=0.01)) as srv:
        proc = subprocess.Popen(cli(str(pairs), "--judge", f"local:{srv.url}#fault", "--cache", str(cache),
                                    "--output", str(tmp_path / "v.jsonl"), "--quiet",
                                    "--concurrency", str(concurrency)),
                                env={**os.environ, "JAX_PLATFORMS": "cpu"}, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while sum(srv.answered.values()) < 300 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        assert proc.poll() is None, proc.communicate()[0].decode()[-2000:]
        answered = sum(srv.answered.values())  # read just before the kill: the cache may only be behind by
        os.kill(proc.pid, signal.SIGKILL)      # the answers still in flight inside the client
        proc.wait()
    with sqlite3.connect(cache) as db:
        cached = db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
    assert answered - cached <= concurrency, (answered, cached)


def test_fault_server_command_line():
    args = build_parser().parse_args(["--rate-429", "0.1", "--rate-500", "0.2", "--rate-slow", "0.05",
                                      "--rate-drop", "0.01", "--rate-malformed", "0.02", "--echo-key",
                                      "--retry-after", "2", "--seed", "7"])
    f = faults_from_args(args)
    assert (f.rate_429, f.rate_500, f.rate_slow, f.rate_drop, f.rate_malformed, f.echo_key, f.retry_after,
            f.seed) == (0.1, 0.2, 0.05, 0.01, 0.02, True, "2", 7)
    with pytest.raises(SystemExit):
        faults_from_args(build_parser().parse_args(["--rate-429", "0.7", "--rate-500", "0.6"]))
    helptext = subprocess.run([sys.executable, "-m", "tests.judge.fault_server", "--help"], capture_output=True,
                              text=True, timeout=60).stdout
    for flag in ("--rate-429", "--rate-500", "--rate-slow", "--rate-drop", "--rate-malformed", "--echo-key"):
        assert flag in helptext
