#!/usr/bin/env bash
# Suite fine-tuning attempt 5: attempt 4's recipe (today's loop) with 16 generated tasks
# a family instead of 12. The work folder starts from attempt 4's remembered base
# evaluations (same base config; task k of a family does not depend on how many are
# generated), so only the 28 new generated tasks are probed.
set -euo pipefail
cd "$(dirname "$0")/../../../.."
work=/tmp/sft/suite5.work
mkdir -p "$work"
[ -f "$work/evals.jsonl" ] || cp bench/results/finetune/suite4/evals.jsonl "$work/evals.jsonl"
.venv/bin/bigloop optimize --bench tasks --generate 16 --step finetune \
    -o bench/results/finetune/suite5/suite-tuned.json --work "$work" \
    2>&1 | tee bench/results/finetune/suite5/optimize-log.txt
