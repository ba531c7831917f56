"""Generated training tasks (suite.generate) and their verified turns (suite_teach):
solutions pass their own checks, the data is new, and the turns replayed through the
suite's real loop (a Recorder as the model: plumbing, no quality claim) are kept only
when the check passes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from bigloop_eval.suite import Toolbox, split
from bigloop_eval.suite.checks import Outcome
from bigloop_eval.suite.generate import FAMILIES, TrainingData, generate
from bigloop_eval.suite_teach import _written, record_solution, teach_task

from bigloop.config import LoopConfig
from bigloop.optimize.finetune.turns import ngrams, overlap


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> TrainingData:
    return TrainingData(tmp_path_factory.mktemp("training"), seed=0)


def test_every_generated_solution_passes_its_own_check(data: TrainingData) -> None:
    tasks = generate(9, 0, data)
    assert {t.category for t in tasks} == set(FAMILIES)
    for task in tasks:
        assert task.solve is not None, task.id
        answer = _written(task.solve(Toolbox(data.workspace)))
        calls = record_solution(task, data.workspace) or []
        called = tuple(c.name for r in calls for c in r.tool_calls)
        passed, why = task.check(Outcome(status="ok", answer=answer, tools_called=called))
        assert passed, (task.id, task.text, answer, why)


def test_a_wrong_answer_fails_the_check(data: TrainingData) -> None:
    numeric = [t for t in generate(4, 0, data) if t.category in ("arithmetic", "sql")]
    for task in numeric:
        assert not task.check(Outcome(status="ok", answer="-123456789"))[0], task.id


def test_generation_is_seeded_and_independent_of_the_count(tmp_path: Path) -> None:
    one = TrainingData(tmp_path / "a", seed=3)
    two = TrainingData(tmp_path / "b", seed=3)
    few, more = generate(2, 3, one), generate(5, 3, two)
    assert [t.text for t in few] == [t.text for t in more if int(t.id[-3:]) < 2]
    other = TrainingData(tmp_path / "c", seed=4)
    assert [t.text for t in generate(5, 4, other)] != [t.text for t in more]


def test_generated_requests_copy_no_suite_request(data: TrainingData) -> None:
    suite = {t.id for t in split("all")}
    held: set[tuple[str, ...]] = set()
    for task in split("all"):
        held |= ngrams(task.text)
    for task in generate(12, 0, data):
        assert task.id not in suite
        assert overlap(task.text, held) <= 1 / 3, task.text


def test_turns_replay_the_solution_through_the_suite_loop(data: TrainingData) -> None:
    """Each kept task gives one turn per call and one for the answer, each with the
    prompt the loop rendered (the request in it, the earlier results after a call)."""
    tasks = generate(6, 0, data)
    config = LoopConfig()
    kept = 0
    for task in tasks:
        turns = asyncio.run(teach_task(task, data.workspace, config))
        targets = record_solution(task, data.workspace) or []
        if not turns:
            continue
        kept += 1
        assert len(turns) == len(targets)
        assert turns[0].request == task.text
        assert turns[0].chat[0]["role"] == "system"
        for turn, target in zip(turns, targets, strict=True):
            reply = json.loads(turn.reply)
            if target.tool_calls:
                assert [c["name"] for c in reply["tool_calls"]] == [
                    c.name for c in target.tool_calls
                ]
            else:
                assert reply == {"answer": target.text}
        if len(turns) > 1:
            assert " -> " in turns[-1].chat[-1]["content"]  # the results turn
            assert not turns[-1].declines and turns[0].declines is False
    assert kept >= 0.8 * len(tasks), f"only {kept} of {len(tasks)} verified"


def test_a_solution_the_check_rejects_teaches_nothing(data: TrainingData) -> None:
    from dataclasses import replace

    from bigloop_eval.suite.checks import number

    task = next(t for t in generate(1, 0, data) if t.category == "arithmetic")
    wrong = replace(task, check=number(-1.0))
    assert asyncio.run(teach_task(wrong, data.workspace, LoopConfig())) == []
