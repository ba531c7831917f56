"""Calculator bounds: work that would take minutes (holding the GIL, so no timeout can
stop it) or give unprintable results is refused up front with a message the model can act on."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap

import pytest

from bigloop import ToolFailure
from bigloop.atoms.builtin import calculator
from bigloop.atoms.builtin.calculator import CalculatorError, evaluate

# Each took over 25 s before the fix (in one C call holding the GIL: the tool's timeout
# could not fire). A child process keeps a regression from hanging the test session.
_SLOW = [
    "(10**9999)**9999",
    "factorial(10**7)",
    "factorial(factorial(10))",
    "round(7, -10**9)",
    "(2**9999)*(2**9999)*(2**9999)*(2**9999)",
    "9**9999 // 7 * 9**9999",
]
_CHILD = textwrap.dedent(
    """
    import json, sys
    from bigloop.atoms.builtin.calculator import CalculatorError, evaluate
    out = []
    for expression in json.loads(sys.argv[1]):
        try:
            evaluate(expression)
            out.append("no error")
        except CalculatorError as e:
            out.append(str(e))
    print(json.dumps(out))
    """
)


def test_expensive_expressions_are_refused_quickly() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(_SLOW)],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert done.returncode == 0, done.stderr
    messages = json.loads(done.stdout)
    assert all("too large" in m or "too big" in m for m in messages), messages
    assert "logarithms" in messages[0]


def test_results_are_bounded_in_digits() -> None:
    assert len(str(evaluate("2**3000"))) == 904
    assert evaluate("factorial(400)") > 0
    assert evaluate("10**999") == 10**999
    with pytest.raises(CalculatorError, match="digits"):
        evaluate(" * ".join(["10**99"] * 11))
    with pytest.raises(CalculatorError, match="factorial"):
        evaluate("factorial(5000)")
    assert evaluate("2.0 ** 0.5") == pytest.approx(1.41421356)
    assert evaluate("0.5 ** 100000") == 0.0  # a float power is cheap: allowed


def test_calculator_tool_says_what_to_do_instead() -> None:
    with pytest.raises(ToolFailure, match="too large") as info:
        asyncio.run(calculator.call({"expression": "(10**9999)**9999"}))
    assert "log10" in str(info.value)


def test_long_and_deeply_nested_expressions_are_refused() -> None:
    with pytest.raises(CalculatorError, match="too long"):
        evaluate("1+" * 2000 + "1")
    with pytest.raises(CalculatorError):
        evaluate("-" * 900 + "1")


def test_a_result_that_is_not_a_real_number_is_refused() -> None:
    for expression in ("(-8)**0.5", "(-8) ** (1/3)", "2 * (-1)**0.5"):
        with pytest.raises(CalculatorError, match="not a real number"):
            evaluate(expression)
    assert evaluate("(-8)**2") == 64 and evaluate("8 ** (1/3)") == pytest.approx(2.0)
    with pytest.raises(ToolFailure, match="not a real number"):
        asyncio.run(calculator.call({"expression": "(-8)**0.5"}))
