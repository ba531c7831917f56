"""Generated training tasks for the everyday families, answers computed by the real tools.

`generate(per_family, seed, workspace)` writes new tasks like the suite's — arithmetic
as people write it, unit conversions, dates, multi-step chains, questions about files
and about a database, and requests no tool fits — with their own wording, values and
data: the files and database are a *training* workspace (`TrainingWorkspace`: servers,
pets, trips and a library), never the suite's shop or folder tree, so nothing the test
split asks about is taught. Each task's `solve` calls the real tools, in the order a
loop should call them (`suite_teach` records that order as the training targets), and
its check is the suite's own kind of check on the tools' answer.

The same `seed` gives the same tasks; task k of a family does not depend on how many
are asked for.
"""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .checks import Check, NoTool, date, every, number, text
from .task import CUSTOM, DB, DEFAULT, FILES, Category, Solve, Task, Toolbox, Workspace
from .tools import PRODUCE, SHIPPING, USD_RATES, VAT, WEATHER

FAMILIES: tuple[Category, ...] = (
    "arithmetic",
    "units",
    "dates",
    "multistep",
    "files",
    "sql",
    "no_tool",
)
PREFIX = "gen"
"""Generated task ids are "gen-<family>-<seed>-<k>": never a suite id."""


@dataclass(frozen=True, kw_only=True)
class Made:
    """What one generator makes: the request, its check and its solution."""

    text: str
    check: Check
    solve: Solve | None
    tools: tuple[str, ...] = DEFAULT


Maker = Callable[[random.Random, "TrainingData"], Made]


def generate(per_family: int, seed: int, data: TrainingData) -> list[Task]:
    """`per_family` tasks of each family in `FAMILIES`, family by family."""
    tasks = []
    for family in FAMILIES:
        makers = MAKERS[family]
        for k in range(per_family):
            rng = random.Random(f"{seed}:{family}:{k}")
            made = makers[k % len(makers)](rng, data)
            tasks.append(
                Task(
                    id=f"{PREFIX}-{family}-{seed}-{k:03d}",
                    category=family,
                    text=made.text,
                    tools=made.tools,
                    check=made.check,
                    solve=made.solve,
                )
            )
    return tasks


def _calc(expression: str) -> Solve:
    return lambda box: box("calculator", expression=expression)


def _money(rng: random.Random, low: int, high: int) -> float:
    return round(rng.uniform(low, high), rng.choice((0, 2)))


