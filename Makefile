# One entry point for humans and CI.
#   make run TASK="What is (45 + 12) / 3?"   set up, then run a task on the embedded model
#   make test                                 set up, then lint, type-check and run every test
TASK ?= What is (45 + 12) / 3?
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup setup-run peers run test lint typecheck pytest bench

# What a run needs: bigloop[local], llama.cpp built for this CPU's tier, the model parts.
setup-run:
	@bash scripts/setup.sh

# Everything: the test, training, benchmark and UI extras too.
setup:
	@bash scripts/setup.sh --dev

# LangGraph, pydantic-ai and smolagents in their own venv (.venv-bench): benchmark and
# client-test peers only, never bigloop dependencies.
peers:
	@bash scripts/bench-peers.sh > /dev/null

run: setup-run
	@$(BIN)/bigloop run "$(TASK)"

lint: setup
	$(BIN)/ruff check src packages tests bench
	$(BIN)/ruff format --check src packages tests bench
	$(BIN)/lint-imports --no-cache

typecheck: setup
	$(BIN)/mypy

pytest: setup peers
	$(BIN)/python -m pytest

test: lint typecheck pytest

bench: setup
	$(BIN)/python bench/overhead.py
