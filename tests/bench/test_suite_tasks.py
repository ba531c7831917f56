"""The suite's tasks: enough of each kind, stable ids, a stratified split, and expected
answers the real tools agree with."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from bigloop_eval.suite import CATEGORIES, Outcome, Task, Toolbox, Workspace, assignment, split
from bigloop_eval.suite.data import shop, tree
from bigloop_eval.suite.tasks import TASKS

PREFIX = {
    "arithmetic": "arith",
    "units": "units",
    "dates": "dates",
    "sql": "sql",
    "files": "files",
    "multistep": "multi",
    "custom_tools": "custom",
    "no_tool": "notool",
    "missing_value": "missing",
}


def test_enough_tasks_of_every_category() -> None:
    counts = Counter(t.category for t in TASKS)
    assert len(TASKS) >= 120
    for category in CATEGORIES:
        assert counts[category] >= (10 if category in ("no_tool", "missing_value") else 12)


def test_ids_are_unique_and_named_by_category() -> None:
    ids = [t.id for t in TASKS]
    assert len(set(ids)) == len(ids)
    for t in TASKS:
        assert re.fullmatch(rf"{PREFIX[t.category]}-\d{{3}}", t.id), t.id


def test_no_task_depends_on_today() -> None:
    moving = re.compile(r"\b(today|tomorrow|yesterday|this year|last year|next year)\b", re.I)
    assert [t.id for t in TASKS if moving.search(t.text)] == []


def test_split_is_deterministic_disjoint_and_stratified() -> None:
    dev, test = split("dev"), split("test")
    assert {t.id for t in dev} | {t.id for t in test} == {t.id for t in split("all")}
    assert not {t.id for t in dev} & {t.id for t in test}
    assert assignment() == assignment()
    for category in CATEGORIES:
        n = sum(t.category == category for t in TASKS)
        assert sum(t.category == category for t in dev) == round(0.4 * n)
    with pytest.raises(ValueError, match="Unknown split"):
        split("train")  # type: ignore[arg-type]


def test_data_is_generated_the_same_way_every_time() -> None:
    assert shop.__wrapped__() == shop()
    assert tree.__wrapped__() == tree()
    data = shop()
    assert (len(data.customers), len(data.products)) == (80, 36)
    assert 300 <= len(data.orders) and len(data.items) > len(data.orders)


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Toolbox]:
    yield Toolbox(Workspace.create(tmp_path_factory.mktemp("suite")))


def test_every_task_offers_known_tools(tmp_path: Path) -> None:
    workspace = Workspace.create(tmp_path)
    for t in TASKS:
        names = [tool.name for tool in workspace.tools(t.tools)]
        assert len(names) == len(set(names)), t.id


@pytest.mark.parametrize("task", [t for t in TASKS if t.solve], ids=lambda t: t.id)
def test_the_real_tools_agree_with_the_expected_answer(task: Task, box: Toolbox) -> None:
    assert task.solve is not None
    answer = str(task.solve(box))
    passed, why = task.check(Outcome(status="ok", answer=answer))
    assert passed, f"{task.id}: the tools give {answer!r}: {why}"


def test_only_direct_and_missing_value_tasks_lack_a_tool_solution() -> None:
    unsolved = {t.category for t in TASKS if t.solve is None}
    assert unsolved == {"no_tool", "missing_value"}
