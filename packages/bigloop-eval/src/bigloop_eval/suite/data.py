"""The suite's sample data, generated (seeded, never downloaded): a shop database and a
folder tree of a person's files.

- `shop()`: customers (cities, countries, sign-up dates), products (categories, prices),
  orders (dates, statuses) and order items (quantities, unit prices) — a few hundred rows;
  `write_db` writes them to SQLite.
- `tree()`: notes, recipes, project READMEs, an expenses CSV, a travel archive; a path →
  text mapping that `write_tree` writes under a folder.

Tasks compute their expected answers from these structures with Python, so a change to
the generator changes the answers with it.
"""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from dataclasses import dataclass
from functools import cache
from pathlib import Path

SEED = 20240229

CITIES = [
    ("Berlin", "Germany", 8),
    ("Munich", "Germany", 5),
    ("Hamburg", "Germany", 4),
    ("Paris", "France", 7),
    ("Lyon", "France", 4),
    ("Madrid", "Spain", 6),
    ("Barcelona", "Spain", 5),
    ("Rome", "Italy", 5),
    ("Milan", "Italy", 4),
    ("London", "United Kingdom", 9),
    ("Manchester", "United Kingdom", 3),
    ("Amsterdam", "Netherlands", 4),
    ("Vienna", "Austria", 3),
    ("Lisbon", "Portugal", 3),
    ("Dublin", "Ireland", 2),
    ("Stockholm", "Sweden", 2),
]
FIRST = (
    "Anna Ben Clara David Elena Felix Greta Hugo Ines Jonas Karin Leo Maria Noah Olivia "
    "Paul Quentin Rosa Samuel Tara Umar Vera William Xenia Yusuf Zoe Alice Bruno Chloe "
    "Diego Emma Finn Gina Henrik Isabel Jan Lena Marco Nora Oscar"
).split()
LAST = (
    "Schmidt Dubois Garcia Rossi Smith Jansen Huber Silva Murphy Andersson Weber Martin "
    "Lopez Bianchi Brown Visser Bauer Costa Kelly Berg Fischer Laurent Fernandez Romano "
    "Taylor Bakker Gruber Santos Walsh Nilsson Wagner Bernard Ruiz Greco Wilson Mulder"
).split()
PRODUCTS = [
    ("Wireless Mouse", "Electronics", 24.99),
    ("USB-C Charger", "Electronics", 19.5),
    ("Noise-Cancelling Headphones", "Electronics", 189.0),
    ("Bluetooth Speaker", "Electronics", 59.9),
    ("HD Webcam", "Electronics", 44.0),
    ("Mechanical Keyboard", "Electronics", 89.5),
    ("Chef's Knife", "Kitchen", 49.0),
    ("Cast Iron Pan", "Kitchen", 39.95),
    ("French Press", "Kitchen", 27.5),
    ("Electric Kettle", "Kitchen", 34.99),
    ("Cutting Board", "Kitchen", 15.0),
    ("Espresso Machine", "Kitchen", 249.0),
    ("Garden Hose", "Garden", 29.9),
    ("Pruning Shears", "Garden", 18.75),
    ("Watering Can", "Garden", 12.5),
    ("Lawn Mower", "Garden", 279.0),
    ("Seed Starter Kit", "Garden", 9.99),
    ("Bird Feeder", "Garden", 22.0),
    ("Simple Suppers Cookbook", "Books", 24.0),
    ("Field Guide to Birds", "Books", 31.5),
    ("Mystery Novel", "Books", 12.99),
    ("World Atlas", "Books", 45.0),
    ("Picture Book", "Books", 9.5),
    ("Learning Python", "Books", 39.0),
    ("Building Blocks Set", "Toys", 49.99),
    ("Jigsaw Puzzle", "Toys", 16.5),
    ("Harbour Board Game", "Toys", 34.0),
    ("Plush Bear", "Toys", 14.0),
    ("Kite", "Toys", 19.99),
    ("Toy Train", "Toys", 59.0),
    ("Yoga Mat", "Sports", 25.0),
    ("Dumbbell Set", "Sports", 79.0),
    ("Running Shoes", "Sports", 119.0),
    ("Tennis Racket", "Sports", 99.0),
    ("Water Bottle", "Sports", 11.5),
    ("Road Bike", "Sports", 899.0),
]
STATUSES = [("delivered", 78), ("shipped", 8), ("cancelled", 9), ("returned", 5)]


