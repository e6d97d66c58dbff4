#!/usr/bin/env bash
# GPU check for issue 16 (<= 5 minutes): install the CUDA wheel of the installed jax version, then run W1,
# the 300-model case and style control on the GPU and print the table (also benchmarks/results/bench_rank_gpu.md).
# Run from the repository root with the project's Python: `PYTHON=.venv/bin/python benchmarks/gpu_check.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
JAX_VERSION=$("$PY" -c "import importlib.metadata as m; print(m.version('jax'))")
echo "installing jax[cuda12]==${JAX_VERSION}"
timeout 150 "$PY" -m pip install -q "jax[cuda12]==${JAX_VERSION}"
"$PY" -c "import jax; print(jax.devices())"
PYTHONPATH=$PWD timeout 140 "$PY" -m benchmarks.bench_rank --gpu-check --device gpu
