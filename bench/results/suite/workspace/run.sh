#!/bin/bash
# The file tools' new docs (list_files says what the workspace folder holds), on every
# suite task that offers the file tools: the only runs the change can touch.
set -e
cd /work/main
OUT=bench/results/suite/workspace
IDS="files-001 files-002 files-003 files-004 files-005 files-006 files-007 files-008 files-009 files-010 files-011 files-012 files-013 files-014 files-015 files-016 multi-007"
.venv/bin/python bench/suite.py --split all --ids $IDS --out $OUT/base.jsonl > $OUT/base.log 2>&1
.venv/bin/python bench/suite.py --split all --ids $IDS --config bench/results/finetune/suite3/suite-tuned.json --out $OUT/suite3.jsonl > $OUT/suite3.log 2>&1
echo files-done
