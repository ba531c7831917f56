#!/bin/bash
# Old code (c7f1b8d, before the copied-example changes) vs new code (HEAD), on every suite
# task that met a copied-example refusal in the suite2 runs, for three configs.
set -e
cd /work/main
IDS="custom-001 custom-004 custom-010 custom-011 custom-013 files-002 files-011 missing-006 missing-008 missing-009 missing-013 multi-004 multi-006 notool-013 sql-011"
OUT=bench/results/suite/copied-asked
for cfg in base suite2 suite3; do
  case $cfg in base) C="";; suite2) C="--config /work/main/bench/results/finetune/suite2/suite-tuned.json";; suite3) C="--config /work/main/bench/results/finetune/suite3/suite-tuned.json";; esac
  (cd /tmp/wt-c7f1 && PYTHONPATH=/tmp/wt-c7f1/src:/tmp/wt-c7f1/packages/bigloop-eval/src /work/main/.venv/bin/python bench/suite.py --split all --ids $IDS $C --out /work/main/$OUT/old-$cfg.jsonl) > /dev/null
  .venv/bin/python bench/suite.py --split all --ids $IDS $C --out $OUT/new-$cfg.jsonl > /dev/null
done
echo done
