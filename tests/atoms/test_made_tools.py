"""Tools the loop writes itself (issue 25): a maker's function becomes a tool only when it
passes its examples in the sandbox; the library keeps versions, loads the current ones,
and retires a tool whose examples fail; a made tool's call runs in the sandbox. The maker
here is scripted (plumbing); what real makers achieve is a benchmark's to say."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bigloop import FunctionModel, Loop, Message, ScriptedModel, ToolSpec, UserError
from bigloop.atoms.builtin._confine import SandboxUnavailable, boundary
from bigloop.atoms.made import (
    Example,
    MadeTool,
    Rejected,
    ToolLibrary,
    make_tool,
    same,
    tool_for,
)

try:
    boundary()
except SandboxUnavailable as e:  # made tools run only in the sandbox
    pytest.skip(f"no sandbox here: {e}", allow_module_level=True)

EXAMPLES = [
    Example(arguments={"amount": 200, "percent": 15}, expected=230),
    Example(arguments={"amount": 80, "percent": 12.5}, expected=90),
]
PARAMETERS = {
    "type": "object",
    "properties": {
        "amount": {"type": "number", "description": "the amount"},
        "percent": {"type": "number", "description": "the percentage to add"},
    },
    "required": ["amount", "percent"],
}


def maker(source: str, name: str = "add_percent", seen: list[str] | None = None) -> FunctionModel:
    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        if seen is not None:
            seen.append(messages[-1].content)
        proposal = {
            "name": name,
            "description": "An amount plus a percentage of it.",
            "parameters": PARAMETERS,
            "source": source,
        }
        return json.dumps(proposal)

    return FunctionModel(reply, name="maker")


GOOD = "def add_percent(amount, percent):\n    return amount * (1 + percent / 100)\n"
WRONG = "def add_percent(amount, percent):\n    return amount + percent\n"
ESCAPING = (
    "def add_percent(amount, percent):\n"
    "    open('/tmp/bigloop-made-escape', 'w').write('x')\n"
    "    return amount * (1 + percent / 100)\n"
)


def test_a_function_that_passes_its_examples_becomes_a_tool_the_loop_calls(tmp_path: Path) -> None:
    seen: list[str] = []
    made = asyncio.run(
        make_tool("Add a percentage to an amount.", EXAMPLES, maker(GOOD, seen=seen))
    )
    assert isinstance(made, MadeTool) and made.maker == "maker"
    assert '"amount": 200' in seen[0] and "Add a percentage" in seen[0]  # the examples were shown
    library = ToolLibrary(tmp_path / "tools")
    path = library.save(made)
    assert path.name == "add_percent.v1.json" and json.loads(path.read_text())["sha256"]
    [tool] = library.tools()
    call = {"name": "add_percent", "arguments": {"amount": 50, "percent": 10}}
    script = ScriptedModel([json.dumps({"tool_calls": [call]}), json.dumps({"answer": "55"})])
    result = Loop(script, [tool]).run_sync("What is 50 plus 10%?")
    assert result.tool_steps[0].error is None
    assert same(float(str(result.tool_steps[0].output)), 55)


@pytest.mark.parametrize(
    ("source", "name", "why"),
    [
        (WRONG, "add_percent", "gave 215, not 230"),
        (ESCAPING, "add_percent", "failed"),  # the write is refused in the sandbox
        ("def other(amount, percent):\n    return 0\n", "add_percent", "defines no function"),
        (GOOD, "import", "not a usable tool name"),
    ],
)
def test_a_function_that_fails_an_example_is_rejected_with_the_reason(
    source: str, name: str, why: str
) -> None:
    made = asyncio.run(make_tool("Add a percentage.", EXAMPLES, maker(source, name)))
    assert isinstance(made, Rejected) and why in made.reason, made
    assert not Path("/tmp/bigloop-made-escape").exists()


def test_versions_the_current_tool_and_retiring_a_tool_whose_examples_fail(tmp_path: Path) -> None:
    library = ToolLibrary(tmp_path)
    first = asyncio.run(make_tool("Add a percentage.", EXAMPLES, maker(GOOD)))
    second = asyncio.run(make_tool("Add a percentage.", EXAMPLES, maker(GOOD + "# v2\n")))
    assert isinstance(first, MadeTool) and isinstance(second, MadeTool)
    library.save(first)
    library.save(second)
    assert [(m.name, m.version) for m in library.made()] == [("add_percent", 2)]
    edited = tmp_path / "add_percent.v2.json"  # someone edits the source by hand
    data = json.loads(edited.read_text())
    edited.write_text(json.dumps({**data, "source": WRONG}))
    assert asyncio.run(library.recheck()) == ["add_percent"]
    assert "gave" in json.loads(edited.read_text())["retired"]
    assert [(m.name, m.version) for m in library.made()] == [("add_percent", 1)]  # v1 again


def test_without_examples_or_a_library_the_errors_say_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="needs examples"):
        asyncio.run(make_tool("x", [], maker(GOOD)))
    with pytest.raises(UserError, match="No tool library"):
        ToolLibrary(tmp_path / "none").tools()
    (tmp_path / "bad.v1.json").write_text("{}")
    with pytest.raises(UserError, match="is not a made tool"):
        ToolLibrary(tmp_path).tools()


def test_results_compare_as_json_with_a_tolerance_for_numbers() -> None:
    assert same(0.1 + 0.2, 0.3) and same([1, {"a": 2.0}], [1, {"a": 2}])
    assert not same(True, 1) and not same("1", 1) and not same([1], [1, 2])


def test_the_command_line_rechecks_a_library_and_refuses_bad_examples(tmp_path: Path) -> None:
    import subprocess
    import sys

    made = asyncio.run(make_tool("Add a percentage.", EXAMPLES, maker(GOOD)))
    assert isinstance(made, MadeTool)
    path = ToolLibrary(tmp_path / "lib").save(made)

    def bigloop(*args: str) -> subprocess.CompletedProcess[str]:
        env = {"BIGLOOP_HOME": str(tmp_path), "PATH": "", "NO_COLOR": "1"}
        command = [sys.executable, "-m", "bigloop", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)

    assert "all pass" in bigloop("tools", "recheck", str(tmp_path / "lib")).stdout
    path.write_text(json.dumps({**json.loads(path.read_text()), "source": WRONG}))
    assert "retired: add_percent" in bigloop("tools", "recheck", str(tmp_path / "lib")).stdout
    (tmp_path / "examples.jsonl").write_text('{"args": {}}\n')
    bad = bigloop("tools", "make", "x", "--examples", str(tmp_path / "examples.jsonl"))
    assert bad.returncode == 2 and "each line must be" in bad.stderr


def task_maker(replies: list[dict[str, object]], seen: list[list[Message]]) -> FunctionModel:
    """A maker that answers the k-th request with the k-th proposal."""

    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        seen.append(list(messages))
        return json.dumps(replies[min(len(seen), len(replies)) - 1])

    return FunctionModel(reply, name="maker")


def proposal(source: str, arguments: dict[str, object]) -> dict[str, object]:
    return {
        "name": "add_percent",
        "description": "An amount plus a percentage of it.",
        "parameters": PARAMETERS,
        "source": source,
        "arguments": arguments,
    }


TASK = "A jacket costs $1,200 plus 15% tax. What do I pay?"


def right(got: object) -> bool:
    return isinstance(got, int | float) and same(got, 1380)


def test_a_tool_made_for_a_failed_request_keeps_its_call_as_its_example() -> None:
    seen: list[list[Message]] = []
    made = asyncio.run(tool_for(TASK, "1380", right, task_maker([proposal(GOOD, CALL)], seen)))
    assert isinstance(made, MadeTool) and made.made_for == TASK
    assert made.examples == [Example(arguments=CALL, expected=1380.0)]
    assert TASK in seen[0][-1].content and "1380" in seen[0][-1].content


CALL: dict[str, object] = {"amount": 1200, "percent": 15}


@pytest.mark.parametrize(
    ("source", "arguments", "why"),
    [
        (GOOD, {"amount": 1200, "percent": 16}, "percent=16 does not occur in the request"),
        (WRONG, CALL, "the right answer is 1380"),
        ("def add_percent(amount, percent):\n    return 1380\n", CALL, "does not change"),
    ],
)
def test_a_made_tool_is_rejected_when_its_call_is_invented_wrong_or_a_constant(
    source: str, arguments: dict[str, object], why: str
) -> None:
    seen: list[list[Message]] = []
    made = asyncio.run(
        tool_for(TASK, "1380", right, task_maker([proposal(source, arguments)], seen), tries=1)
    )
    assert isinstance(made, Rejected) and why in made.reason


def test_a_rejected_tool_goes_back_to_the_maker_with_the_reason() -> None:
    seen: list[list[Message]] = []
    replies = [proposal(WRONG, CALL), proposal(GOOD, CALL)]
    made = asyncio.run(tool_for(TASK, "1380", right, task_maker(replies, seen)))
    assert isinstance(made, MadeTool) and made.source == GOOD
    assert len(seen) == 2 and "the right answer is 1380" in seen[1][-1].content
    assert seen[1][-2].role == "assistant"
