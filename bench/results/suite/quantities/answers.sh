#!/bin/bash
# The relevance gate's numbers rule and the stricter check_answers (branch "answers"),
# on every suite task whose run (bench/results/suite/quantities/*-on.jsonl) had no
# successful tool call: the only runs these two rules can change.
set -e
while pgrep -f "bash /tmp/quant.sh" > /dev/null; do sleep 15; done
cd /work/main
OUT=/work/main/bench/results/suite/answers
mkdir -p $OUT
untooled() { .venv/bin/python -c "
import json,sys
rows=map(json.loads, open(sys.argv[1]))
print(' '.join(r['id'] for r in rows if not any(s[0]=='tool' and s[4] is None for s in r['trace'])))" $1; }
for cfg in suite3 base; do
  IDS=$(untooled bench/results/suite/quantities/$cfg-on.jsonl); echo "$cfg: $IDS"
  C=""; [ $cfg = suite3 ] && C="--config /work/main/bench/results/finetune/suite3/suite-tuned.json"
  (cd /tmp/wt-ans && PYTHONPATH=/tmp/wt-ans/src:/tmp/wt-ans/packages/bigloop-eval/src /work/main/.venv/bin/python bench/suite.py --split all --ids $IDS $C --out $OUT/$cfg.jsonl > $OUT/$cfg.log 2>&1)
done
echo done
