#!/usr/bin/env bash
# Preference tuning (DPO) of the suite adapter (attempt 3) on its own failures of
# generated training tasks it was not trained on (--seed 1), then its test split.
set -euo pipefail
cd "$(dirname "$0")/../../../.."
.venv/bin/bigloop optimize --config bench/results/finetune/suite3/suite-tuned.json --bench tasks \
    --generate 12 --seed 1 --step prefer --epochs 2 \
    -o bench/results/finetune/prefer/preferred.json --work /tmp/sft/prefer.work \
    2>&1 | tee bench/results/finetune/prefer/optimize.log
