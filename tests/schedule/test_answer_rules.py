"""Answer rules: one contract (`bigloop.planners.rules`), registered, switched off by
name, each capped per run."""

from __future__ import annotations

from bigloop.atoms.models.base import Message, ToolCall, ToolSpec
from bigloop.parts import PARTS, Policies
from bigloop.planners.rules import (
    Answered,
    CallAsText,
    Problem,
    Retry,
    Stop,
    default_rules,
)

CALC = ToolSpec(
    name="calculate",
    description="Evaluate arithmetic.",
    parameters={"type": "object", "properties": {"expression": {"type": "string"}}},
)


def chat(text: str, *messages: Message) -> Answered:
    said = [Message(role="user", content="What is 17% of 230?"), *messages]
    return Answered.of_chat(said, [CALC], text)


def test_every_rule_is_a_registered_answer_rule_and_off_removes_it() -> None:
    registered = {p.name for p in PARTS if p.kind == "answer_rule"}
    assert set(default_rules().names) == registered
    for name in registered:
        assert name not in Policies.build(off=[name]).rules.answer.names
        assert name not in Policies.build(off=[name]).active()


def test_a_number_from_memory_goes_back_once_a_run() -> None:
    rules = default_rules()
    first = rules.judge(chat("39.1"))
    assert isinstance(first, Retry) and first.problem == Problem.FROM_MEMORY
    assert rules.judge(chat("39.1")) is None  # once
    assert default_rules().judge(chat("It is 17% of 230.")) is None  # said by the user


def test_a_result_from_a_tool_passes_unchanged() -> None:
    call = ToolCall(id="1", name="calculate", arguments={"expression": "17 / 100 * 230"})
    made = Message(role="assistant", tool_calls=[call])
    result = Message(role="tool", content="39.1", tool_call_id="1")
    assert default_rules().judge(chat("39.1", made, result)) is None


def test_a_call_written_as_text_goes_back_then_without_tools_then_stops() -> None:
    rules = default_rules()
    verdicts = [rules.judge(chat('calculate({"expression": "0.17 * 230"')) for _ in range(3)]
    first, second, third = verdicts
    assert isinstance(first, Retry) and first.note and first.tools
    assert isinstance(second, Retry) and second.note is None and not second.tools
    assert isinstance(third, Stop) and third.problem == Problem.CALL_AS_TEXT
    assert CallAsText().judge(chat("0.17 * 230 = 39.1"), 0) is None


def test_an_empty_answer_always_goes_back() -> None:
    rules = default_rules()
    assert all(isinstance(rules.judge(chat(" … ")), Retry) for _ in range(4))
