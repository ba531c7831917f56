"""A safe calculator: arithmetic parsed with `ast` and evaluated node by node, never `eval`."""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable
from typing import Any

from bigloop.atoms.tool import tool

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt,
    "log": math.log,
    "log10": math.log10,
    "log2": math.log2,
    "exp": math.exp,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "asin": math.asin,
    "acos": math.acos,
    "atan": math.atan,
    "abs": abs,
    "round": round,
    "floor": math.floor,
    "ceil": math.ceil,
    "min": min,
    "max": max,
    "factorial": math.factorial,
    "radians": math.radians,
    "degrees": math.degrees,
}
_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau}
_MAX_EXPONENT = 10_000
_CURRENCY = re.compile(r"[$€£¥]")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")


class CalculatorError(ValueError):
    """The expression is not arithmetic this calculator accepts."""


def evaluate(expression: str) -> float | int:
    """Evaluate an arithmetic expression safely."""
    text = expression.replace("^", "**").replace("×", "*").replace("÷", "/").strip()
    text = _CURRENCY.sub("", text)  # "$350 * 365": money is a number here
    try:
        return _evaluate(text)
    except (CalculatorError, TypeError):
        # "2,480 * 0.175" reads as a tuple and "round(2,480 / 3, 1)" as three arguments:
        # only then are the commas taken for thousands separators ("min(2,500)" stays 2).
        plain = _THOUSANDS.sub("", text)
        if plain == text:
            raise
        return _evaluate(plain)


def _evaluate(text: str) -> float | int:
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise CalculatorError(f"Not an arithmetic expression: {text!r}") from None
    result: float | int = _eval(tree.body)
    return result


def _eval(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT:
            raise CalculatorError(f"Exponent {right} is too large.")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        return _FUNCTIONS[node.func.id](*(_eval(a) for a in node.args))
    allowed = ", ".join(sorted(_FUNCTIONS))
    raise CalculatorError(
        f"Unsupported element {ast.unparse(node)!r}. Use numbers, + - * / // % **, "
        f"parentheses, pi, e and the functions {allowed}."
    )


@tool
def calculator(expression: str) -> float | int:
    """Evaluate an arithmetic expression exactly: numbers, + - * / ** %, parentheses,
    sqrt, log, sin, cos, round, pi and e.

    Args:
        expression: the arithmetic expression to compute, written with the request's numbers.
    """
    result = evaluate(expression)
    if isinstance(result, float) and result.is_integer() and abs(result) < 1e15:
        return int(result)
    return round(result, 10) if isinstance(result, float) else result
