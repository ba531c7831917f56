"""The bridge: a sandboxed program calls the host's tools as functions, and nothing it
writes makes the host call what was not offered, more than allowed, or at all when the
message is forged (`bigloop.atoms.builtin.bridge`)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bigloop.atoms.builtin.bridge import Bridge, BridgeReply, program_stubs
from bigloop.atoms.builtin.python_sandbox import SandboxLimits, SandboxStopped, run_sandboxed
from bigloop.atoms.models.base import ToolSpec

LIMITS = SandboxLimits(wall_s=5, cpu_s=2, memory_mb=512)
ADD = ToolSpec(
    name="math.add",
    description="Add two numbers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
)


@pytest.fixture(autouse=True)
def _needs_sandbox(sandbox: None) -> None:
    pass


class Host:
    """The host's side: records every call it actually makes."""

    def __init__(self, refuse: bool = False) -> None:
        self.made: list[tuple[str, dict[str, Any]]] = []
        self.refuse = refuse

    async def call(self, name: str, arguments: dict[str, Any]) -> BridgeReply:
        self.made.append((name, arguments))
        if self.refuse:
            return BridgeReply(ok=False, output="a is not in the request", reason="refused")
        return BridgeReply(ok=True, output=str(arguments["a"] + arguments["b"]))


def run(code: str, host: Host, *, audit_hook: bool = True, max_calls: int = 20) -> str:
    bridge = Bridge(tools=[ADD], call=host.call, max_calls=max_calls)
    try:
        return asyncio.run(run_sandboxed(code, LIMITS, audit_hook=audit_hook, bridge=bridge))
    except SandboxStopped as stopped:
        return str(stopped)


def test_a_program_calls_tools_as_functions_and_gets_parsed_results() -> None:
    host = Host()
    said = run("x = math_add(2, 3)\nprint(x + 1, math_add(a=x, b=0.5))", host)
    assert said == "6 5.5\n" and host.made == [
        ("math.add", {"a": 2, "b": 3}),
        ("math.add", {"a": 5, "b": 0.5}),
    ]


def test_a_refused_call_is_a_typed_exception_the_program_can_catch() -> None:
    code = "try:\n    math_add(1, 2)\nexcept ToolError as e:\n    print(e.reason, '|', e)"
    assert run(code, Host(refuse=True)) == "refused | a is not in the request\n"


# A program that writes its own request lines: it finds the pipe in its argv.
RAW = "import os, sys\nrequests, replies = (int(x) for x in sys.argv[6].split(':')[1:])\n"


@pytest.mark.parametrize("audit_hook", [True, False], ids=["as-shipped", "kernel-only"])
def test_forged_and_unoffered_requests_never_reach_a_tool(audit_hook: bool) -> None:
    forged = [
        b"not json\n",
        b"[1]\n",
        b'{"tool": "delete_all", "arguments": {}}\n',
        b'{"tool": "math.add", "arguments": [1, 2]}\n',
    ]
    code = RAW + (
        f"for line in {forged!r}:\n"
        "    os.write(requests, line)\n"
        "got = b''\n"
        "while got.count(b'\\n') < 4:\n    got += os.read(replies, 4096)\n"
        "print(got.decode())\n"
        "try:\n    os.write(replies, b'{\"ok\": true}\\n'); print('ESCAPED: wrote a reply')\n"
        "except OSError as e:\n    print('cannot answer itself:', e.errno)\n"
    )
    host = Host()
    said = run(code, host, audit_hook=audit_hook)
    assert host.made == []
    assert '"reason": "invalid"' in said and '"reason": "not_offered"' in said
    assert "ESCAPED" not in said and "cannot answer itself" in said


def test_a_flood_of_calls_gets_at_most_the_budget_then_the_bridge_closes() -> None:
    code = (
        "reasons = []\n"
        "for i in range(10_000):\n"
        "    try:\n        math_add(i, 1)\n"
        "    except ToolError as e:\n        reasons.append(e.reason)\n"
        "print(len(reasons), sorted(set(reasons)))"
    )
    host = Host()
    said = run(code, host, max_calls=5)
    assert len(host.made) == 5
    assert "budget" in said and "closed" in said


def test_a_program_that_never_returns_or_retries_forever_is_stopped() -> None:
    host = Host(refuse=True)
    forever = "while True:\n    try:\n        math_add(1, 2)\n    except ToolError:\n        pass"
    said = run(forever, host, max_calls=3)
    assert "Stopped" in said and len(host.made) == 3
    assert "Stopped" in run("while True:\n    pass", Host())


def test_a_huge_request_line_ends_the_bridge() -> None:
    code = "try:\n    math_add('x' * 200_000, 1)\nexcept ToolError as e:\n    print(e.reason)"
    host = Host()
    assert run(code, host) == "closed\n" and host.made == []


def test_the_prompt_shows_each_tool_as_a_call_not_a_definition_to_complete() -> None:
    stubs = program_stubs(Bridge(tools=[ADD], call=Host().call))
    assert stubs.startswith("math_add(a, b)\n    Add two numbers.")
    assert "a (number)" in stubs and "def " not in stubs
    compile(stubs.splitlines()[0], "<call>", "eval")  # the first line is a call as written
