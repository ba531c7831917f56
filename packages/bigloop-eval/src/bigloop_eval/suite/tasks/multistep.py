"""Tasks that need 2–5 calls, a value from one passed to the next."""

from __future__ import annotations

import datetime as dt

from ..checks import Check, date, every, number, text
from ..data import PROJECTS, shop
from ..task import CUSTOM, DB, DEFAULT, FILES, Solve, Task, Toolbox
from ..tools import PRODUCE, SHIPPING, STOCKS, USD_RATES, WEATHER
from .units import INCH_M, MILE_M, POUND_KG

D = dt.date.fromisoformat


def _task(id: str, text: str, tools: tuple[str, ...], check: Check, solve: Solve) -> Task:
    return Task(id=id, category="multistep", text=text, tools=tools, check=check, solve=solve)


def _february_miles(box: Toolbox) -> object:
    days = box("days_between", start_date="2024-02-01", end_date="2024-03-01")
    km = box("calculator", expression=f"5 * {days}")
    return box("convert_units", value=km, from_unit="km", to_unit="mi")


def _weekday_after(start: str, days: int) -> Solve:
    def solve(box: Toolbox) -> object:
        day = box("add_days", date=start, days=days)
        return f"{day} {box('weekday', date=day)}"

    return solve


def _atlas_days(box: Toolbox) -> object:
    readme = box("read_file", path="projects/atlas/README.md")
    fields = dict(line.split(": ", 1) for line in readme.splitlines() if ": " in line)
    return box("days_between", start_date=fields["Start"], end_date=fields["Deadline"])


def _march_with_vat(box: Toolbox) -> object:
    total = box(
        "sql_query",
        query="SELECT SUM(i.quantity * i.unit_price) FROM order_items i JOIN orders o "
        "ON o.id = i.order_id WHERE o.order_date LIKE '2024-03-%'",
    )["rows"][0][0]
    return round(box("calculator", expression=f"{total} * 1.2"), 2)


def _warmer(box: Toolbox) -> object:
    rome, lima = box("weather", city="Rome"), box("weather", city="Lima")
    warmer = "Lima" if lima["temperature_c"] > rome["temperature_c"] else "Rome"
    difference = box(
        "calculator", expression=f"abs({lima['temperature_c']} - {rome['temperature_c']})"
    )
    return f"{warmer} by {difference}"


_atlas = next(p for p in PROJECTS if p.name == "atlas")
_march_total = sum(
    i.quantity * i.unit_price
    for i in shop().items
    if next(o for o in shop().orders if o.id == i.order_id).order_date[:7] == "2024-03"
)
_lima, _rome = WEATHER["lima"][0], WEATHER["rome"][0]
_day_90 = D("2024-03-15") + dt.timedelta(days=90)
_day_17 = D("2024-12-20") + dt.timedelta(days=2 * 7 + 3)
_feb_days = (D("2024-03-01") - D("2024-02-01")).days