def _fmt(value: float) -> str:
    """A number as people write it: thousands separators, no trailing .0."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


# --- arithmetic -------------------------------------------------------------------------


def _percent(rng: random.Random, data: TrainingData) -> Made:
    p, n = rng.choice((5, 8, 12.5, 15, 22, 35, 40, 65)), rng.randrange(120, 9000, 10)
    ask = rng.choice(
        ("How much is {p}% of {n}?", "Work out {p} percent of {n}.", "{p}% of {n} is?")
    )
    return Made(
        text=ask.format(p=p, n=_fmt(n)), check=number(p / 100 * n), solve=_calc(f"{p} / 100 * {n}")
    )


def _discount(rng: random.Random, data: TrainingData) -> Made:
    item = rng.choice(("pair of boots", "lamp", "bike helmet", "coffee grinder", "tent"))
    price, off = _money(rng, 20, 400), rng.choice((10, 15, 20, 30, 45))
    return Made(
        text=f"The {item} I want is ${_fmt(price)} with {off}% off today. What would I pay?",
        check=number(price * (1 - off / 100)),
        solve=_calc(f"{price} * (1 - {off} / 100)"),
    )


_ON_TOP = (
    ("Our dinner came to ${base}.", "a {p}% tip", "the tip"),
    ("The {item} is priced at ${base} before sales tax, which is {p}% here.", "the tax", "the tax"),
    (
        "The hotel bill is ${base} and they add a {p}% service charge.",
        "the service charge",
        "the charge",
    ),
)


def _on_top(rng: random.Random, data: TrainingData) -> Made:
    """A percentage on top of an amount, asked either as the percentage's amount alone
    or as the total with it: the two questions people mix up."""
    said, part, short = rng.choice(_ON_TOP)
    item = rng.choice(("desk chair", "kettle", "rain jacket", "board game", "monitor"))
    base, p = _money(rng, 18, 900), rng.choice((7, 8.5, 10, 12, 15, 18, 20, 25))
    context = said.format(base=_fmt(base), p=p, item=item)
    if rng.random() < 0.5:
        ask = rng.choice((f"How much is {part} alone?", f"What does {short} by itself come to?"))
        value, expression = base * p / 100, f"round({base} * {p} / 100, 2)"
    else:
        ask = rng.choice(
            (
                f"What is the total with {part} included?",
                f"What do I pay altogether, {short} included?",
            )
        )
        value, expression = base * (1 + p / 100), f"round({base} * (1 + {p} / 100), 2)"
    return Made(
        text=f"{context} {ask} Round to the cent.",
        check=number(value, places=2),
        solve=_calc(expression),
    )


def _share(rng: random.Random, data: TrainingData) -> Made:
    people, total = rng.randint(3, 12), _money(rng, 60, 2400)
    return Made(
        text=f"{people} of us rented a cabin for ${_fmt(total)}. If we split it equally, "
        "how much does each person owe? Round to the cent.",
        check=number(total / people, places=2),
        solve=_calc(f"round({total} / {people}, 2)"),
    )


def _containers(rng: random.Random, data: TrainingData) -> Made:
    size, count = rng.choice((6, 8, 12, 30, 45)), rng.randint(50, 2000)
    thing = rng.choice((("bottles", "crate"), ("chairs", "van load"), ("students", "minibus")))
    return Made(
        text=f"One {thing[1]} takes {size} {thing[0]}. How many {thing[1]}s do I need for "
        f"{_fmt(count)} {thing[0]}?",
        check=number(-(-count // size)),
        solve=_calc(f"ceil({count} / {size})"),
    )


def _power(rng: random.Random, data: TrainingData) -> Made:
    base, exp = rng.randint(2, 19), rng.randint(3, 6)
    root = rng.randint(12, 99) ** 2
    if rng.random() < 0.5:
        return Made(
            text=f"What is {base} to the power of {exp}?",
            check=number(base**exp),
            solve=_calc(f"{base} ** {exp}"),
        )
    return Made(
        text=f"Find the square root of {_fmt(root)}.",
        check=number(root**0.5),
        solve=_calc(f"sqrt({root})"),
    )


def _growth(rng: random.Random, data: TrainingData) -> Made:
    start, rate, years = (
        rng.randrange(500, 20000, 100),
        rng.choice((2, 3.5, 4, 5, 7)),
        rng.randint(2, 12),
    )
    return Made(
        text=f"I invest ${_fmt(start)} at {rate}% a year, compounded yearly. What will it be "
        f"worth after {years} years, to the cent?",
        check=number(start * (1 + rate / 100) ** years, places=2),
        solve=_calc(f"round({start} * (1 + {rate} / 100) ** {years}, 2)"),
    )


def _mean(rng: random.Random, data: TrainingData) -> Made:
    values = [rng.randint(40, 100) for _ in range(rng.randint(3, 6))]
    listed = ", ".join(str(v) for v in values[:-1]) + f" and {values[-1]}"
    return Made(
        text=f"My test scores were {listed}. What is my average?",
        check=number(sum(values) / len(values)),
        solve=_calc(f"({' + '.join(str(v) for v in values)}) / {len(values)}"),
    )


# --- units ------------------------------------------------------------------------------

_CONVERSIONS = (
    ("km", "mi", "kilometers", "miles"),
    ("mi", "km", "miles", "kilometers"),
    ("kg", "lb", "kilograms", "pounds"),
    ("lb", "kg", "pounds", "kilograms"),
    ("l", "gal", "liters", "gallons"),
    ("cup", "ml", "cups", "milliliters"),
    ("ft", "m", "feet", "meters"),
    ("in", "cm", "inches", "centimeters"),
    ("C", "F", "degrees Celsius", "Fahrenheit"),
    ("F", "C", "degrees Fahrenheit", "Celsius"),
    ("mph", "km/h", "miles per hour", "km/h"),
    ("GB", "MB", "gigabytes", "megabytes"),
    ("acre", "ha", "acres", "hectares"),
    ("oz", "g", "ounces", "grams"),
)


def _convert(rng: random.Random, data: TrainingData) -> Made:
    src, dst, said, wanted = rng.choice(_CONVERSIONS)
    value = rng.choice((rng.randint(2, 400), round(rng.uniform(1, 90), 1)))
    places = rng.choice((None, None, 1, 2))
    ask = rng.choice(
        ("Convert {v} {s} to {w}.", "How many {w} is {v} {s}?", "{v} {s} in {w}, please.")
    ).format(v=_fmt(value), s=said, w=wanted)
    if places is not None:
        ask += f" Round to {places} decimal{'s' if places > 1 else ''}."

    src, dst = _as_said(src, said, data), _as_said(dst, wanted, data)

    def solve(box: Toolbox) -> object:
        result = box("convert_units", value=value, from_unit=src, to_unit=dst)
        return result if places is None else round(result, places)

    exact = data.box("convert_units", value=value, from_unit=src, to_unit=dst)
    return Made(text=ask, check=number(exact, places), solve=solve)


def _as_said(unit: str, said: str, data: TrainingData) -> str:
    """The unit as the request says it when the tool knows that word ("pounds", not
    "lb": the words of the request are what a call is grounded in)."""
    try:
        data.box("convert_units", value=1, from_unit=said, to_unit=unit)
    except ValueError:
        return unit
    return said


# --- dates ------------------------------------------------------------------------------


def _day(rng: random.Random) -> dt.date:
    return dt.date(2023, 1, 1) + dt.timedelta(days=rng.randint(0, 1100))


def _written(day: dt.date, rng: random.Random) -> str:
    return rng.choice(
        (day.isoformat(), f"{day:%B} {day.day}, {day.year}", f"{day.day} {day:%B} {day.year}")
    )


def _span(rng: random.Random, data: TrainingData) -> Made:
    a = _day(rng)
    b = a + dt.timedelta(days=rng.randint(5, 500))
    event = rng.choice(("my sister's visit", "the renovation", "the exhibition", "our lease"))
    return Made(
        text=f"How many days does {event} last, from {_written(a, rng)} to {_written(b, rng)}?",
        check=number((b - a).days),
        solve=lambda box: box("days_between", start_date=a.isoformat(), end_date=b.isoformat()),
    )


def _offset(rng: random.Random, data: TrainingData) -> Made:
    a, days = _day(rng), rng.randint(10, 400)
    after = a + dt.timedelta(days=days)
    return Made(
        text=f"What date is {days} days after {_written(a, rng)}?",
        check=date(after.isoformat()),
        solve=lambda box: box("add_days", date=a.isoformat(), days=days),
    )


def _which_day(rng: random.Random, data: TrainingData) -> Made:
    a = _day(rng)
    return Made(
        text=f"Which day of the week is {_written(a, rng)}?",
        check=text(f"{a:%A}"),
        solve=lambda box: box("weekday", date=a.isoformat()),
    )


# --- multi-step chains ------------------------------------------------------------------


def _weekday_later(rng: random.Random, data: TrainingData) -> Made:
    a, weeks = _day(rng), rng.randint(2, 20)
    later = a + dt.timedelta(days=7 * weeks + 2)

    def solve(box: Toolbox) -> object:
        days = box("calculator", expression=f"{weeks} * 7 + 2")
        day = box("add_days", date=a.isoformat(), days=days)
        return f"{day}, a {box('weekday', date=day)}"

    return Made(
        text=f"My parcel ships on {_written(a, rng)} and takes {weeks} weeks and 2 days. On "
        "which weekday does it arrive?",
        check=text(f"{later:%A}"),
        solve=solve,
    )


def _daily_distance(rng: random.Random, data: TrainingData) -> Made:
    a = _day(rng)
    b = a + dt.timedelta(days=rng.randint(7, 60))
    km = rng.choice((3, 4, 6, 8, 12))
    miles = data.box("convert_units", value=km * (b - a).days, from_unit="km", to_unit="mi")

    def solve(box: Toolbox) -> object:
        days = box("days_between", start_date=a.isoformat(), end_date=b.isoformat())
        total = box("calculator", expression=f"{km} * {days}")
        return box("convert_units", value=total, from_unit="km", to_unit="mi")

    return Made(
        text=f"I cycle {km} km a day from {a.isoformat()} until {b.isoformat()}. How many "
        "miles is that altogether?",
        check=number(miles),
        solve=solve,
    )


def _weight_cost(rng: random.Random, data: TrainingData) -> Made:
    pounds, per_kg = rng.randint(5, 80), rng.choice((2, 3.5, 4, 6.25))
    kg = data.box("convert_units", value=pounds, from_unit="lb", to_unit="kg")

    def solve(box: Toolbox) -> object:
        weight = box("convert_units", value=pounds, from_unit="lb", to_unit="kg")
        return round(box("calculator", expression=f"{weight} * {per_kg}"), 2)

    return Made(
        text=f"Shipping costs ${per_kg} per kilogram. What does a {pounds} lb box cost to "
        "ship? Round to the cent.",
        check=number(kg * per_kg, places=2),
        solve=solve,
    )


# Chains over a user's own tools (the suite's custom tools: rates, prices, parcels,
# weather), each a shape no suite task has: several lookups whose results one last call
# combines, so the answer is never the first result.


def _cash_in_dollars(rng: random.Random, data: TrainingData) -> Made:
    one, two = rng.sample([c for c in USD_RATES if c != "USD"], 2)
    a, b = rng.randrange(40, 900, 10), rng.randrange(40, 900, 10)
    rates = [data.box("exchange_rate", base=c, quote="USD") for c in (one, two)]

    def solve(box: Toolbox) -> object:
        first = box("exchange_rate", base=one, quote="USD")
        second = box("exchange_rate", base=two, quote="USD")
        return round(box("calculator", expression=f"{a} * {first} + {b} * {second}"), 2)

    return Made(
        text=f"Back from travelling I still have {a} {one} and {b} {two} in my wallet. "
        "How many US dollars is that altogether? Round to the cent.",
        check=number(a * rates[0] + b * rates[1], places=2),
        solve=solve,
        tools=CUSTOM,
    )


def _produce_with_vat(rng: random.Random, data: TrainingData) -> Made:
    item, country = rng.choice(sorted(PRODUCE)), rng.choice(sorted(VAT))
    kg = rng.choice((0.5, 1, 1.5, 2, 3, 4.5))
    cost = kg * PRODUCE[item] * (1 + VAT[country] / 100)

    def solve(box: Toolbox) -> object:
        price = box("produce_price", item=item)
        rate = box("vat_rate", country=country.capitalize())
        return round(box("calculator", expression=f"{kg} * {price} * (1 + {rate} / 100)"), 2)

    return Made(
        text=f"A grocer in {country.capitalize()} sells {item} at the market price plus the "
        f"country's VAT. What do {kg:g} kg cost there? Round to the cent.",
        check=number(cost, places=2),
        solve=solve,
        tools=CUSTOM,
    )


def _two_parcels(rng: random.Random, data: TrainingData) -> Made:
    zone = rng.choice(sorted(SHIPPING))
    kg, pounds = rng.choice((0.8, 1.5, 2, 3.2, 5)), rng.randint(2, 30)
    in_kg = data.box("convert_units", value=pounds, from_unit="lb", to_unit="kg")
    costs = [data.box("shipping_cost", weight_kg=w, zone=zone) for w in (kg, in_kg)]

    def solve(box: Toolbox) -> object:
        first = box("shipping_cost", weight_kg=kg, zone=zone)
        weight = box("convert_units", value=pounds, from_unit="lb", to_unit="kg")
        second = box("shipping_cost", weight_kg=weight, zone=zone)
        return round(box("calculator", expression=f"{first} + {second}"), 2)

    where = {"domestic": "within the country", "europe": "to Europe", "world": "overseas"}
    return Made(
        text=f"I'm sending two parcels {where[zone]}: one weighs {kg:g} kg, the other "
        f"{pounds} pounds. What is the shipping for both together, in euros? Round to the cent.",
        check=number(sum(costs), places=2),
        solve=solve,
        tools=CUSTOM,
    )


def _colder_in_fahrenheit(rng: random.Random, data: TrainingData) -> Made:
    one, two = rng.sample(sorted(WEATHER), 2)
    colder = min((one, two), key=lambda c: WEATHER[c][0])

    def solve(box: Toolbox) -> object:
        first = box("weather", city=one.capitalize())["temperature_c"]
        second = box("weather", city=two.capitalize())["temperature_c"]
        low = min(first, second)
        fahrenheit = box("convert_units", value=low, from_unit="C", to_unit="F")
        return f"{colder.capitalize()}, {fahrenheit:g} °F"

    return Made(
        text=f"Where is it colder at the moment, in {one.capitalize()} or in "
        f"{two.capitalize()}, and what is the temperature there in degrees Fahrenheit?",
        check=every(text(colder.capitalize()), number(WEATHER[colder][0] * 9 / 5 + 32)),
        solve=solve,
        tools=CUSTOM,
    )


def _hours_between(rng: random.Random, data: TrainingData) -> Made:
    a = _day(rng)
    b = a + dt.timedelta(days=rng.randint(2, 40))

    def solve(box: Toolbox) -> object:
        days = box("days_between", start_date=a.isoformat(), end_date=b.isoformat())
        return box("calculator", expression=f"{days} * 24")

    return Made(
        text=f"The exhibition is open around the clock from {_written(a, rng)} until "
        f"{_written(b, rng)}. How many hours is that?",
        check=number((b - a).days * 24),
        solve=solve,
    )


def _walking_hours(rng: random.Random, data: TrainingData) -> Made:
    miles, speed = rng.choice((3, 7.5, 12, 18, 26)), rng.choice((4, 4.5, 5, 6))
    km = data.box("convert_units", value=miles, from_unit="mi", to_unit="km")

    def solve(box: Toolbox) -> object:
        distance = box("convert_units", value=miles, from_unit="mi", to_unit="km")
        return round(box("calculator", expression=f"{distance} / {speed}"), 1)

    return Made(
        text=f"The trail is {miles:g} miles long and I hike at {speed:g} km per hour. How many "
        "hours will it take me? One decimal is enough.",
        check=number(km / speed, places=1),
        solve=solve,
    )


# --- files (the training workspace's folder tree) ---------------------------------------


def _server_field(rng: random.Random, data: TrainingData) -> Made:
    server = rng.choice(data.servers)
    field, asked = rng.choice(
        (
            ("Port", "which port does {n} listen on"),
            ("Owner", "who looks after the {n} server"),
            ("OS", "what operating system runs on {n}"),
        )
    )
    path = f"servers/{server.name}.txt"
    value = server.fields[field]

    def solve(box: Toolbox) -> object:
        box("search_files", text=server.name)
        return data.field(box("read_file", path=path), field)

    check = number(float(value)) if value.isdigit() else text(value)
    return Made(
        text=asked.format(n=server.name).capitalize() + "?",
        check=check,
        solve=solve,
        tools=(*DEFAULT, FILES),
    )


def _count_folder(rng: random.Random, data: TrainingData) -> Made:
    folder, noun = rng.choice((("pets", "pets"), ("servers", "servers"), ("trips", "trips")))
    files = [p for p in data.tree if p.startswith(folder + "/")]
    return Made(
        text=f"How many {noun} do I keep notes on in my {folder} folder?",
        check=number(len(files)),
        solve=lambda box: len(box("list_files", pattern=folder)),
        tools=(*DEFAULT, FILES),
    )


def _trip_days(rng: random.Random, data: TrainingData) -> Made:
    trip = rng.choice(data.trips)
    path = f"trips/{trip.name}.txt"

    def solve(box: Toolbox) -> object:
        notes = box("read_file", path=path)
        start, end = data.field(notes, "Departure"), data.field(notes, "Return")
        return box("days_between", start_date=start, end_date=end)

    return Made(
        text=f"How many days long is my {trip.name.capitalize()} trip? The dates are in {path}.",
        check=number(trip.days),
        solve=solve,
        tools=(*DEFAULT, FILES),
    )


# --- SQL (the training workspace's library database) ------------------------------------


def _sql(query: str) -> Solve:
    return lambda box: box("sql_query", query=query)["rows"][0][0]


def _books_before(rng: random.Random, data: TrainingData) -> Made:
    year = rng.randint(1950, 2015)
    query = f"SELECT COUNT(*) FROM books WHERE year < {year}"
    return Made(
        text=f"How many of the library's books came out before {year}?",
        check=number(data.scalar(query)),
        solve=_sql(query),
        tools=(*DEFAULT, DB),
    )


def _genre_pages(rng: random.Random, data: TrainingData) -> Made:
    genre = rng.choice(GENRES)
    query = f"SELECT SUM(pages) FROM books WHERE genre = '{genre}'"
    return Made(
        text=f"What is the total page count of all {genre} books in the library?",
        check=number(data.scalar(query)),
        solve=_sql(query),
        tools=(*DEFAULT, DB),
    )


def _member_loans(rng: random.Random, data: TrainingData) -> Made:
    member = rng.choice(data.members)
    query = (
        "SELECT COUNT(*) FROM loans l JOIN members m ON m.id = l.member_id "
        f"WHERE m.name = '{member}'"
    )
    return Made(
        text=f"How many loans has {member} taken out?",
        check=number(data.scalar(query)),
        solve=_sql(query),
        tools=(*DEFAULT, DB),
    )


# --- no tool ----------------------------------------------------------------------------

_KNOWN = (
    ("What is the capital of Japan?", "Tokyo"),
    ("What is the capital of Canada?", "Ottawa"),
    ("Which planet is known as the Red Planet?", "Mars"),
    ("What is the chemical symbol for iron?", "Fe"),
    ("Who wrote Pride and Prejudice?", "Austen"),
    ("What gas do plants take in from the air?", "carbon dioxide"),
    ("What language is spoken in Mexico?", "Spanish"),
    ("How many continents are there?", "seven"),
    ("Who composed the Four Seasons?", "Vivaldi"),
    ("What is the largest ocean on Earth?", "Pacific"),
)
_OPEN = (
    (
        "Write a two-line poem about the sea.",
        "Grey waves fold and unfold,\nthe sea keeps every story told.",
    ),
    ("Suggest a name for a grey kitten.", "How about Smokey?"),
    ("Give me an antonym of 'generous'.", "Stingy."),
    ("Order me a pizza with mushrooms.", "I can't place orders: none of my tools can do that."),
    (
        "Call my dentist and move my appointment.",
        "I can't make phone calls or change appointments with the tools I have.",
    ),
    (
        "Write a one-line birthday wish for a colleague.",
        "Happy birthday! Wishing you a wonderful year ahead.",
    ),
)


def _no_tool(rng: random.Random, data: TrainingData) -> Made:
    if rng.random() < 0.6:
        question, answer = rng.choice(_KNOWN)
        return Made(text=question, check=NoTool(any_of=(answer,)), solve=_reply(answer))
    request, reply = rng.choice(_OPEN)
    return Made(text=request, check=NoTool(), solve=_reply(reply))


def _reply(answer: str) -> Solve:
    """A solution that calls no tool: the answer itself."""
    return lambda box: answer


MAKERS: dict[Category, tuple[Maker, ...]] = {
    "arithmetic": (_percent, _on_top, _discount, _share, _containers, _power, _growth, _mean),
    "units": (_convert,),
    "dates": (_span, _offset, _which_day),
    "multistep": (
        _weekday_later,
        _daily_distance,
        _weight_cost,
        _cash_in_dollars,
        _produce_with_vat,
        _two_parcels,
        _colder_in_fahrenheit,
        _hours_between,
        _walking_hours,
    ),
    "files": (_server_field, _count_folder, _trip_days),
    "sql": (_books_before, _genre_pages, _member_loans),
    "no_tool": (_no_tool,),
}


# --- the training workspace -------------------------------------------------------------

GENRES = ("mystery", "history", "science", "poetry", "travel", "cooking")
_NAMES = ("atlas", "birch", "cedar", "delta", "ember", "fjord", "gale", "harbor", "iris")
_PEOPLE = (
    "Noor Haddad",
    "Tomas Berg",
    "Ama Owusu",
    "Lena Fischer",
    "Ravi Menon",
    "Chloe Martin",
    "Kenji Sato",
    "Ines Duarte",
)
_CITIES = ("kyoto", "porto", "quito", "oslo", "cusco", "hanoi", "tbilisi")


@dataclass(frozen=True, kw_only=True)
class Record:
    name: str
    fields: dict[str, str]

    @property
    def days(self) -> int:
        start, end = (dt.date.fromisoformat(self.fields[k]) for k in ("Departure", "Return"))
        return (end - start).days


class TrainingData:
    """The training workspace (its own folder tree and library database, from `seed`)
    and a toolbox over it."""

    def __init__(self, root: Path, seed: int = 0) -> None:
        rng = random.Random(f"training-workspace:{seed}")
        self.servers = [
            Record(
                name=n,
                fields={
                    "Port": str(rng.choice((22, 80, 443, 5432, 6379, 8080))),
                    "Owner": rng.choice(_PEOPLE),
                    "OS": rng.choice(("Debian 12", "Ubuntu 24.04", "Alpine 3.20")),
                },
            )
            for n in rng.sample(_NAMES, 6)
        ]
        self.trips = []
        for city in rng.sample(_CITIES, 5):
            start = dt.date(2025, 1, 1) + dt.timedelta(days=rng.randint(0, 300))
            end = start + dt.timedelta(days=rng.randint(3, 25))
            fields = {
                "Departure": start.isoformat(),
                "Return": end.isoformat(),
                "Budget": f"{rng.randrange(600, 4000, 50)} EUR",
            }
            self.trips.append(Record(name=city, fields=fields))
        pets = {
            p: rng.choice(("cat", "dog", "rabbit", "parrot"))
            for p in rng.sample(
                ("miso", "pepper", "biscuit", "juniper", "otis", "luna", "waffles"), 4
            )
        }
        self.tree = {
            **{f"servers/{s.name}.txt": _lines({"Host": s.name, **s.fields}) for s in self.servers},
            **{
                f"trips/{t.name}.txt": _lines({"Trip": t.name.capitalize(), **t.fields})
                for t in self.trips
            },
            **{
                f"pets/{name}.md": f"# {name.capitalize()}\nSpecies: {kind}\n"
                for name, kind in pets.items()
            },
        }
        self.members = list(rng.sample(_PEOPLE, 6))
        files = root / "files"
        for relative, content in self.tree.items():
            (files / relative).parent.mkdir(parents=True, exist_ok=True)
            (files / relative).write_text(content, encoding="utf-8")
        self.db = root / "library.db"
        _write_library(self.db, rng, self.members)
        self.workspace = Workspace(files=files, db=self.db)
        self.box = Toolbox(self.workspace)

    @staticmethod
    def field(notes: str, name: str) -> str:
        """The value of the "Name: value" line of `notes`."""
        return next(
            line.split(": ", 1)[1] for line in notes.splitlines() if line.startswith(f"{name}: ")
        )

    def scalar(self, query: str) -> float:
        """The one number `query` selects (computed here, not by the tools)."""
        with sqlite3.connect(self.db) as db:
            return float(db.execute(query).fetchone()[0])


def _lines(fields: dict[str, str]) -> str:
    return "".join(f"{k}: {v}\n" for k, v in fields.items())


def _write_library(path: Path, rng: random.Random, members: list[str]) -> None:
    titles = [
        f"{a} {b}"
        for a in ("The Silent", "A Winter", "Lost", "The Last", "Northern")
        for b in ("Harbor", "Garden", "Map", "Letters", "Orchard", "Engine")
    ]
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT, author TEXT, year INTEGER,"
            " pages INTEGER, genre TEXT);"
            "CREATE TABLE members (id INTEGER PRIMARY KEY, name TEXT, joined TEXT);"
            "CREATE TABLE loans (id INTEGER PRIMARY KEY, book_id INTEGER REFERENCES books(id),"
            " member_id INTEGER REFERENCES members(id), loan_date TEXT);"
        )
        db.executemany(
            "INSERT INTO books VALUES (?, ?, ?, ?, ?, ?)",
            [
                (
                    i,
                    t,
                    rng.choice(_PEOPLE),
                    rng.randint(1930, 2024),
                    rng.randint(90, 700),
                    rng.choice(GENRES),
                )
                for i, t in enumerate(titles, 1)
            ],
        )
        db.executemany(
            "INSERT INTO members VALUES (?, ?, ?)",
            [
                (i, m, f"20{rng.randint(15, 24)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}")
                for i, m in enumerate(members, 1)
            ],
        )
        db.executemany(
            "INSERT INTO loans VALUES (?, ?, ?, ?)",
            [
                (
                    i,
                    rng.randint(1, len(titles)),
                    rng.randint(1, len(members)),
                    f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                )
                for i in range(1, 121)
            ],
        )
