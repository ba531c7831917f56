"""Dates and calendars: spans, offsets and weekdays, with dates written in several ways.
No task depends on today's date."""

from __future__ import annotations

import datetime as dt

from ..checks import Check, date, number, text
from ..task import DEFAULT, Solve, Task, Toolbox

D = dt.date.fromisoformat


def _span(start: str, end: str) -> int:
    return (D(end) - D(start)).days


def _shift(start: str, days: int) -> str:
    return (D(start) + dt.timedelta(days=days)).isoformat()


def _weekday(day: str) -> str:
    return D(day).strftime("%A")


def _between(start: str, end: str) -> Solve:
    def solve(box: Toolbox) -> object:
        return box("days_between", start_date=start, end_date=end)

    return solve


def _add(start: str, days: int) -> Solve:
    def solve(box: Toolbox) -> object:
        return box("add_days", date=start, days=days)

    return solve


def _day_of_week(day: str) -> Solve:
    def solve(box: Toolbox) -> object:
        return box("weekday", date=day)

    return solve


def _task(id: str, text: str, check: Check, solve: Solve) -> Task:
    return Task(id=id, category="dates", text=text, tools=DEFAULT, check=check, solve=solve)


TASKS = [
    _task(
        "dates-001",
        "How many days are there between 2024-01-15 and 2024-03-01?",
        number(_span("2024-01-15", "2024-03-01")),
        _between("2024-01-15", "2024-03-01"),
    ),
    _task(
        "dates-002",
        "How many days are there from March 3, 2024 to July 19, 2024?",
        number(_span("2024-03-03", "2024-07-19")),
        _between("2024-03-03", "2024-07-19"),
    ),
    _task(
        "dates-003",
        "What day of the week was July 4, 1976?",
        text(_weekday("1976-07-04")),
        _day_of_week("1976-07-04"),
    ),
    _task(
        "dates-004",
        "What date is 100 days after January 1, 2025?",
        date(_shift("2025-01-01", 100)),
        _add("2025-01-01", 100),
    ),
    _task(
        "dates-005",
        "How many days does February 2100 have?",
        number(_span("2100-02-01", "2100-03-01")),
        _between("2100-02-01", "2100-03-01"),
    ),
    _task(
        "dates-006",
        "I was born on 17 May 1990. How many days old was I on 17 May 2024?",
        number(_span("1990-05-17", "2024-05-17")),
        _between("1990-05-17", "2024-05-17"),
    ),
    _task(
        "dates-007",
        "What day of the week is Christmas Day 2030?",
        text(_weekday("2030-12-25")),
        _day_of_week("2030-12-25"),
    ),
    _task(
        "dates-008",
        "My free trial starts on 2024-11-20 and ends 90 days later. On what date does it end?",
        date(_shift("2024-11-20", 90)),
        _add("2024-11-20", 90),
    ),
    _task(
        "dates-009",
        "How many weeks are there between 2024-01-01 and 2024-12-31? Round to one decimal.",
        number(_span("2024-01-01", "2024-12-31") / 7, places=1),
        lambda box: round(
            box("days_between", start_date="2024-01-01", end_date="2024-12-31") / 7, 1
        ),
    ),
    _task(
        "dates-010",
        "What date was 45 days before 2024-03-10?",
        date(_shift("2024-03-10", -45)),
        _add("2024-03-10", -45),
    ),
    _task(
        "dates-011",
        "On which day of the week did 1 January 2000 fall?",
        text(_weekday("2000-01-01")),
        _day_of_week("2000-01-01"),
    ),
    _task(
        "dates-012",
        "How many days are left in 2024 after October 15, 2024, not counting October 15 itself?",
        number(_span("2024-10-15", "2024-12-31")),
        _between("2024-10-15", "2024-12-31"),
    ),
    _task(
        "dates-013",
        "A project starts on 2024-08-19 and takes exactly 6 weeks. On what date does it end?",
        date(_shift("2024-08-19", 6 * 7)),
        _add("2024-08-19", 42),
    ),
    _task(
        "dates-014",
        "How many days passed between the moon landing on 20 July 1969 and 1 January 2000?",
        number(_span("1969-07-20", "2000-01-01")),
        _between("1969-07-20", "2000-01-01"),
    ),
    _task(
        "dates-015",
        "What weekday is 2024-02-29?",
        text(_weekday("2024-02-29")),
        _day_of_week("2024-02-29"),
    ),
    _task(
        "dates-016",
        "What day of the week was 13 June 2023?",
        text(_weekday("2023-06-13")),
        _day_of_week("2023-06-13"),
    ),
]
