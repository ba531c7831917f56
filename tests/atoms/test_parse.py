from __future__ import annotations

import json

from bigloop import Loop, ScriptedModel, tool
from bigloop.atoms.models.parse import parse_reply


def test_forms_of_calls() -> None:
    bare = parse_reply('{"name": "f", "arguments": {"x": 1}}')
    assert bare.calls == [("f", {"x": 1})]
    listed = parse_reply(
        '{"tool_calls": [{"name": "f", "arguments": {}}, '
        '{"name": "g", "arguments": "{\\"y\\": 2}"}]}'
    )
    assert listed.calls == [("f", {}), ("g", {"y": 2})]
    fenced = parse_reply('Sure!\n```json\n[{"name": "f", "parameters": {"x": 1}}]\n```')
    assert fenced.calls == [("f", {"x": 1})]
    tagged = parse_reply('<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>')
    assert tagged.calls == [("f", {})]
    openai_style = parse_reply('{"function": {"name": "f", "arguments": {"x": 3}}}')
    assert openai_style.calls == [("f", {"x": 3})]
    two_objects = parse_reply('{"name": "f", "arguments": {}} and {"name": "g", "arguments": {}}')
    assert [c[0] for c in two_objects.calls] == ["f", "g"]


def test_answers_and_errors() -> None:
    assert parse_reply('{"answer": "19"}').text == "19"
    assert parse_reply("The answer is 19.").text == "The answer is 19."
    broken = parse_reply('{"name": "f", "arguments": {"x": 3 * 10**8}}')
    assert broken.calls == [] and broken.error is not None
    assert "not valid JSON" in broken.error


def test_a_call_whose_name_is_not_text_is_a_broken_call_not_an_answer() -> None:
    for raw in (
        '{"name": 123, "arguments": {}}',
        '{"tool_calls": [{"name": null, "arguments": {"x": 1}}]}',
        '[{"name": ["f"], "parameters": {}}]',
    ):
        parsed = parse_reply(raw)
        assert (parsed.calls, parsed.text) == ([], ""), raw
        assert parsed.error is not None and '"name" must be the name of a tool' in parsed.error
    assert parse_reply('{"name": "Ann"}').calls == [("Ann", {})]  # unchanged


def test_the_loop_sends_a_call_without_a_textual_name_back() -> None:
    @tool
    def double(x: int) -> int:
        """Double a number."""
        return 2 * x

    model = ScriptedModel(
        [
            json.dumps({"name": 123, "arguments": {"x": 4}}),
            json.dumps({"tool_calls": [{"name": "double", "arguments": {"x": 4}}]}),
            json.dumps({"answer": "8"}),
        ]
    )
    result = Loop(model, [double]).run_sync("Double 4.")
    assert (result.status, result.answer) == ("ok", "8")
    assert [(s.kind, s.error) for s in result.steps] == [
        ("model", "malformed_reply"),
        ("model", None),
        ("tool", None),
        ("model", None),
    ]