@dataclass(frozen=True, kw_only=True)
class Customer:
    id: int
    name: str
    email: str
    city: str
    country: str
    signup_date: str


@dataclass(frozen=True, kw_only=True)
class Product:
    id: int
    name: str
    category: str
    price: float


@dataclass(frozen=True, kw_only=True)
class Order:
    id: int
    customer_id: int
    order_date: str
    status: str


@dataclass(frozen=True, kw_only=True)
class Item:
    order_id: int
    product_id: int
    quantity: int
    unit_price: float


@dataclass(frozen=True, kw_only=True)
class Shop:
    customers: tuple[Customer, ...]
    products: tuple[Product, ...]
    orders: tuple[Order, ...]
    items: tuple[Item, ...]


def _day(rng: random.Random, start: dt.date, end: dt.date) -> dt.date:
    return start + dt.timedelta(days=rng.randrange((end - start).days + 1))


@cache
def shop(customers: int = 80, orders: int = 320) -> Shop:
    """The shop's rows, the same on every call and machine."""
    rng = random.Random(SEED)
    names = rng.sample([f"{f} {last}" for f in FIRST for last in LAST], customers)
    places = rng.choices(CITIES, weights=[w for *_, w in CITIES], k=customers)
    people = tuple(
        Customer(
            id=i,
            name=name,
            email=name.lower().replace(" ", ".") + "@example.com",
            city=city,
            country=country,
            signup_date=_day(rng, dt.date(2022, 1, 1), dt.date(2024, 6, 30)).isoformat(),
        )
        for i, (name, (city, country, _)) in enumerate(zip(names, places, strict=True), 1)
    )
    products = tuple(
        Product(id=i, name=n, category=c, price=p) for i, (n, c, p) in enumerate(PRODUCTS, 1)
    )
    order_rows, item_rows = [], []
    for order_id in range(1, orders + 1):
        buyer = rng.choice(people)
        first = max(dt.date.fromisoformat(buyer.signup_date), dt.date(2023, 1, 1))
        status = rng.choices([s for s, _ in STATUSES], weights=[w for _, w in STATUSES])[0]
        day = _day(rng, first, dt.date(2024, 12, 31)).isoformat()
        order_rows.append(Order(id=order_id, customer_id=buyer.id, order_date=day, status=status))
        for product in rng.sample(products, rng.choice([1, 1, 2, 2, 3, 4])):
            quantity = rng.choices([1, 2, 3, 4, 5], weights=[55, 25, 12, 5, 3])[0]
            item_rows.append(
                Item(
                    order_id=order_id,
                    product_id=product.id,
                    quantity=quantity,
                    unit_price=product.price,
                )
            )
    return Shop(
        customers=people, products=products, orders=tuple(order_rows), items=tuple(item_rows)
    )


SCHEMA = """
CREATE TABLE customers (
  id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL,
  city TEXT NOT NULL, country TEXT NOT NULL, signup_date TEXT NOT NULL);
CREATE TABLE products (
  id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL, price REAL NOT NULL);
CREATE TABLE orders (
  id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),
  order_date TEXT NOT NULL, status TEXT NOT NULL);
CREATE TABLE order_items (
  order_id INTEGER NOT NULL REFERENCES orders(id),
  product_id INTEGER NOT NULL REFERENCES products(id),
  quantity INTEGER NOT NULL, unit_price REAL NOT NULL,
  PRIMARY KEY (order_id, product_id));
"""


