"""Hard limits in `Tool.call` and `render_result`: a stuck sync tool cannot keep the
process alive, and no result is too big to render."""

from __future__ import annotations

import asyncio
import contextvars
import subprocess
import sys
import textwrap
import time

from bigloop import tool
from bigloop.atoms.tool import render_result

_NEVER_RETURNS = textwrap.dedent(
    """
    import json, threading
    from bigloop import Loop, ScriptedModel, tool

    @tool(timeout_s=0.5)
    def stuck() -> str:
        \"\"\"Never returns.\"\"\"
        threading.Event().wait()
        return "unreachable"

    script = [json.dumps({"tool_calls": [{"name": "stuck", "arguments": {}}]}),
              json.dumps({"answer": "gave up"})]
    result = Loop(ScriptedModel(script), [stuck]).run_sync("x")
    print(result.status, result.tool_steps[0].output, flush=True)
    """
)


def test_timed_out_sync_tool_does_not_keep_the_process_alive() -> None:
    start = time.monotonic()
    # Before the fix asyncio.run joined the worker thread at shutdown: the child never exited.
    done = subprocess.run(
        [sys.executable, "-c", _NEVER_RETURNS], capture_output=True, text=True, timeout=30
    )
    assert time.monotonic() - start < 20
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok Error: Tool 'stuck' timed out after 0.5 s."


def test_sync_tool_sees_the_callers_context_variables() -> None:
    user: contextvars.ContextVar[str] = contextvars.ContextVar("user", default="nobody")

    @tool
    def whoami() -> str:
        """The user."""
        return user.get()

    async def main() -> str:
        user.set("ada")
        return await whoami.call({})

    assert asyncio.run(main()) == "ada"


def test_huge_integers_render_without_raising() -> None:
    # Over 4,300 digits, str(int) raises ValueError; before the fix render_result did too.
    text = render_result(10**5000 + 7, 4000)
    assert text.startswith("1.00000e+5000")
    assert "5001 digits" in text
    assert "5001 digits" in render_result([10**5000], 4000)
    # Found by test_fuzz_render_result: the magnitude's text ignored a cap shorter than it.
    assert render_result(10**5000, 1) == "1… [truncated 66 characters]"


def test_rendering_is_bounded_before_materialising() -> None:
    rendered: list[int] = []

    class Item:
        def __str__(self) -> str:
            rendered.append(1)
            return "item"

    text = render_result([Item() for _ in range(100_000)], 50)
    assert text.startswith('["item", "item"')
    assert text.endswith("… [truncated more than 4951 characters]")
    # Before the fix all 100,000 items were rendered to keep the first 50 characters.
    assert len(rendered) < 1000


def test_lone_surrogates_are_escaped() -> None:
    text = render_result("caf\udce9.txt", 100)
    text.encode("utf-8")
    assert text == "caf\\udce9.txt"
