"""Debate with a judge, scripted: every answer a message step in round order, the early
stop on agreement, the judge's verdict, and a resumed debate."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bigloop import (
    FunctionModel,
    Message,
    ModelSettings,
    Step,
    ToolSpec,
    TraceStore,
    UserError,
)
from bigloop.team import Agent, Debate, normalize


def answer(text: str) -> str:
    return json.dumps({"answer": text})


def debater(name: str, replies: list[str], seen: list[list[Message]] | None = None) -> Agent:
    """An agent that gives `replies` in order, one per round."""
    script = iter(replies)

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        if seen is not None:
            seen.append(list(messages))
        return answer(next(script))

    return Agent(name, FunctionModel(reply, name=f"{name}-model"))


def trace(steps: list[Step]) -> list[tuple[str, str, object, object]]:
    return [(s.kind, s.name, s.input.get("round"), s.output) for s in steps]


def test_agreement_in_the_first_round_stops_the_debate_without_the_judge() -> None:
    judge = Agent("judge", FunctionModel(lambda m, t: pytest.fail("the judge was asked")))
    team = Debate(
        [debater("a", ["42"]), debater("b", ["42."]), debater("c", [" 42 "])],
        judge=judge,
        rounds=3,
    )
    result = team.run_sync("What is 6 * 7?")
    assert result.status == "ok" and result.answer == "42" and result.planner == "debate"
    assert trace(result.steps) == [
        ("message", "debate→a", 1, "42"),
        ("message", "debate→b", 1, "42."),
        ("message", "debate→c", 1, " 42 "),
    ]


def test_each_round_shows_the_others_answers_and_agreement_stops_it() -> None:
    seen_a: list[list[Message]] = []
    team = Debate(
        [
            debater("a", ["41", "42"], seen_a),
            debater("b", ["42", "42"]),
            debater("c", ["42", "42"]),
        ],
        rounds=3,
    )
    result = team.run_sync("What is 6 * 7?")
    assert result.answer == "42"
    assert trace(result.steps) == [
        ("message", "debate→a", 1, "41"),
        ("message", "debate→b", 1, "42"),
        ("message", "debate→c", 1, "42"),
        ("message", "debate→a", 2, "42"),
        ("message", "debate→b", 2, "42"),
        ("message", "debate→c", 2, "42"),
    ]
    round_two = seen_a[1]
    assert [(m.role, m.content) for m in round_two[:2]] == [
        ("user", "What is 6 * 7?"),
        ("assistant", "41"),
    ]
    prompt = round_two[-1].content
    assert prompt.startswith("What is 6 * 7?\n\nThe other agents answered:\n- b: 42\n- c: 42\n")
    assert result.steps[3].input["text"] == prompt


def test_without_agreement_the_judge_gives_the_final_answer() -> None:
    judged: list[str] = []

    def judge_model(messages: list[Message], tools: list[ToolSpec]) -> str:
        judged.append(messages[-1].content)
        return answer("Paris")

    team = Debate(
        [debater("a", ["Paris", "Paris"]), debater("b", ["Lyon", "Lyon"])],
        judge=Agent("judge", FunctionModel(judge_model)),
        rounds=2,
    )
    result = team.run_sync("Capital of France?")
    assert result.answer == "Paris"
    assert [s.name for s in result.steps] == [
        "debate→a",
        "debate→b",
        "debate→a",
        "debate→b",
        "debate→judge",
    ]
    assert result.steps[-1].input["round"] == "verdict"
    assert judged == [
        "Capital of France?\n\nAnswers of 2 agents:\n- a: Paris\n- b: Lyon\n\n"
        "Decide which answer is right (combine them if each is partly right) and give the "
        "final answer to the task."
    ]


def test_a_judge_can_pick_a_debater_under_a_schema() -> None:
    asked: list[ModelSettings] = []

    def picker(messages: list[Message], tools: list[ToolSpec], s: ModelSettings) -> str:
        asked.append(s)
        return json.dumps({"pick": "b"})

    team = Debate(
        [debater("a", ["get_weather(Oslo)"]), debater("b", ["get_weather(city=Oslo)"])],
        judge=Agent("judge", FunctionModel(picker)),
        rounds=1,
        pick=True,
    )
    result = team.run_sync("Weather in Oslo?")
    assert result.answer == "get_weather(city=Oslo)"
    assert result.steps[-1].output == "b"
    assert asked[0].response_schema == {
        "type": "object",
        "properties": {"pick": {"enum": ["a", "b"]}},
        "required": ["pick"],
    }


def test_without_a_judge_the_most_common_answer_wins() -> None:
    team = Debate(
        [debater("a", ["7"]), debater("b", ["8"]), debater("c", ["8"])],
        rounds=1,
    )
    assert team.run_sync("?").answer == "8"


def test_normalize_ignores_case_punctuation_and_thousands_separators() -> None:
    assert normalize("  The answer: 1,234.5 KM. ") == normalize("the answer 1234.5 km")
    assert normalize("3.14") != normalize("314")


def test_a_resumed_debate_does_not_ask_again_for_answers_it_has(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "t.db")
    asked: list[str] = []
    flaky = {"fail": True}

    def make(name: str, replies: list[str]) -> Agent:
        script = iter(replies)

        def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
            asked.append(name)
            return answer(next(script))

        return Agent(name, FunctionModel(reply))

    def judge_model(messages: list[Message], tools: list[ToolSpec]) -> str:
        if flaky["fail"]:
            raise RuntimeError("judge crashed")
        return answer("final")

    team = Debate(
        [make("a", ["1", "1"]), make("b", ["2", "2"])],
        judge=Agent("judge", FunctionModel(judge_model)),
        rounds=2,
        store=store,
    )
    first = team.run_sync("?")
    assert first.status == "failed" and "judge crashed" in (first.error or "")
    assert asked == ["a", "b", "a", "b"]
    flaky["fail"] = False
    resumed = asyncio.run(team.resume(first.run_id))
    assert resumed.status == "ok" and resumed.answer == "final"
    assert asked == ["a", "b", "a", "b"]  # no debater was asked again
    assert [s.name for s in store.result(first.run_id).steps] == [
        "debate→a",
        "debate→b",
        "debate→a",
        "debate→b",
        "debate→judge",
    ]


def test_a_debate_needs_two_agents_and_distinct_names() -> None:
    model = FunctionModel(lambda m, t: answer("x"))
    with pytest.raises(UserError, match="at least two"):
        Debate([Agent("a", model)])
    with pytest.raises(UserError, match="distinct"):
        Debate([Agent("a", model), Agent("a", model)])
    with pytest.raises(UserError, match="needs a judge"):
        Debate([Agent("a", model), Agent("b", model)], pick=True)


def test_debaters_that_fail_are_left_out() -> None:
    def broken(messages: list[Message], tools: list[ToolSpec]) -> str:
        raise RuntimeError("down")

    team = Debate([Agent("a", FunctionModel(broken)), debater("b", ["5"])], rounds=2)
    result = asyncio.run(team.run("?"))
    assert result.answer == "5"
    assert [s.error for s in result.steps] == ["failed", None]


def test_an_empty_answer_abstains_and_keeps_the_earlier_one() -> None:
    team = Debate(
        [debater("a", ["Paris", ""]), debater("b", ["Lyon", ""]), debater("c", ["Paris", ""])],
        rounds=2,
    )
    result = team.run_sync("Capital of France?")
    # round 2 abstains throughout: no agreement on "", the round-1 majority stands
    assert result.status == "ok" and result.answer == "Paris"
    nobody = Debate([debater("a", [""]), debater("b", [" "])], rounds=1)
    assert nobody.run_sync("Capital of France?").status != "ok"
