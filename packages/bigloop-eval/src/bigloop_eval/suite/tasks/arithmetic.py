"""Arithmetic as people write it: percentages, thousands separators, word problems,
rounding asked for."""

from __future__ import annotations

import math

from ..checks import number
from ..task import DEFAULT, Solve, Task, Toolbox


def _calc(expression: str) -> Solve:
    def solve(box: Toolbox) -> object:
        return box("calculator", expression=expression)

    return solve


def _task(id: str, text: str, expected: float, expression: str, places: int | None = None) -> Task:
    return Task(
        id=id,
        category="arithmetic",
        text=text,
        tools=DEFAULT,
        check=number(expected, places),
        solve=_calc(expression),
    )


TASKS = [
    _task("arith-001", "What is 17.5% of 2,480?", 17.5 / 100 * 2480, "0.175 * 2480"),
    _task(
        "arith-002",
        "A box holds 24 eggs. How many boxes are needed for 1,000 eggs?",
        math.ceil(1000 / 24),
        "ceil(1000 / 24)",
    ),
    _task("arith-003", "What is (45 + 12) / 3?", (45 + 12) / 3, "(45 + 12) / 3"),
    _task(
        "arith-004",
        "A jacket costs $120 and is 25% off. What is the sale price?",
        120 * (1 - 25 / 100),
        "120 * 0.75",
    ),
    _task(
        "arith-005",
        "My restaurant bill is $86.40. How much is a 15% tip? Round to the cent.",
        86.40 * 15 / 100,
        "round(86.40 * 0.15, 2)",
        places=2,
    ),
    _task(
        "arith-006",
        "Split a $1,250 dinner bill evenly among 8 people. How much does each person pay?",
        1250 / 8,
        "1250 / 8",
    ),
    _task("arith-007", "What is the square root of 1,764?", math.sqrt(1764), "sqrt(1764)"),
    _task(
        "arith-008",
        "If I save $350 every month, how much will I have saved after 3 years?",
        350 * 12 * 3,
        "350 * 36",
    ),
    _task(
        "arith-009",
        "A town grew from 48,200 to 53,020 people. By what percentage did it grow? "
        "Round to one decimal place.",
        (53020 - 48200) / 48200 * 100,
        "round((53020 - 48200) / 48200 * 100, 1)",
        places=1,
    ),
    _task(
        "arith-010",
        "I invest $5,000 at 4% interest compounded yearly. What is it worth after 10 years, "
        "to the nearest cent?",
        5000 * (1 + 4 / 100) ** 10,
        "round(5000 * 1.04 ** 10, 2)",
        places=2,
    ),
    _task(
        "arith-011",
        "A recipe needs 3/4 cup of sugar per batch. How many cups do 7 batches need?",
        3 / 4 * 7,
        "3 / 4 * 7",
    ),
    _task(
        "arith-012",
        "What is 1,234,567 divided by 89, rounded to two decimal places?",
        1234567 / 89,
        "round(1234567 / 89, 2)",
        places=2,
    ),
    _task(
        "arith-013",
        "What is the average of 78, 85, 92, 67 and 88?",
        (78 + 85 + 92 + 67 + 88) / 5,
        "(78 + 85 + 92 + 67 + 88) / 5",
    ),
    _task(
        "arith-014",
        "My car uses 6.5 liters of fuel per 100 km. How many liters do I need for a 420 km trip?",
        6.5 / 100 * 420,
        "6.5 * 420 / 100",
    ),
    _task(
        "arith-015",
        "I bought 3 notebooks at $4.75 each and 2 pens at $1.20 each. How much did I spend?",
        3 * 4.75 + 2 * 1.20,
        "3 * 4.75 + 2 * 1.20",
    ),
    _task("arith-016", "What is 2 to the power of 20?", 2**20, "2 ** 20"),
    _task(
        "arith-017",
        "A TV costs €640 before 19% VAT. What does it cost with VAT?",
        640 * (1 + 19 / 100),
        "640 * 1.19",
    ),
    _task(
        "arith-018",
        "The price dropped from $80 to $68. By what percentage did it drop?",
        (80 - 68) / 80 * 100,
        "(80 - 68) / 80 * 100",
    ),
]
