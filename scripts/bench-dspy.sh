#!/usr/bin/env bash
# A separate environment with DSPy, for bench/dspy_opt.py (DSPy's MIPROv2 and GEPA on BFCL
# cases, against the same served model bigloop uses) and its plumbing test. Not a bigloop
# dependency. The optuna extra is MIPROv2's optimizer of prompt parameters.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv-dspy
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet "dspy[optuna]==3.4.1" "optuna==5.0.0"
echo "$VENV/bin/python"
