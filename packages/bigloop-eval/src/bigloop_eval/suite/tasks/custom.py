"""The user's own tools (`tools.py`): lookups in their tables, sometimes with arithmetic.
Expected answers come from the tables; `solve` calls the tools."""

from __future__ import annotations

from ..checks import Check, all_of, every, number, text
from ..task import CUSTOM, Solve, Task
from ..tools import PRODUCE, SHIPPING, STAFF, STOCKS, USD_RATES, VAT, WEATHER


def _rate(base: str, quote: str) -> float:
    return USD_RATES[quote] / USD_RATES[base]


def _task(id: str, text: str, check: Check, solve: Solve) -> Task:
    return Task(id=id, category="custom_tools", text=text, tools=CUSTOM, check=check, solve=solve)


TASKS = [
    _task(
        "custom-001",
        "What do 40 shares of ACME cost?",
        number(40 * STOCKS["ACME"]),
        lambda box: 40 * box("stock_price", symbol="ACME"),
    ),
    _task(
        "custom-002",
        "How many euros do I get for 250 US dollars? Round to the cent.",
        number(250 * _rate("USD", "EUR"), places=2),
        lambda box: round(250 * box("exchange_rate", base="USD", quote="EUR"), 2),
    ),
    _task(
        "custom-003",
        "What's the weather like in Tokyo right now?",
        every(text(WEATHER["tokyo"][1], "rainy", "raining"), number(WEATHER["tokyo"][0])),
        lambda box: box("weather", city="Tokyo"),
    ),
    _task(
        "custom-004",
        "How much does it cost to ship a 2.5 kg parcel within the country?",
        number(SHIPPING["domestic"][0] + SHIPPING["domestic"][1] * 2.5),
        lambda box: box("shipping_cost", weight_kg=2.5, zone="domestic"),
    ),
    _task(
        "custom-005",
        "What is the VAT rate in Italy?",
        number(VAT["italy"]),
        lambda box: box("vat_rate", country="Italy"),
    ),
    _task(
        "custom-006",
        "What do 3 kg of cherries cost at the market?",
        number(3 * PRODUCE["cherries"]),
        lambda box: 3 * box("produce_price", item="cherries"),
    ),
    _task(
        "custom-007",
        "What is Tom Becker's phone extension?",
        number(STAFF["tom becker"][1]),
        lambda box: box("employee_lookup", name="Tom Becker")["extension"],
    ),
    _task(
        "custom-008",
        "What is Priya Patel's email address?",
        text(STAFF["priya patel"][0]),
        lambda box: box("employee_lookup", name="Priya Patel")["email"],
    ),
    _task(
        "custom-009",
        "How much is one share of UMBRL worth in British pounds? Round to the cent.",
        number(STOCKS["UMBRL"] * _rate("USD", "GBP"), places=2),
        lambda box: round(
            box("stock_price", symbol="UMBRL") * box("exchange_rate", base="USD", quote="GBP"), 2
        ),
    ),
    _task(
        "custom-010",
        "An item costs 120 EUR before tax. What does it cost in Sweden including VAT?",
        number(120 * (1 + VAT["sweden"] / 100)),
        lambda box: 120 * (1 + box("vat_rate", country="Sweden") / 100),
    ),
    _task(
        "custom-011",
        "How many Swedish kronor do I get for 75 Swiss francs? Round to the cent.",
        number(75 * _rate("CHF", "SEK"), places=2),
        lambda box: round(75 * box("exchange_rate", base="CHF", quote="SEK"), 2),
    ),
    _task(
        "custom-012",
        "How humid is it in Lima right now, in percent?",
        number(WEATHER["lima"][2]),
        lambda box: box("weather", city="Lima")["humidity"],
    ),
    _task(
        "custom-013",
        "How much does it cost to ship a 12 kg parcel worldwide?",
        number(SHIPPING["world"][0] + SHIPPING["world"][1] * 12),
        lambda box: box("shipping_cost", weight_kg=12, zone="world"),
    ),
    _task(
        "custom-014",
        "Where is Ana Souza's office?",
        all_of(STAFF["ana souza"][2].split(", ")),
        lambda box: box("employee_lookup", name="Ana Souza")["office"],
    ),
    _task(
        "custom-015",
        "What do 10 shares of GLOBX and 10 shares of WAYNE cost together?",
        number(10 * STOCKS["GLOBX"] + 10 * STOCKS["WAYNE"]),
        lambda box: (
            10 * box("stock_price", symbol="GLOBX") + 10 * box("stock_price", symbol="WAYNE")
        ),
    ),
]
