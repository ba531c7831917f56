#!/bin/bash
set -e
while pgrep -f "bash /tmp/answers.sh" > /dev/null; do sleep 10; done
cd /work/main
OUT=bench/results/suite/quantities
.venv/bin/python bench/suite.py --split all --config bench/results/finetune/suite3/suite-tuned.json --ids arith-008 multi-003 multi-008 custom-001 custom-006 --out $OUT/suite3-direct.jsonl > $OUT/suite3-direct.log 2>&1
.venv/bin/python bench/suite.py --split all --ids arith-008 multi-009 --out $OUT/base-direct.jsonl > $OUT/base-direct.log 2>&1
echo done
