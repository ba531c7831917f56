#!/bin/bash
# The planner rule use_quantities on the whole suite (dev + test), suite3-tuned and base;
# then the tasks where it acted, again with it off (the same code otherwise).
set -e
cd /work/main
OUT=bench/results/suite/quantities
mkdir -p $OUT
S3="--config bench/results/finetune/suite3/suite-tuned.json"
.venv/bin/python bench/suite.py --split all $S3 --out $OUT/suite3-on.jsonl > $OUT/suite3-on.log 2>&1
.venv/bin/python bench/suite.py --split all --out $OUT/base-on.jsonl > $OUT/base-on.log 2>&1
fired() { .venv/bin/python -c "
import json,sys
print(' '.join(r['id'] for r in map(json.loads, open(sys.argv[1])) if any('no call used the' in n[1] for n in r.get('notes', []))))" $1; }
IDS=$(fired $OUT/suite3-on.jsonl); echo "suite3 fired: $IDS"
[ -n "$IDS" ] && .venv/bin/python bench/suite.py --split all $S3 --ids $IDS --off use_quantities --out $OUT/suite3-off.jsonl > $OUT/suite3-off.log 2>&1
IDS=$(fired $OUT/base-on.jsonl); echo "base fired: $IDS"
[ -n "$IDS" ] && .venv/bin/python bench/suite.py --split all --ids $IDS --off use_quantities --out $OUT/base-off.jsonl > $OUT/base-off.log 2>&1
echo done