TASKS = [
    _task(
        "multi-001",
        "I run 5 km every day for the whole month of February 2024. How many miles is that "
        "in total?",
        DEFAULT,
        number(5 * _feb_days * 1000 / MILE_M),
        _february_miles,
    ),
    _task(
        "multi-002",
        "What day of the week is 90 days after 2024-03-15?",
        DEFAULT,
        text(_day_90.strftime("%A")),
        _weekday_after("2024-03-15", 90),
    ),
    _task(
        "multi-003",
        "How tall is someone who is 6 ft 2 in, in centimeters? Round to the nearest centimeter.",
        DEFAULT,
        number((6 * 12 + 2) * INCH_M * 100, places=0),
        lambda box: round(
            box("convert_units", value=6, from_unit="ft", to_unit="cm")
            + box("convert_units", value=2, from_unit="in", to_unit="cm")
        ),
    ),
    _task(
        "multi-004",
        "What do 40 shares of ACME cost in euros? Round to the cent.",
        CUSTOM,
        number(40 * STOCKS["ACME"] * USD_RATES["EUR"], places=2),
        lambda box: round(
            40 * box("stock_price", symbol="ACME") * box("exchange_rate", base="USD", quote="EUR"),
            2,
        ),
    ),
    _task(
        "multi-005",
        "How much does it cost to ship a 4.4 lb parcel to Europe? Round to the cent.",
        CUSTOM,
        number(SHIPPING["europe"][0] + SHIPPING["europe"][1] * 4.4 * POUND_KG, places=2),
        lambda box: box(
            "shipping_cost",
            weight_kg=box("convert_units", value=4.4, from_unit="lb", to_unit="kg"),
            zone="europe",
        ),
    ),
    _task(
        "multi-006",
        "What is the temperature in Oslo right now, in Fahrenheit?",
        CUSTOM,
        number(WEATHER["oslo"][0] * 9 / 5 + 32),
        lambda box: box(
            "convert_units",
            value=box("weather", city="Oslo")["temperature_c"],
            from_unit="C",
            to_unit="F",
        ),
    ),
    _task(
        "multi-007",
        "How many days are there from the start of the atlas project to its deadline? Both "
        "dates are in its README.",
        (*DEFAULT, FILES),
        number((D(_atlas.deadline) - D(_atlas.start)).days),
        _atlas_days,
    ),
    _task(
        "multi-008",
        "What is the total value of all orders placed in March 2024, whatever their status, "
        "plus 20% VAT? Round to the cent.",
        (*DEFAULT, DB),
        number(_march_total * 1.2, places=2),
        _march_with_vat,
    ),
    _task(
        "multi-009",
        "What date is 2 weeks and 3 days after 2024-12-20, and what day of the week is that?",
        DEFAULT,
        every(date(_day_17.isoformat()), text(_day_17.strftime("%A"))),
        _weekday_after("2024-12-20", 17),
    ),
    _task(
        "multi-010",
        "How many days are there between 2024-01-15 and 2024-03-01, and how many weeks is "
        "that? Round the weeks to one decimal.",
        DEFAULT,
        every(
            number((D("2024-03-01") - D("2024-01-15")).days),
            number((D("2024-03-01") - D("2024-01-15")).days / 7, places=1),
        ),
        lambda box: (
            f"{(n := box('days_between', start_date='2024-01-15', end_date='2024-03-01'))} "
            f"days, {round(box('calculator', expression=f'{n} / 7'), 1)} weeks"
        ),
    ),
    _task(
        "multi-011",
        "How many euros and how many British pounds is 10,000 Japanese yen? Round both to "
        "the cent.",
        CUSTOM,
        every(
            number(10_000 * USD_RATES["EUR"] / USD_RATES["JPY"], places=2),
            number(10_000 * USD_RATES["GBP"] / USD_RATES["JPY"], places=2),
        ),
        lambda box: (
            f"{round(10_000 * box('exchange_rate', base='JPY', quote='EUR'), 2)} EUR, "
            f"{round(10_000 * box('exchange_rate', base='JPY', quote='GBP'), 2)} GBP"
        ),
    ),
    _task(
        "multi-012",
        "Which is warmer right now, Rome or Lima, and by how many degrees Celsius?",
        CUSTOM,
        every(text("Lima" if _lima > _rome else "Rome"), number(abs(_lima - _rome))),
        _warmer,
    ),
    _task(
        "multi-013",
        "A marathon is 26.2 miles. At 5 minutes per kilometer, how many minutes does it take? "
        "Round to the nearest minute.",
        DEFAULT,
        number(26.2 * MILE_M / 1000 * 5, places=0),
        lambda box: round(
            box(
                "calculator",
                expression=f"{box('convert_units', value=26.2, from_unit='mi', to_unit='km')} * 5",
            )
        ),
    ),
    _task(
        "multi-014",
        "At the market I buy 2.5 kg of apples and 1.5 kg of cherries. What do I pay in total?",
        CUSTOM,
        number(2.5 * PRODUCE["apples"] + 1.5 * PRODUCE["cherries"]),
        lambda box: box(
            "calculator",
            expression=f"2.5 * {box('produce_price', item='apples')} + "
            f"1.5 * {box('produce_price', item='cherries')}",
        ),
    ),
    _task(
        "multi-015",
        "If I fly out on 2024-12-28 and stay for 10 nights, on which day of the week do I fly "
        "back?",
        DEFAULT,
        text((D("2024-12-28") + dt.timedelta(days=10)).strftime("%A")),
        _weekday_after("2024-12-28", 10),
    ),
]
