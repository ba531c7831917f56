"""Files in the generated folder tree. Expected answers come from the generator's
structures; `solve` finds them through the real file tools."""

from __future__ import annotations

import re

from ..checks import Check, all_of, date, number, text
from ..data import (
    BUDGET_APPROVED,
    KUMQUAT_FILE,
    PROJECTS,
    RECIPES,
    TODO,
    WIFI_PASSWORD,
    expenses,
    tree,
)
from ..task import DEFAULT, FILES, Solve, Task, Toolbox


def _field(box: Toolbox, path: str, name: str) -> str:
    """The value of a "Name: value" line of a file."""
    found = re.search(rf"^{name}: (.*)$", box("read_file", path=path), re.MULTILINE)
    if found is None:
        raise ValueError(f"{path} has no {name!r} line.")
    return found.group(1).strip()


def _short(recipe_file: str) -> str:
    return recipe_file.removesuffix(".md").replace("_", " ")


def _task(id: str, text: str, check: Check, solve: Solve) -> Task:
    return Task(
        id=id, category="files", text=text, tools=(*DEFAULT, FILES), check=check, solve=solve
    )


def _recipes(box: Toolbox) -> list[str]:
    files: list[str] = box("list_files", pattern="recipes/*.md")
    return files


def _active(box: Toolbox) -> str:
    readmes = box("list_files", pattern="projects/*/README.md")
    return ", ".join(p.split("/")[1] for p in readmes if _field(box, p, "Status") == "active")


def _longest(box: Toolbox) -> str:
    minutes = {p: int(_field(box, p, "Total time").split()[0]) for p in _recipes(box)}
    return _short(max(minutes, key=minutes.__getitem__).removeprefix("recipes/"))


def _groceries(box: Toolbox) -> float:
    rows = box("read_file", path="data/expenses.csv").splitlines()[1:]
    amounts = [r.split(",")[2] for r in rows if r.split(",")[1] == "groceries"]
    return float(box("calculator", expression=" + ".join(amounts)))


_borealis = next(p for p in PROJECTS if p.name == "borealis")
_cobalt = next(p for p in PROJECTS if p.name == "cobalt")
_pancakes = next(r for r in RECIPES if r.file == "pancakes.md")
_tart = next(r for r in RECIPES if r.file == "lemon_tart.md")
_notes = sorted(p for p in tree() if p.startswith("notes/"))

TASKS = [
    _task(
        "files-001",
        "Which file mentions the word 'kumquat'?",
        all_of([KUMQUAT_FILE.rsplit("/", 1)[1]]),
        lambda box: box("search_files", text="kumquat")[0].split(":")[0],
    ),
    _task(
        "files-002",
        "How many recipes are in my recipes folder?",
        number(len(RECIPES)),
        lambda box: len(_recipes(box)),
    ),
    _task(
        "files-003",
        "Which of my projects have the status 'active'? Each project has a README.md.",
        all_of(
            [p.name for p in PROJECTS if p.status == "active"],
            forbid=[p.name for p in PROJECTS if p.status != "active"],
        ),
        _active,
    ),
    _task(
        "files-004",
        "Who owns the borealis project?",
        text(_borealis.owner),
        lambda box: _field(box, "projects/borealis/README.md", "Owner"),
    ),
    _task(
        "files-005",
        "How many eggs do I need for my pancake recipe?",
        number(float(dict(_pancakes.ingredients)["eggs"])),
        lambda box: _field(box, "recipes/pancakes.md", "- eggs"),
    ),
    _task(
        "files-006",
        "At what oven temperature, in °C, does my lemon tart bake?",
        number(_tart.oven_c or 0),
        lambda box: _field(box, "recipes/lemon_tart.md", "Oven").split()[0],
    ),
    _task(
        "files-007",
        "What is the deadline of the cobalt project?",
        date(_cobalt.deadline),
        lambda box: _field(box, "projects/cobalt/README.md", "Deadline"),
    ),
    _task(
        "files-008",
        "How many items are on my to-do list in notes/todo.txt?",
        number(len(TODO)),
        lambda box: len(box("read_file", path="notes/todo.txt").splitlines()),
    ),
    _task(
        "files-009",
        "What budget was approved at the team meeting on 12 March 2024?",
        number(BUDGET_APPROVED),
        lambda box: box("search_files", text="budget approved")[0],
    ),
    _task(
        "files-010",
        "How much did I spend on groceries in total, according to data/expenses.csv? "
        "Round to the cent.",
        number(sum(a for _, c, a in expenses() if c == "groceries"), places=2),
        lambda box: round(_groceries(box), 2),
    ),
    _task(
        "files-011",
        "List the files in my notes folder.",
        all_of(
            [p.removeprefix("notes/") for p in _notes],
            forbid=[r.file for r in RECIPES],
        ),
        lambda box: ", ".join(box("list_files", pattern="notes/*")),
    ),
    _task(
        "files-012",
        "Which of my recipes takes the longest to make?",
        text(_short(max(RECIPES, key=lambda r: r.minutes).file)),
        _longest,
    ),
    _task(
        "files-013",
        "What is the Wi-Fi password? I wrote it down somewhere in my notes.",
        text(WIFI_PASSWORD),
        lambda box: box("search_files", text="password")[0],
    ),
    _task(
        "files-014",
        "How many expense entries are in data/expenses.csv, not counting the header line?",
        number(len(expenses())),
        lambda box: len(box("read_file", path="data/expenses.csv").splitlines()) - 1,
    ),
    _task(
        "files-015",
        "Which of my recipes are vegetarian?",
        all_of(
            [_short(r.file) for r in RECIPES if r.vegetarian],
            forbid=[_short(r.file) for r in RECIPES if not r.vegetarian],
        ),
        lambda box: ", ".join(
            _short(p.removeprefix("recipes/"))
            for p in _recipes(box)
            if _field(box, p, "Tags") == "vegetarian"
        ),
    ),
    _task(
        "files-016",
        "How many of my recipes use eggs?",
        number(sum("eggs" in dict(r.ingredients) for r in RECIPES)),
        lambda box: len({h.split(":")[0] for h in box("search_files", text="- eggs:")}),
    ),
]