def write_db(path: Path, data: Shop | None = None) -> Path:
    """Write the shop to a new SQLite file at `path`."""
    data = data or shop()
    with sqlite3.connect(path) as db:
        db.executescript(SCHEMA)
        db.executemany(
            "INSERT INTO customers VALUES (?, ?, ?, ?, ?, ?)",
            [(c.id, c.name, c.email, c.city, c.country, c.signup_date) for c in data.customers],
        )
        db.executemany(
            "INSERT INTO products VALUES (?, ?, ?, ?)",
            [(p.id, p.name, p.category, p.price) for p in data.products],
        )
        db.executemany(
            "INSERT INTO orders VALUES (?, ?, ?, ?)",
            [(o.id, o.customer_id, o.order_date, o.status) for o in data.orders],
        )
        db.executemany(
            "INSERT INTO order_items VALUES (?, ?, ?, ?)",
            [(i.order_id, i.product_id, i.quantity, i.unit_price) for i in data.items],
        )
    return path


@dataclass(frozen=True, kw_only=True)
class Recipe:
    file: str
    title: str
    serves: int
    minutes: int
    oven_c: int | None
    vegetarian: bool
    ingredients: tuple[tuple[str, str], ...]


@dataclass(frozen=True, kw_only=True)
class Project:
    name: str
    owner: str
    status: str
    start: str
    deadline: str
    budget_eur: int


RECIPES = [
    Recipe(
        file="pancakes.md",
        title="Fluffy Pancakes",
        serves=4,
        minutes=25,
        oven_c=None,
        vegetarian=True,
        ingredients=(("flour", "250 g"), ("milk", "300 ml"), ("eggs", "3"), ("sugar", "2 tbsp")),
    ),
    Recipe(
        file="lemon_tart.md",
        title="Lemon Tart",
        serves=8,
        minutes=95,
        oven_c=180,
        vegetarian=True,
        ingredients=(("flour", "200 g"), ("butter", "100 g"), ("lemons", "4"), ("eggs", "5")),
    ),
    Recipe(
        file="chili.md",
        title="Beef Chili",
        serves=6,
        minutes=150,
        oven_c=None,
        vegetarian=False,
        ingredients=(("minced beef", "750 g"), ("kidney beans", "2 cans"), ("onions", "2")),
    ),
    Recipe(
        file="banana_bread.md",
        title="Banana Bread",
        serves=10,
        minutes=80,
        oven_c=175,
        vegetarian=True,
        ingredients=(("bananas", "3"), ("flour", "280 g"), ("eggs", "2"), ("butter", "110 g")),
    ),
    Recipe(
        file="roast_chicken.md",
        title="Roast Chicken",
        serves=4,
        minutes=110,
        oven_c=200,
        vegetarian=False,
        ingredients=(("chicken", "1.6 kg"), ("garlic", "1 bulb"), ("lemons", "1")),
    ),
    Recipe(
        file="shakshuka.md",
        title="Shakshuka",
        serves=2,
        minutes=35,
        oven_c=None,
        vegetarian=True,
        ingredients=(("eggs", "4"), ("tomatoes", "800 g"), ("peppers", "2")),
    ),
]
PROJECTS = [
    Project(
        name="atlas",
        owner="Dana Kowalski",
        status="active",
        start="2024-02-05",
        deadline="2024-11-29",
        budget_eur=120_000,
    ),
    Project(
        name="borealis",
        owner="Samir Haddad",
        status="on hold",
        start="2023-09-18",
        deadline="2025-03-31",
        budget_eur=45_000,
    ),
    Project(
        name="cobalt",
        owner="Mia Lindqvist",
        status="active",
        start="2024-04-22",
        deadline="2025-01-17",
        budget_eur=78_500,
    ),
    Project(
        name="delta",
        owner="Jonas Weber",
        status="completed",
        start="2023-01-09",
        deadline="2023-10-31",
        budget_eur=32_000,
    ),
    Project(
        name="ember",
        owner="Lucia Moreno",
        status="active",
        start="2024-06-03",
        deadline="2024-12-20",
        budget_eur=56_250,
    ),
]
TODO = [
    "renew passport",
    "book dentist appointment",
    "call the plumber about the kitchen sink",
    "send the birthday card to Aunt Rosa",
    "return library books",
    "cancel the old phone contract",
    "pick up dry cleaning",
]
EXPENSE_CATEGORIES = [("groceries", 30, 120), ("transport", 3, 60), ("eating out", 12, 85)]
KUMQUAT_FILE = "archive/2021/travel/lisbon/market-notes.txt"
WIFI_PASSWORD = "maple-tiger-42"
BUDGET_APPROVED = 48_500


