#!/usr/bin/env bash
# tool_fits on (--config on.json) and off (the defaults), loop mode,
# one model job at a time: the first 100 cases of the irrelevance categories, the first 50
# of the categories that need a call (a 2-core machine's session).
set -euo pipefail
cd "$(dirname "$0")/../../.."
run() {
  .venv/bin/bigloop eval bfcl -c "$1" -n "$2" --mode loop --config bench/results/tool_fits/on.json --out bench/results/tool_fits
  .venv/bin/bigloop eval bfcl -c "$1" -n "$2" --mode loop --out bench/results/tool_fits
}
run irrelevance 100
run live_irrelevance 100
run simple_python 50
run multiple 50
run live_simple 50
