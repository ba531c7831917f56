"""Fuzzing what a model may write: reading calls from any text never raises and takes time
linear in its length, and a whole run on any replies ends with a status (never "running",
never an exception out of `Loop.run`)."""

from __future__ import annotations

import json
import string
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bigloop import Budget, FunctionModel, Loop, ModelResponse, ToolCall, TraceStore, tool
from bigloop.atoms.models.parse import parse_reply
from bigloop.trace.records import Step

FUZZ = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

ODD = "\ud800\udfff\ufffd\x00\u202e😀"
"""Lone surrogates, a replacement character, NUL, a direction override, an emoji."""
odd_text = st.text(alphabet=st.sampled_from(string.printable + ODD + '{}[]":,'), max_size=60)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | odd_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(odd_text, inner, max_size=4),
    max_leaves=12,
)
names = st.sampled_from(["echo", "add", "nope", "", "echo ", "ECHO"])
call_objects = st.fixed_dictionaries(
    {"name": names},
    optional={"arguments": json_values, "parameters": json_values, "args": odd_text},
)
shapes = st.sampled_from(
    [
        "{}",
        "```json\n{}\n```",
        "<tool_call>{}</tool_call>",
        "<tool_call>{}",
        "Sure! {} and more",
        "```{}",
        '{{"tool_calls": [{}]}}',
        '{{"function": {}}}',
    ]
)


@st.composite
def replies(draw: st.DrawFn) -> str:
    """Text a model might write: calls in every form, answers, JSON, junk, cut anywhere."""
    kind = draw(st.sampled_from(["call", "answer", "json", "junk", "deep"]))
    if kind == "call":
        body = json.dumps(draw(call_objects), ensure_ascii=draw(st.booleans()))
        text = draw(shapes).format(body)
    elif kind == "answer":
        text = json.dumps({draw(st.sampled_from(["answer", "final_answer"])): draw(json_values)})
    elif kind == "json":
        text = json.dumps(draw(json_values))
    elif kind == "deep":
        depth = draw(st.sampled_from([50, 900, 5000, 50_000]))
        text = draw(st.sampled_from(["[", '{"a":', '{"name": "echo", "arguments": ['])) * depth
    else:
        text = draw(odd_text)
    if draw(st.booleans()):
        text = text[: draw(st.integers(0, len(text)))]  # cut off mid-generation
    return text


@FUZZ
@given(replies())
def test_reading_any_reply_never_raises(raw: str) -> None:
    parsed = parse_reply(raw)
    assert parsed.error is None or not parsed.calls
    assert all(isinstance(name, str) and name for name, _ in parsed.calls)


@FUZZ
@given(st.text(max_size=300))
def test_reading_any_text_never_raises(raw: str) -> None:
    parse_reply(raw)


@pytest.mark.parametrize(
    "raw",
    [
        "```json" + " " * 50_000 + "x",  # an unclosed fence, then whitespace
        "<tool_call>x" + " " * 50_000 + "y",  # an unclosed tag, then whitespace
        "[" * 200_000,
        "[0," * 60_000,
        "{" * 200_000,
        '{"name": "f", "arguments": ' + "9" * 100_000 + "}",
    ],
)
def test_reading_adversarial_text_takes_linear_time(raw: str) -> None:
    start = time.perf_counter()
    parse_reply(raw)
    assert time.perf_counter() - start < 0.5  # the regular expressions were quadratic: seconds


@tool(inline=True)  # no thread per call: the loop is under test, and the fuzzing stays fast
def echo(text: str) -> str:
    """Repeat a text."""
    return text


@tool(inline=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TraceStore]:
    """One trace file for all the examples (opening and closing one costs more than a run)."""
    store = TraceStore(tmp_path_factory.mktemp("fuzz") / "t.db")
    yield store
    store.close()


turns = st.one_of(
    replies(),
    st.builds(
        lambda calls: ModelResponse(
            tool_calls=[ToolCall(id=str(i), name=n, arguments=a) for i, (n, a) in enumerate(calls)]
        ),
        st.lists(st.tuples(names, json_values), min_size=1, max_size=12),
    ),
    st.builds(lambda text: ModelResponse(text=text, raw=text), odd_text),
)


@FUZZ
@given(script=st.lists(turns, min_size=1, max_size=5))
def test_a_run_on_any_replies_ends_with_a_status(script: list[Any], store: TraceStore) -> None:
    replies_left = iter(script)

    def reply(messages: Any, tools: Any) -> Any:
        return next(replies_left, '{"answer": "out of replies"}')

    steps: list[Step] = []
    budget = Budget(max_steps=6, max_repairs=4, max_calls_per_turn=8)
    loop = Loop(FunctionModel(reply), [echo, add], budget=budget, store=store)
    result = loop.run_sync("echo something", on_step=steps.append)

    assert result.status in ("ok", "failed", "budget_exceeded", "input_required")
    assert store.run(result.run_id).status == result.status
    assert len(store.steps(result.run_id)) == len(steps)
    if result.status == "failed":
        assert result.error and "unexpected error" not in result.error, result.error
