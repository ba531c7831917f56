"""Custom user tools: the kind of small typed functions a user writes around their own
data. Each answers from a fixed table, so results are reproducible; the tables are public
so tasks compute their expected answers from them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from bigloop.atoms.tool import Tool, tool

USD_RATES = {
    "USD": 1.0,
    "EUR": 0.92,
    "GBP": 0.79,
    "JPY": 151.6,
    "CHF": 0.9,
    "CAD": 1.36,
    "AUD": 1.52,
    "SEK": 10.7,
}
"""Units of each currency one US dollar buys."""

STOCKS = {"ACME": 12.5, "GLOBX": 84.3, "INITECH": 41.75, "UMBRL": 230.1, "WAYNE": 17.8}
"""Latest price of each stock, in US dollars."""

SHIPPING = {"domestic": (4.9, 1.2), "europe": (9.5, 3.4), "world": (19.0, 7.25)}
"""Base fee and fee per kilogram, in euros, for each shipping zone."""

WEATHER = {
    "oslo": (-3.0, "snow", 86),
    "rome": (14.5, "sunny", 55),
    "cairo": (27.0, "clear", 30),
    "lima": (19.5, "overcast", 78),
    "tokyo": (9.0, "rain", 71),
    "toronto": (-8.5, "windy", 64),
}
"""Current temperature (°C), conditions and humidity (%) per city."""

VAT = {"germany": 19.0, "france": 20.0, "spain": 21.0, "italy": 22.0, "sweden": 25.0, "japan": 10.0}
"""Standard VAT rate in percent per country."""

PRODUCE = {"apples": 2.8, "bananas": 1.9, "cherries": 9.5, "tomatoes": 3.2, "potatoes": 1.1}
"""Price per kilogram, in euros, at the market."""

STAFF = {
    "priya patel": ("priya.patel@example.com", 4411, "Building B, room 210"),
    "tom becker": ("tom.becker@example.com", 4187, "Building A, room 105"),
    "ana souza": ("ana.souza@example.com", 4530, "Building C, room 12"),
    "li wei": ("li.wei@example.com", 4302, "Building A, room 318"),
}
"""Email, phone extension and office per employee."""


def _known(table: Mapping[str, object], key: str, what: str) -> str:
    found = key.strip().lower()
    for name in table:
        if name.lower() == found:
            return name
    raise ValueError(f"Unknown {what} {key!r}; known: {', '.join(table)}.")


@tool
def exchange_rate(base: str, quote: str) -> float:
    """How many units of the `quote` currency one unit of the `base` currency buys.

    Args:
        base: ISO code of the currency converted from, e.g. "USD".
        quote: ISO code of the currency converted to, e.g. "EUR".
    """
    b = _known(USD_RATES, base.upper(), "currency")
    q = _known(USD_RATES, quote.upper(), "currency")
    return round(USD_RATES[q] / USD_RATES[b], 6)


@tool
def stock_price(symbol: str) -> float:
    """Latest price of one share of a stock, in US dollars.

    Args:
        symbol: ticker symbol, e.g. "ACME".
    """
    return STOCKS[_known(STOCKS, symbol, "symbol")]


@tool
def shipping_cost(weight_kg: float, zone: Literal["domestic", "europe", "world"]) -> float:
    """Price in euros of shipping one parcel.

    Args:
        weight_kg: the parcel's weight in kilograms.
        zone: where it goes: "domestic", "europe" or "world".
    """
    base, per_kg = SHIPPING[zone]
    return round(base + per_kg * weight_kg, 2)


@tool
def weather(city: str) -> dict[str, float | str]:
    """Current weather in a city: temperature in °C, conditions and humidity in %.

    Args:
        city: the city's name, e.g. "Rome".
    """
    temperature, conditions, humidity = WEATHER[_known(WEATHER, city, "city")]
    return {"temperature_c": temperature, "conditions": conditions, "humidity": humidity}


@tool
def vat_rate(country: str) -> float:
    """Standard VAT (sales tax) rate of a country, in percent.

    Args:
        country: the country's name in English, e.g. "Germany".
    """
    return VAT[_known(VAT, country, "country")]


@tool
def produce_price(item: str) -> float:
    """Market price of fruit or vegetables, in euros per kilogram.

    Args:
        item: the produce, plural, e.g. "apples".
    """
    return PRODUCE[_known(PRODUCE, item, "item")]


@tool
def employee_lookup(name: str) -> dict[str, str | int]:
    """Contact details of a colleague: email, phone extension and office.

    Args:
        name: the colleague's full name, e.g. "Tom Becker".
    """
    email, extension, office = STAFF[_known(STAFF, name, "employee")]
    return {"email": email, "extension": extension, "office": office}


CUSTOM_TOOLS: list[Tool] = [
    exchange_rate,
    stock_price,
    shipping_cost,
    weather,
    vat_rate,
    produce_price,
    employee_lookup,
]
