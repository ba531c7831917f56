"""SQL over the generated shop database. Expected answers are computed in Python from the
generated rows; `solve` asks the same question in SQL through the real `sql_query` tool,
so the two are independent."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping
from typing import TypeVar

from ..checks import Check, all_of, number, text
from ..data import shop
from ..task import DB, DEFAULT, Solve, Task, Toolbox

K = TypeVar("K", bound=Hashable)
S = shop()
PRODUCT = {p.id: p for p in S.products}
CUSTOMER = {c.id: c for c in S.customers}
ORDER = {o.id: o for o in S.orders}
MONTHS = "January February March April May June July August September October November December"


def top(counts: Mapping[K, float]) -> K:
    """The key with the largest count.

    Raises:
        ValueError: several keys share it (the question would have no single answer).
    """
    best = max(counts.values())
    leaders = [k for k, v in counts.items() if v == best]
    if len(leaders) > 1:
        raise ValueError(f"No single answer: {leaders} tie at {best}.")
    return leaders[0]


def _scalar(query: str, places: int | None = None) -> Solve:
    def solve(box: Toolbox) -> object:
        value = box("sql_query", query=query)["rows"][0][0]
        return value if places is None else round(value, places)

    return solve


def _column(query: str) -> Solve:
    def solve(box: Toolbox) -> object:
        return ", ".join(str(r[0]) for r in box("sql_query", query=query)["rows"])

    return solve


def _task(id: str, text: str, check: Check, solve: Solve) -> Task:
    return Task(id=id, category="sql", text=text, tools=(*DEFAULT, DB), check=check, solve=solve)


def _value(order_ids: set[int]) -> float:
    return sum(i.quantity * i.unit_price for i in S.items if i.order_id in order_ids)


_units = Counter[int]()
_spent: dict[int, float] = {}
for _item in S.items:
    _units[_item.product_id] += _item.quantity
    buyer = ORDER[_item.order_id].customer_id
    _spent[buyer] = _spent.get(buyer, 0.0) + _item.quantity * _item.unit_price
_by_city = Counter(c.city for c in S.customers)
_month_2024 = Counter(int(o.order_date[5:7]) for o in S.orders if o.order_date[:4] == "2024")
_small_city = min((n, city) for city, n in _by_city.items() if n >= 3)[1]
_electronics = [p.price for p in S.products if p.category == "Electronics"]
_delivered_2024 = {o.id for o in S.orders if o.status == "delivered" and o.order_date[:4] == "2024"}

TASKS = [
    _task(
        "sql-001",
        "How many customers are in the database?",
        number(len(S.customers)),
        _scalar("SELECT COUNT(*) FROM customers"),
    ),
    _task(
        "sql-002",
        "How many of our customers live in Germany?",
        number(sum(c.country == "Germany" for c in S.customers)),
        _scalar("SELECT COUNT(*) FROM customers WHERE country = 'Germany'"),
    ),
    _task(
        "sql-003",
        "Which city do most of our customers live in?",
        text(top(_by_city)),
        _column("SELECT city FROM customers GROUP BY city ORDER BY COUNT(*) DESC LIMIT 1"),
    ),
    _task(
        "sql-004",
        "How many orders were placed in March 2024?",
        number(sum(o.order_date[:7] == "2024-03" for o in S.orders)),
        _scalar("SELECT COUNT(*) FROM orders WHERE order_date LIKE '2024-03-%'"),
    ),
    _task(
        "sql-005",
        "What is our most expensive product?",
        text(top({p.name: p.price for p in S.products})),
        _column("SELECT name FROM products ORDER BY price DESC LIMIT 1"),
    ),
    _task(
        "sql-006",
        "How many products do we sell in the Kitchen category?",
        number(sum(p.category == "Kitchen" for p in S.products)),
        _scalar("SELECT COUNT(*) FROM products WHERE category = 'Kitchen'"),
    ),
    _task(
        "sql-007",
        "What is the average price of our Electronics products? Round to two decimals.",
        number(sum(_electronics) / len(_electronics), places=2),
        _scalar("SELECT AVG(price) FROM products WHERE category = 'Electronics'", 2),
    ),
    _task(
        "sql-008",
        "What was the total revenue of delivered orders placed in 2024 (quantity times unit "
        "price)? Round to the nearest euro.",
        number(_value(_delivered_2024), places=0),
        _scalar(
            "SELECT SUM(i.quantity * i.unit_price) FROM order_items i JOIN orders o "
            "ON o.id = i.order_id WHERE o.status = 'delivered' AND o.order_date LIKE '2024%'",
            0,
        ),
    ),
    _task(
        "sql-009",
        "Which customer has spent the most money with us across all their orders?",
        text(CUSTOMER[top(_spent)].name),
        _column(
            "SELECT c.name FROM customers c JOIN orders o ON o.customer_id = c.id "
            "JOIN order_items i ON i.order_id = o.id GROUP BY c.id "
            "ORDER BY SUM(i.quantity * i.unit_price) DESC LIMIT 1"
        ),
    ),
    _task(
        "sql-010",
        "How many orders were cancelled?",
        number(sum(o.status == "cancelled" for o in S.orders)),
        _scalar("SELECT COUNT(*) FROM orders WHERE status = 'cancelled'"),
    ),
    _task(
        "sql-011",
        "Which product has sold the most units in total?",
        text(PRODUCT[top(_units)].name),
        _column(
            "SELECT p.name FROM products p JOIN order_items i ON i.product_id = p.id "
            "GROUP BY p.id ORDER BY SUM(i.quantity) DESC LIMIT 1"
        ),
    ),
    _task(
        "sql-012",
        "How many different countries do our customers come from?",
        number(len({c.country for c in S.customers})),
        _scalar("SELECT COUNT(DISTINCT country) FROM customers"),
    ),
    _task(
        "sql-013",
        "How many Yoga Mats have been ordered in total?",
        number(sum(i.quantity for i in S.items if PRODUCT[i.product_id].name == "Yoga Mat")),
        _scalar(
            "SELECT SUM(quantity) FROM order_items WHERE product_id = "
            "(SELECT id FROM products WHERE name = 'Yoga Mat')"
        ),
    ),
    _task(
        "sql-014",
        f"List the names of all our customers who live in {_small_city}.",
        all_of(
            [c.name for c in S.customers if c.city == _small_city],
            forbid=[c.name for c in S.customers if c.city != _small_city],
        ),
        _column(f"SELECT name FROM customers WHERE city = '{_small_city}'"),
    ),
    _task(
        "sql-015",
        "What is the total value of order number 42?",
        number(_value({42}), tol=0.005),
        _scalar("SELECT SUM(quantity * unit_price) FROM order_items WHERE order_id = 42", 2),
    ),
    _task(
        "sql-016",
        "In which month of 2024 did we receive the most orders?",
        text(MONTHS.split()[top(_month_2024) - 1]),
        lambda box: MONTHS.split()[
            int(
                box(
                    "sql_query",
                    query="SELECT strftime('%m', order_date) AS m FROM orders WHERE order_date "
                    "LIKE '2024%' GROUP BY m ORDER BY COUNT(*) DESC LIMIT 1",
                )["rows"][0][0]
            )
            - 1
        ],
    ),
    _task(
        "sql-017",
        "How many customers signed up during 2023?",
        number(sum(c.signup_date[:4] == "2023" for c in S.customers)),
        _scalar("SELECT COUNT(*) FROM customers WHERE signup_date LIKE '2023%'"),
    ),
    _task(
        "sql-018",
        "On average, how many units does an order contain? Round to one decimal.",
        number(sum(i.quantity for i in S.items) / len(S.orders), places=1),
        _scalar(
            "SELECT 1.0 * (SELECT SUM(quantity) FROM order_items) / (SELECT COUNT(*) FROM orders)",
            1,
        ),
    ),
]
