#!/usr/bin/env bash
# Installs PyTorch's CPU build (torch==2.13.0) into the venv whose python is $1, never the
# CUDA one by accident: on Linux the default index resolves `torch` to the CUDA build and
# several GB of NVIDIA libraries. What pip would install is read first (a dry run); a plan
# with nvidia-* packages in it is redone from PyTorch's CPU index
# (BIGLOOP_TORCH_INDEX, default https://download.pytorch.org/whl/cpu). macOS and Windows
# wheels are CPU builds already. Used by `bash scripts/setup.sh --dev`; by hand:
#
#   bash scripts/torch-cpu.sh .venv/bin/python
set -eu
set -o pipefail

PY=${1:-.venv/bin/python}
VERSION=2.13.0
INDEX=${BIGLOOP_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}

fail() {
  echo "bigloop setup: $*" >&2
  exit 1
}

cpu_build() {  # torch $VERSION without CUDA is installed
  "$PY" -c "import sys, torch; sys.exit(not (torch.__version__.startswith('$VERSION') and torch.version.cuda is None))" 2> /dev/null
}

cpu_build && exit 0
plan=$("$PY" -m pip install --dry-run --quiet --report - "torch==$VERSION" 2> /dev/null || true)
if [ -n "$plan" ] && ! printf '%s' "$plan" | grep -q '"nvidia-'; then
  "$PY" -m pip install --quiet "torch==$VERSION"
else
  echo "bigloop setup: the default index offers torch's CUDA build; installing the CPU one from $INDEX" >&2
  "$PY" -m pip install --quiet "torch==$VERSION" --index-url "$INDEX" \
    || fail "could not install torch's CPU build from $INDEX. Install it yourself (pip install torch==$VERSION --index-url https://download.pytorch.org/whl/cpu) and run setup again."
fi
cpu_build || fail "the torch installed is not the CPU build $VERSION (torch.version.cuda is set); remove it (pip uninstall torch) and install the CPU build as above"
