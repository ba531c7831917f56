"""Date arithmetic tools."""

from __future__ import annotations

import datetime as dt

from bigloop.atoms.tool import tool


def _parse(value: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"{value!r} is not a date in YYYY-MM-DD form.") from None


@tool
def days_between(start_date: str, end_date: str) -> int:
    """Number of days from start_date to end_date (negative if end_date is earlier).

    Args:
        start_date: the first date, YYYY-MM-DD.
        end_date: the second date, YYYY-MM-DD.
    """
    return (_parse(end_date) - _parse(start_date)).days


@tool
def add_days(date: str, days: int) -> str:
    """The date that is `days` days after `date` (use a negative number to go back).

    Args:
        date: the starting date, YYYY-MM-DD.
        days: how many days to add.
    """
    return (_parse(date) + dt.timedelta(days=days)).isoformat()


@tool
def weekday(date: str) -> str:
    """The day of the week of a date, e.g. "Monday".

    Args:
        date: the date, YYYY-MM-DD.
    """
    return _parse(date).strftime("%A")


@tool
def today() -> str:
    """Today's date, YYYY-MM-DD."""
    return dt.date.today().isoformat()
