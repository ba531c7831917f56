#!/usr/bin/env bash
# A separate environment with the peer frameworks, for bench/overhead.py --peers.
# Not a bigloop dependency: only the overhead benchmark uses it.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv-bench
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet "langgraph==1.2.24" "langchain-core==1.8.3" \
  "pydantic-ai-slim==2.68.0" "smolagents==1.26.0"
echo "$VENV/bin/python"
