"""Unit conversions in the units `convert_units` knows, asked the way people ask."""

from __future__ import annotations

from ..checks import number
from ..task import DEFAULT, Solve, Task, Toolbox

# Exact definitions (NIST), independent of the tool's own table.
MILE_M = 1609.344
FOOT_M = 0.3048
INCH_M = 0.0254
POUND_KG = 0.45359237
OUNCE_KG = POUND_KG / 16
STONE_KG = 14 * POUND_KG
GALLON_L = 231 * INCH_M**3 * 1000
PINT_L = GALLON_L / 8
CUP_L = GALLON_L / 16
NAUTICAL_MILE_M = 1852


def _convert(value: float, from_unit: str, to_unit: str, places: int | None = None) -> Solve:
    def solve(box: Toolbox) -> object:
        result = box("convert_units", value=value, from_unit=from_unit, to_unit=to_unit)
        return result if places is None else round(result, places)

    return solve


def _task(id: str, text: str, expected: float, solve: Solve, places: int | None = None) -> Task:
    return Task(
        id=id,
        category="units",
        text=text,
        tools=DEFAULT,
        check=number(expected, places),
        solve=solve,
    )


TASKS = [
    _task(
        "units-001",
        "How many miles is a 42.195 km marathon? Round to two decimals.",
        42.195 * 1000 / MILE_M,
        _convert(42.195, "km", "mi", 2),
        places=2,
    ),
    _task(
        "units-002",
        "Convert 350 °F to Celsius, rounded to the nearest whole degree.",
        (350 - 32) * 5 / 9,
        _convert(350, "F", "C", 0),
        places=0,
    ),
    _task("units-003", "How many liters are in 5 gallons?", 5 * GALLON_L, _convert(5, "gal", "l")),
    _task("units-004", "What is 180 lb in kilograms?", 180 * POUND_KG, _convert(180, "lb", "kg")),
    _task("units-005", "How many ounces are in 2.5 kg?", 2.5 / OUNCE_KG, _convert(2.5, "kg", "oz")),
    _task("units-006", "How many feet is 1,500 meters?", 1500 / FOOT_M, _convert(1500, "m", "ft")),
    _task(
        "units-007",
        "My car is doing 65 mph. What is that in km/h?",
        65 * MILE_M / 1000,
        _convert(65, "mph", "km/h"),
    ),
    _task(
        "units-008",
        "How many bytes are in 3.5 GiB?",
        3.5 * 2**30,
        _convert(3.5, "GiB", "bytes"),
    ),
    _task(
        "units-009",
        "How many cups are in 1.5 liters? Round to two decimals.",
        1.5 / CUP_L,
        _convert(1.5, "liters", "cups", 2),
        places=2,
    ),
    _task(
        "units-010",
        "How many seconds are there in 3.5 hours?",
        3.5 * 3600,
        _convert(3.5, "hours", "seconds"),
    ),
    _task("units-011", "What is 37 °C in Fahrenheit?", 37 * 9 / 5 + 32, _convert(37, "C", "F")),
    _task(
        "units-012",
        "I weigh 12 stone. How much is that in kilograms?",
        12 * STONE_KG,
        _convert(12, "stone", "kg"),
    ),
    _task(
        "units-013",
        "A ship sails at 20 knots. How fast is that in km/h?",
        20 * NAUTICAL_MILE_M / 1000,
        _convert(20, "knots", "km/h"),
    ),
    _task(
        "units-014",
        "Convert 2,000 mL to pints. Round to two decimals.",
        2000 / 1000 / PINT_L,
        _convert(2000, "ml", "pints", 2),
        places=2,
    ),
    _task(
        "units-015",
        "What is -40 degrees Celsius in Fahrenheit?",
        -40 * 9 / 5 + 32,
        _convert(-40, "celsius", "fahrenheit"),
    ),
    _task("units-016", "How many minutes are in a week?", 7 * 24 * 60, _convert(1, "week", "min")),
    _task(
        "units-017",
        "My internet plan caps at 500 GB a month. How many megabytes is that?",
        500 * 1000,
        _convert(500, "GB", "MB"),
    ),
    _task(
        "units-018",
        "How many kilometers is 10 nautical miles? Round to one decimal.",
        10 * NAUTICAL_MILE_M / 1000,
        _convert(10, "nautical miles", "km", 1),
        places=1,
    ),
]