@cache
def expenses() -> tuple[tuple[str, str, float], ...]:
    """(date, category, amount in euros) rows of data/expenses.csv."""
    rng = random.Random(SEED + 1)
    rows = []
    for n in range(36):
        category, low, high = rng.choice(EXPENSE_CATEGORIES)
        day = dt.date(2024, 5, 1) + dt.timedelta(days=n * 2 + rng.randrange(2))
        rows.append((day.isoformat(), category, round(rng.uniform(low, high), 2)))
    return tuple(rows)


def _recipe_text(r: Recipe) -> str:
    lines = [f"# {r.title}", "", f"Serves: {r.serves}", f"Total time: {r.minutes} minutes"]
    if r.oven_c is not None:
        lines.append(f"Oven: {r.oven_c} °C")
    lines += ["Tags: " + ("vegetarian" if r.vegetarian else "meat"), "", "## Ingredients"]
    lines += [f"- {name}: {amount}" for name, amount in r.ingredients]
    return "\n".join([*lines, "", "## Method", "", "Mix, cook, enjoy."]) + "\n"


def _project_text(p: Project) -> str:
    return (
        f"# Project {p.name.capitalize()}\n\nOwner: {p.owner}\nStatus: {p.status}\n"
        f"Start: {p.start}\nDeadline: {p.deadline}\nBudget: {p.budget_eur:,} EUR\n\n"
        "See docs/ for the design notes.\n"
    )


@cache
def tree() -> dict[str, str]:
    """Path (relative, with /) → text of every file of the folder tree."""
    files = {
        "README.md": "# My files\n\nNotes, recipes, projects and receipts.\n",
        "notes/todo.txt": "".join(f"- {t}\n" for t in TODO),
        "notes/meeting-2024-03-12.md": (
            "# Team meeting, 12 March 2024\n\n- Q2 roadmap reviewed\n"
            f"- Budget approved: {BUDGET_APPROVED:,} EUR for the website relaunch\n"
            "- Next meeting in four weeks\n"
        ),
        "notes/meeting-2024-04-09.md": (
            "# Team meeting, 9 April 2024\n\n- Relaunch design signed off\n"
            "- Hiring: one backend developer\n"
        ),
        "notes/home.txt": f"Router in the hallway.\nWi-Fi password: {WIFI_PASSWORD}\n",
        "notes/ideas.md": "# Ideas\n\n- a bike trip along the Danube\n- learn to make sourdough\n",
        "data/expenses.csv": "date,category,amount\n"
        + "".join(f"{d},{c},{a:.2f}\n" for d, c, a in expenses()),
        KUMQUAT_FILE: (
            "Mercado da Ribeira, Saturday morning.\nBought figs, a jar of honey and "
            "candied kumquat for Mum.\nCoffee at the kiosk by the river.\n"
        ),
        "archive/2021/travel/lisbon/itinerary.txt": "Day 1: Alfama\nDay 2: Belém\nDay 3: Sintra\n",
        "archive/2022/receipts.txt": "Bike repair 45 EUR\nNew tyres 60 EUR\n",
    }
    files |= {f"recipes/{r.file}": _recipe_text(r) for r in RECIPES}
    files |= {f"projects/{p.name}/README.md": _project_text(p) for p in PROJECTS}
    files["projects/borealis/docs/design.md"] = "# Design\n\nThree services behind one gateway.\n"
    return files


def write_tree(root: Path) -> Path:
    """Write `tree()` under `root`."""
    for relative, content in tree().items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return root
