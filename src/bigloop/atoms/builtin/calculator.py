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
_MAX_DIGITS = 1000  # of an integer result; floats are not limited (they overflow quickly)
_MAX_BITS = int(_MAX_DIGITS * math.log2(10))
_MAX_CHARS = 1000
_MAX_DEPTH = 100
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
    if len(text) > _MAX_CHARS:
        raise CalculatorError(
            f"The expression is too long ({len(text)} characters, limit {_MAX_CHARS}); "
            f"compute it in smaller parts."
        )
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise CalculatorError(f"Not an arithmetic expression: {text!r}") from None
    result: float | int = _eval(tree.body, 0)
    return result


def _eval(node: ast.AST, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        raise CalculatorError(
            f"The expression is nested too deeply (over {_MAX_DEPTH} levels); simplify it."
        )
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return _bounded(node.value)
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left, depth + 1), _eval(node.right, depth + 1)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        return _bounded(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand, depth + 1))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        args = [_eval(a, depth + 1) for a in node.args]
        _check_call(node.func.id, args)
        return _bounded(_FUNCTIONS[node.func.id](*args))
    allowed = ", ".join(sorted(_FUNCTIONS))
    raise CalculatorError(
        f"Unsupported element {ast.unparse(node)!r}. Use numbers, + - * / // % **, "
        f"parentheses, pi, e and the functions {allowed}."
    )


# Python's big integers are exact but a single huge operation holds the interpreter for
# minutes, where no timeout can stop it: sizes are checked before computing.


def _bounded(value: Any) -> Any:
    if isinstance(value, complex):
        raise CalculatorError(
            "The result is not a real number (a fractional power of a negative number, "
            "e.g. (-8) ** 0.5); this calculator works with real numbers only."
        )
    if isinstance(value, int) and value.bit_length() > _MAX_BITS:
        raise CalculatorError(
            f"The result is too large: an integer of about {_digits(value.bit_length())} "
            f"digits (limit {_MAX_DIGITS}). Use floats (write 2.0 instead of 2) or work "
            f"with logarithms (log10)."
        )
    return value


def _check_power(base: Any, exponent: Any) -> None:
    if not (isinstance(base, int) and isinstance(exponent, int)) or exponent <= 0:
        return  # a float power is one cheap operation (it may overflow, quickly)
    if abs(base) > 1 and exponent * math.log2(abs(base)) > _MAX_BITS:
        digits = exponent * math.log10(abs(base))
        raise CalculatorError(
            f"The result of {_short(base)} ** {_short(exponent)} is too large: an integer of "
            f"about {digits:.6g} digits (limit {_MAX_DIGITS}). Use a float base (2.0 ** ...), "
            f"simplify, or work with logarithms (log10)."
        )


def _check_call(name: str, args: list[Any]) -> None:
    if name == "factorial" and args and isinstance(args[0], int) and args[0] > 1:
        n = args[0]
        if n >= 10**15:
            raise CalculatorError(f"factorial({_short(n)}) is far too large to compute.")
        digits = math.lgamma(n + 1) / math.log(10)
        if digits >= _MAX_DIGITS:
            raise CalculatorError(
                f"factorial({n}) is too large: an integer of about {digits:.6g} digits "
                f"(limit {_MAX_DIGITS}). Work with logarithms (log10) or a smaller number."
            )
    if name == "round" and len(args) > 1 and isinstance(args[1], int):
        if abs(args[1]) > _MAX_DIGITS:
            raise CalculatorError(
                f"round() to {_short(args[1])} digits is too large a number of digits "
                f"(limit {_MAX_DIGITS})."
            )


def _digits(bits: int) -> str:
    return f"{bits * math.log10(2):.4g}"


def _short(number: int) -> str:
    """`number` for a message: itself if short, else its size."""
    if number.bit_length() <= 64:
        return str(number)
    return f"(a {_digits(number.bit_length())}-digit number)"


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
