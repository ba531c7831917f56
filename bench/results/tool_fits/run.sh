#!/usr/bin/env bash
# tool_fits on (the loop as configured by default) and off (--config off.json), first 100
# cases of each category, one model job at a time, loop mode only.
set -euo pipefail
cd "$(dirname "$0")/../../.."
for c in irrelevance live_irrelevance simple_python multiple live_simple; do
  .venv/bin/bigloop eval bfcl -c "$c" -n 100 --mode loop --out bench/results/tool_fits
  .venv/bin/bigloop eval bfcl -c "$c" -n 100 --mode loop --config bench/results/tool_fits/off.json --out bench/results/tool_fits
done
