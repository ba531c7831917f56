"""What the terminal shows is text: markup and terminal escape sequences from files,
tools and models are shown, never obeyed."""

from __future__ import annotations

import io

from rich.console import Console

from bigloop import Message, RunResult, Step, ToolCall
from bigloop.report import Terminal, approval_request, runs_table, shown, step_line
from bigloop.trace.store import RunSummary

HOSTILE = "evil \x1b]0;pwned\x07 \x1b[31mred\x1b[0m\r[bold]not bold[/bold]\x9b2J"


def rendered(markup: object) -> str:
    out = io.StringIO()
    Console(file=out, force_terminal=True, width=400, highlight=False).print(markup)
    return out.getvalue()


def test_control_characters_are_made_visible_and_markup_escaped() -> None:
    assert shown("a\x1b[2Jb\tc\nd\x7f") == "a\\x1b[2Jb\tc\nd\\x7f"
    assert rendered(shown("[bold]x[/bold]")) == "[bold]x[/bold]\n"
    assert shown("abcdef", 3) == "abc"


def test_a_hostile_tool_result_cannot_drive_the_terminal() -> None:
    step = Step(run_id="r", index=1, kind="tool", name="read_file\x1b[8m", output=HOSTILE)
    text = rendered(step_line(step))
    payload = text.split("read_file", 1)[1]
    assert "\x1b]" not in payload and "\x07" not in payload and "\x9b" not in payload
    assert "\r" not in payload and "\x1b[31m" not in payload and "\x1b[8m" not in payload
    assert "\\x1b]0;pwned\\x07" in payload and "[bold]not bold[/bold]" in payload


def test_every_place_text_is_shown_escapes_it() -> None:
    message = Message(role="assistant", tool_calls=[ToolCall(id="1", name="f", arguments={})])
    model = Step(run_id="r", index=0, kind="model", name="m", error="x\x1b[2J", output=HOSTILE)  # type: ignore[arg-type]
    called = Step(run_id="r", index=0, kind="model", name="m", message=message)
    ask = Step(run_id="r", index=2, kind="ask", name="user", output=HOSTILE)
    call = ToolCall(id="1", name="wipe\x1b[2J", arguments={"folder": HOSTILE})
    summary = RunSummary(
        run_id="r", task=HOSTILE, model="m", status="ok", answer=None, error=None,
        started_at=0.0, ended_at=1.0, steps=0, tool_calls=0, prompt_tokens=0,
        completion_tokens=0, config={},
    )  # fmt: skip
    for markup in (
        step_line(model),
        step_line(ask),
        approval_request(call),
        runs_table([summary]),
    ):
        text = rendered(markup)
        assert "\\x1b" in text and "pwned\x07" not in text and "\x1b]0;" not in text
    assert "x\\x1b[2J" in rendered(step_line(model))  # an error name is shown, not markup
    assert "f({})" in rendered(step_line(called))


def test_the_answer_question_and_error_are_shown_as_text() -> None:
    terminal = Terminal()
    terminal.out = Console(file=io.StringIO(), force_terminal=True, width=400, highlight=False)
    for result in (
        RunResult(run_id="r", task="t", status="ok", answer=HOSTILE),
        RunResult(run_id="r", task="t", status="input_required", question=HOSTILE),
        RunResult(run_id="r", task="t", status="failed", error=HOSTILE),
    ):
        terminal.show_result(result)
    text = terminal.out.file.getvalue()  # type: ignore[attr-defined]
    assert text.count("[bold]not bold[/bold]") == 3
    assert "\x1b]0;pwned" not in text and text.count("\\x1b]0;pwned\\x07") == 3
