from __future__ import annotations

from tests.conftest import model_problem


def test_a_model_that_dies_of_a_signal_fails_the_real_tests_with_the_fix() -> None:
    problem = model_problem("import os, signal; os.kill(os.getpid(), signal.SIGILL)")
    assert problem is not None
    assert "llama.cpp crashed (SIGILL, signal 4)" in problem and "make setup" in problem


def test_a_model_that_fails_says_why() -> None:
    problem = model_problem("raise SystemExit('weights missing')")
    assert problem == "the embedded model failed to run: weights missing"


def test_a_model_that_runs_passes() -> None:
    assert model_problem("print('ok 1')") is None
