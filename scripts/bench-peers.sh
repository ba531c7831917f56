#!/usr/bin/env bash
# A separate environment with the peer frameworks, for bench/overhead.py --peers and
# bench/peers_smoke.py (the peers as clients of `bigloop serve openai`).
# Not a bigloop dependency: only the benchmarks and the peers' smoke test use it.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv-bench
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet "langgraph==1.2.24" "langchain-core==1.8.3" \
  "langchain-openai==1.7.4" "openai==3.57.0" \
  "pydantic-ai-slim[openai]==2.68.0" "smolagents==1.26.0"
echo "$VENV/bin/python"
