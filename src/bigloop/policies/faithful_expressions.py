"""`faithful_expressions`: an arithmetic argument must compute what the request's own
expression computes (a call check)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bigloop.atoms.builtin.calculator import evaluate
from bigloop.atoms.models.base import ToolCall, ToolSpec
from bigloop.policies.base import ACCEPT, Evidence, Verdict, refuse
from bigloop.trace.records import Reason


@dataclass(kw_only=True)
class FaithfulExpressions:
    """Rejects an arithmetic argument that rewrites an expression of the request.

    Small models drop parentheses: asked "(45 + 12) / 3", they write `45 + 12 / 3`. When a
    string argument is an arithmetic expression with exactly the numbers of an expression
    the user wrote, it must compute the same value; otherwise the model is shown both.
    """

    name: str = "faithful_expressions"

    def check(self, call: ToolCall, spec: ToolSpec, evidence: Evidence) -> Verdict:
        if not isinstance(call.arguments, dict):
            return ACCEPT
        for name, value in call.arguments.items():
            if not isinstance(value, str) or not _OPERATOR.search(value):
                continue
            written = _value(value)
            if written is None:
                continue
            for expression in _expressions(evidence.text):
                meant = _value(expression)
                same_numbers = sorted(_numbers(expression)) == sorted(_numbers(value))
                if meant is not None and same_numbers and abs(meant - written) > 1e-9:
                    return refuse(
                        self.name,
                        call,
                        Reason.REWRITTEN_EXPRESSION,
                        [name],
                        name=name,
                        value=value,
                        written=written,
                        expression=expression.strip(),
                        meant=meant,
                    )
        return ACCEPT


_OPERATOR = re.compile(r"[-+*/×÷^]")


_NUMBER = re.compile(r"\d+(?:\.\d+)?")


_EXPRESSION = re.compile(r"[\d(][\d\s.+\-*/×÷^()]*[\d)]")


def _expressions(text: str) -> list[str]:
    """Arithmetic the text writes: "(45 + 12) / 3" in "what is (45 + 12) / 3?"."""
    found = (m.group() for m in _EXPRESSION.finditer(text))
    return [e for e in found if _OPERATOR.search(e) and _NUMBER.search(e)]


def _numbers(text: str) -> list[float]:
    return [float(n) for n in _NUMBER.findall(text)]


def _value(expression: str) -> float | None:
    try:
        return float(evaluate(expression))
    except (ValueError, ArithmeticError, TypeError, RecursionError):
        return None
