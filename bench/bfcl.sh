#!/usr/bin/env bash
# Reproduces bench/results/bfcl/latest.md: raw vs loop on the embedded model.
# Resumable: cases already in bench/results/bfcl/<model>/<mode>/*.jsonl are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/bigloop eval bfcl -c simple_python -c multiple -c parallel -c live_simple -c irrelevance -n 100 --out bench/results/bfcl "$@"
