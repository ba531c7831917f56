"""Built-in tools: calculator, dates, units, files under a folder, read-only SQLite, and
(offered only when asked for) Python in a sandbox."""

from __future__ import annotations

from bigloop.atoms.builtin.calculator import calculator
from bigloop.atoms.builtin.dates import add_days, days_between, today, weekday
from bigloop.atoms.builtin.files import file_tools
from bigloop.atoms.builtin.python_sandbox import SandboxLimits, python_sandbox
from bigloop.atoms.builtin.sqlite import sqlite_tools
from bigloop.atoms.builtin.units import convert_units
from bigloop.atoms.tool import Tool


def default_tools() -> list[Tool]:
    """The tools `bigloop run` offers when none are named."""
    return [calculator, days_between, add_days, weekday, today, convert_units]


__all__ = [
    "SandboxLimits",
    "add_days",
    "calculator",
    "convert_units",
    "days_between",
    "default_tools",
    "file_tools",
    "python_sandbox",
    "sqlite_tools",
    "today",
    "weekday",
]
