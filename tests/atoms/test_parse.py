from __future__ import annotations

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
