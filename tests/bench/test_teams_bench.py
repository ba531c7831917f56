"""The teams benchmark's sample of the suite: the first K test tasks of every category."""

from __future__ import annotations

from bench import teams
from bigloop.eval.suite import split


def test_per_category_takes_the_first_k_of_every_category_in_suite_order() -> None:
    tasks = split("test")
    chosen = teams.first_of_each(tasks, 2)
    categories = {t.category for t in tasks}
    assert len(chosen) == 2 * len(categories)
    for category in categories:
        assert [t for t in chosen if t.category == category] == [
            t for t in tasks if t.category == category
        ][:2]
    assert [tasks.index(t) for t in chosen] == sorted(tasks.index(t) for t in chosen)
    assert teams.first_of_each(tasks, None) == tasks
