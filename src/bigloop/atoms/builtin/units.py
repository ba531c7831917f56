"""Unit conversion between common units of length, mass, volume, time, speed, data, temperature."""

from __future__ import annotations

from bigloop.atoms.tool import tool

# Factor to the dimension's base unit (metre, kilogram, litre, second, m/s, byte).
_FACTORS: dict[str, tuple[str, float]] = {}
_UNITS = {
    "length": {
        ("m", "meter", "meters", "metre", "metres"): 1.0,
        ("km", "kilometer", "kilometers", "kilometre", "kilometres"): 1000.0,
        ("cm", "centimeter", "centimeters"): 0.01,
        ("mm", "millimeter", "millimeters"): 0.001,
        ("mi", "mile", "miles"): 1609.344,
        ("yd", "yard", "yards"): 0.9144,
        ("ft", "foot", "feet"): 0.3048,
        ("in", "inch", "inches"): 0.0254,
        ("nmi", "nautical mile", "nautical miles"): 1852.0,
    },
    "area": {
        ("m2", "m²", "square meter", "square meters", "sq m"): 1.0,
        ("km2", "km²", "square kilometer", "square kilometers", "sq km"): 1e6,
        ("ft2", "ft²", "square foot", "square feet", "sq ft"): 0.09290304,
        ("mi2", "mi²", "square mile", "square miles", "sq mi"): 2589988.110336,
        ("ha", "hectare", "hectares"): 1e4,
        ("acre", "acres"): 4046.8564224,
    },
    "mass": {
        ("kg", "kilogram", "kilograms"): 1.0,
        ("g", "gram", "grams"): 0.001,
        ("mg", "milligram", "milligrams"): 1e-6,
        ("t", "tonne", "tonnes", "metric ton"): 1000.0,
        ("lb", "lbs", "pound", "pounds"): 0.45359237,
        ("oz", "ounce", "ounces"): 0.028349523125,
        ("st", "stone", "stones"): 6.35029318,
    },
    "volume": {
        ("l", "liter", "liters", "litre", "litres"): 1.0,
        ("ml", "milliliter", "milliliters"): 0.001,
        ("gal", "gallon", "gallons", "us gallon"): 3.785411784,
        ("qt", "quart", "quarts"): 0.946352946,
        ("pt", "pint", "pints"): 0.473176473,
        ("cup", "cups"): 0.2365882365,
        ("m3", "cubic meter", "cubic meters"): 1000.0,
        ("fl oz", "fluid ounce", "fluid ounces", "floz"): 0.0295735295625,
        ("tbsp", "tablespoon", "tablespoons"): 0.01478676478125,
        ("tsp", "teaspoon", "teaspoons"): 0.00492892159375,
    },
    "time": {
        ("s", "sec", "second", "seconds"): 1.0,
        ("min", "minute", "minutes"): 60.0,
        ("h", "hr", "hour", "hours"): 3600.0,
        ("day", "days"): 86400.0,
        ("week", "weeks"): 604800.0,
        ("year", "years", "yr"): 365.25 * 86400.0,
        ("month", "months"): 365.25 * 86400.0 / 12,
    },
    "speed": {
        ("m/s", "meters per second", "metres per second"): 1.0,
        ("km/h", "kph", "kmh", "kilometers per hour", "km per hour", "kilometres per hour"): (
            1000 / 3600
        ),
        ("mph", "miles per hour", "mile per hour", "mi/h", "miles/hour"): 1609.344 / 3600,
        ("knot", "knots", "kn"): 1852 / 3600,
    },
    "data": {
        ("b", "byte", "bytes"): 1.0,
        ("kb", "kilobyte", "kilobytes"): 1e3,
        ("mb", "megabyte", "megabytes"): 1e6,
        ("gb", "gigabyte", "gigabytes"): 1e9,
        ("kib", "kibibyte", "kibibytes"): 1024.0,
        ("mib", "mebibyte", "mebibytes"): 1024.0**2,
        ("gib", "gibibyte"): 1024.0**3,
        ("tb", "terabyte", "terabytes"): 1e12,
        ("tib", "tebibyte"): 1024.0**4,
    },
}
for _dimension, _table in _UNITS.items():
    for _names, _factor in _table.items():
        for _name in _names:
            _FACTORS[_name] = (_dimension, _factor)
_TEMPERATURE = {
    "c": "c",
    "celsius": "c",
    "°c": "c",
    "degrees celsius": "c",
    "degree celsius": "c",
    "deg c": "c",
    "degrees c": "c",
    "f": "f",
    "fahrenheit": "f",
    "°f": "f",
    "degrees fahrenheit": "f",
    "degree fahrenheit": "f",
    "deg f": "f",
    "degrees f": "f",
    "k": "k",
    "kelvin": "k",
}


def _unit(name: str) -> str:
    return " ".join(name.strip().lower().rstrip(".").split())


def convert(value: float, from_unit: str, to_unit: str) -> float:
    src, dst = _unit(from_unit), _unit(to_unit)
    if src in _TEMPERATURE and dst in _TEMPERATURE:
        return _from_kelvin(_to_kelvin(value, _TEMPERATURE[src]), _TEMPERATURE[dst])
    for unit in (src, dst):
        if unit not in _FACTORS:
            known = ", ".join(
                sorted({n for names in _UNITS.values() for t in names for n in t[:2]})
            )
            raise ValueError(f"Unknown unit {unit!r}. Known units include: {known}, C, F, K.")
    (d1, f1), (d2, f2) = _FACTORS[src], _FACTORS[dst]
    if d1 != d2:
        raise ValueError(f"Cannot convert {d1} ({from_unit}) to {d2} ({to_unit}).")
    return value * f1 / f2


def _to_kelvin(value: float, unit: str) -> float:
    return {"c": value + 273.15, "f": (value - 32) * 5 / 9 + 273.15, "k": value}[unit]


def _from_kelvin(value: float, unit: str) -> float:
    return {"c": value - 273.15, "f": (value - 273.15) * 9 / 5 + 32, "k": value}[unit]


@tool
def convert_units(value: float, from_unit: str, to_unit: str) -> float:
    """Convert a quantity from one unit to another: length (km, miles, feet, inches,
    nautical miles), area (square meters, acres, hectares), mass (kg, pounds, ounces,
    stone, tonnes), volume (liters, gallons, cups, fluid ounces), time (seconds to years),
    speed (km/h, mph, knots), data size (bytes to terabytes) and temperature (Celsius,
    Fahrenheit, Kelvin), e.g. 3 miles to km, 100 F to C, 2 lb to kg.

    Args:
        value: the number to convert.
        from_unit: the unit of the value, e.g. "mi", "kg", "F".
        to_unit: the unit wanted, e.g. "km", "lb", "C".
    """
    return float(f"{convert(value, from_unit, to_unit):.12g}")
