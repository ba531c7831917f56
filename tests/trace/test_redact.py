"""Secrets are redacted in traces, in the terminal and in reports."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict
from pathlib import Path

import pytest

from bigloop import Loop, Message, RunResult, ScriptedModel, Step, ToolCall, TraceStore, UserError
from bigloop import tool as make_tool
from bigloop.report import Terminal, print_trace, result_json, runs_table, step_line
from bigloop.trace.redact import REDACTED, TOO_DEEP, Redactor
from bigloop.trace.store import RunSummary

SECRET = "hunter2-prod-7f3a"
KEY = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx"


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("https://ann:s3cr3t@db.example.com/x", f"https://{REDACTED}@db.example.com/x"),
        ("git clone https://ghtoken123@host/repo", f"git clone https://{REDACTED}@host/repo"),
        (
            "GET https://api.example.com/v1?q=oslo&api_key=abc123XYZ&page=2",
            f"GET https://api.example.com/v1?q=oslo&api_key={REDACTED}&page=2",
        ),
        ("/search?access_token=tok.en-1#top", f"/search?access_token={REDACTED}#top"),
        (f"key {KEY} works", f"key {REDACTED} works"),
        ("ghp_" + "a1B2" * 9, REDACTED),
        ("AKIAIOSFODNN7EXAMPLE in use", f"{REDACTED} in use"),
        ("Authorization: Bearer abcdef1234567890XYZ", f"Authorization: Bearer {REDACTED}"),
        ("eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4", REDACTED),
        ("password=hunter2 user=ann", f"password={REDACTED} user=ann"),
        ('{"api_key": "abc123", "city": "Oslo"}', f'{{"api_key": "{REDACTED}", "city": "Oslo"}}'),
        ("DB_PASSWORD: pa55", f"DB_PASSWORD: {REDACTED}"),
        ("Authorization: Basic YW5uOmh1bnRlcjIy", f"Authorization: Basic {REDACTED}"),
        ("my password is hunter22.", f"my password is {REDACTED}."),
        ("The API key is abc-123-def, use it", f"The API key is {REDACTED}, use it"),
        ('my passphrase was "correct horse"', f'my passphrase was "{REDACTED}"'),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
            REDACTED,
        ),
    ],
)
def test_patterns_redact_credentials(text: str, redacted: str) -> None:
    assert Redactor().text(text) == redacted


@pytest.mark.parametrize(
    "text",
    [
        "https://example.com/path?page=2&sort=asc",
        "max_tokens: 512, prompt_tokens=10, token_count=3",
        "Send an email to ann@example.com about the skiing trip.",
        "The monkey=3 and a key=value pair in prose",
        "sk-short is not a key; neither is task-1234",
        "What is 17.5% of 2,480?",
        "Basic arithmetic is Basic knowledge",
        "Reset the password if it is forgotten; the password policy is strict.",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert Redactor().text(text) == text


def test_declared_values_are_redacted_in_every_form_and_twice_changes_nothing() -> None:
    redactor = Redactor([SECRET, "p@ss word!"])
    text = f"token {SECRET}; url https://x.org/?q=p%40ss%20word%21 ; plain p@ss word!"
    once = redactor.text(text)
    assert SECRET not in once and "p@ss word!" not in once and "p%40ss" not in once
    assert redactor.text(once) == once
    assert Redactor(patterns=False).text(f"{KEY} {SECRET}") == f"{KEY} {SECRET}"
    assert Redactor([SECRET], patterns=False).text(f"{KEY} {SECRET}") == f"{KEY} {REDACTED}"
    assert SECRET not in repr(redactor)
    with pytest.raises(UserError, match="shorter than 4 characters"):
        Redactor(["abc"])


def test_data_is_redacted_by_value_and_by_secret_looking_key() -> None:
    data = {
        "city": "Oslo",
        "password": "pa55",
        "x-api-key": "anything",
        "max_tokens": 512,
        "next": [{"url": "https://u:p@h/"}, SECRET],
        "nested": {"client_secret": "zzz", "count": 2},
    }
    assert Redactor([SECRET]).value(data) == {
        "city": "Oslo",
        "password": REDACTED,
        "x-api-key": REDACTED,
        "max_tokens": 512,
        "next": [{"url": f"https://{REDACTED}@h/"}, REDACTED],
        "nested": {"client_secret": REDACTED, "count": 2},
    }


def test_data_nested_too_deep_to_check_is_redacted_whole() -> None:
    deep: object = SECRET
    for _ in range(5000):  # past the recursion limit: a model's runaway
        deep = [deep]
    redacted = Redactor([SECRET]).value({"text": deep})
    levels = 0
    inner = redacted["text"]
    while isinstance(inner, list):
        inner, levels = inner[0], levels + 1
    assert (inner, levels) == (TOO_DEEP, 99)
    assert Redactor().value([[["password=abc12"]]]) == [[[f"password={REDACTED}"]]]


def test_from_env_takes_secret_looking_variables_or_the_named_ones() -> None:
    environ = {
        "OPENAI_API_KEY": "opensesame-123",
        "GITHUB_TOKEN": "tok-abcdefgh",
        "DEBUG_TOKEN": "1",  # a flag, too short to be a secret
        "HOME": "/home/ann",
        "SERVICE_URL": "https://svc.example.com",
    }
    found = Redactor.from_env(environ=environ)
    assert sorted(found.values) == ["opensesame-123", "tok-abcdefgh"]
    named = Redactor.from_env(["SERVICE_URL", "MISSING"], environ=environ)
    assert named.text("see https://svc.example.com/x") == f"see {REDACTED}/x"


def _step(output: object) -> Step:
    call = ToolCall(id="c1", name="fetch", arguments={"url": f"https://ann:{SECRET}@h/"})
    return Step(
        run_id="r1",
        index=1,
        kind="tool",
        name="fetch",
        input={"url": f"https://ann:{SECRET}@h/", "password": "pa55"},
        output=output,
        error=f"failed with {SECRET}",  # type: ignore[arg-type]
        message=Message(role="assistant", content=f"using {KEY}", tool_calls=[call]),
    )


def test_records_are_copied_redacted_and_the_originals_kept() -> None:
    step = _step(f"ok {SECRET}")
    result = RunResult(
        run_id="r1",
        task=f"fetch with {SECRET}",
        status="ok",
        answer=f"done, key {KEY}",
        steps=[step],
        messages=[Message(role="user", content=f"fetch with {SECRET}")],
    )
    clean = Redactor([SECRET]).result(result)
    text = json.dumps(asdict(clean), default=str)
    assert SECRET not in text and KEY not in text and "pa55" not in text
    assert clean.steps[0].input == {"url": f"https://{REDACTED}@h/", "password": REDACTED}
    assert clean.steps[0].output == f"ok {REDACTED}" and clean.answer == f"done, key {REDACTED}"
    assert step.output == f"ok {SECRET}" and result.task == f"fetch with {SECRET}"  # untouched


def test_reports_and_the_terminal_show_no_secret(capsys: pytest.CaptureFixture[str]) -> None:
    from rich.console import Console

    redactor = Redactor([SECRET])
    step = _step(f"ok {SECRET}")
    assert SECRET not in step_line(step, redactor) and KEY not in step_line(step)
    result = RunResult(run_id="r1", task=f"use {SECRET}", status="ok", answer=SECRET, steps=[step])
    console = Console(record=True, width=200)
    print_trace(console, result, redactor)
    printed = console.export_text()
    assert SECRET not in printed and REDACTED in printed
    assert SECRET not in json.dumps(result_json(result, redactor), default=str)
    summary = RunSummary(
        run_id="r1",
        task=f"use {SECRET}",
        model="m",
        status="ok",
        answer=None,
        error=None,
        started_at=0.0,
        ended_at=1.0,
        steps=1,
        tool_calls=1,
        prompt_tokens=0,
        completion_tokens=0,
        config={},
    )
    table = Console(record=True, width=200)
    table.print(runs_table([summary], redactor))
    assert SECRET not in table.export_text()
    terminal = Terminal(json_out=True, redactor=redactor)
    terminal.show_result(result)
    Terminal(redactor=redactor).show_step(step)
    shown = capsys.readouterr()
    assert SECRET not in shown.out + shown.err and REDACTED in shown.out


@make_tool
def fetch(url: str) -> str:
    """Fetch a page.

    Args:
        url: the page's address.
    """
    return f"fetched {url}; session key {KEY}; db password is {SECRET}"


def test_a_run_with_secrets_leaves_none_in_the_trace_file(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "t.db")
    url = f"https://ann:{SECRET}@intranet.example.com/report?api_key=abcdef123"
    model = ScriptedModel(
        [
            json.dumps({"tool_calls": [{"name": "fetch", "arguments": {"url": url}}]}),
            json.dumps({"answer": f"The report says {SECRET}."}),
        ]
    )
    loop = Loop(model, [fetch], store=store, secrets=[SECRET])
    result = loop.run_sync(f"Summarise {url}")
    assert result.answer == f"The report says {SECRET}."  # the run itself keeps them
    store.close()
    db = sqlite3.connect(tmp_path / "t.db")
    stored = json.dumps(
        [db.execute(f"SELECT * FROM {t}").fetchall() for t in ("runs", "steps", "intents")]
    )
    for secret in (SECRET, KEY, "abcdef123", "ann:"):
        assert secret not in stored
    assert REDACTED in stored
    reopened = TraceStore(tmp_path / "t.db").result(result.run_id)
    assert (
        reopened.task
        == f"Summarise https://{REDACTED}@intranet.example.com/report?api_key={REDACTED}"
    )


def test_a_value_redacted_under_a_secret_key_is_redacted_everywhere_after(
    tmp_path: Path,
) -> None:
    from bigloop import Loop, ScriptedModel, TraceStore, tool

    @tool
    def login(user: str, password: str) -> str:
        """Log in.

        Args:
            user: who.
            password: their password.
        """
        return f"welcome {user}; your password {password} is weak"

    store = TraceStore(tmp_path / "t.db")
    call = {"name": "login", "arguments": {"user": "ann", "password": "hunter22x"}}
    script = [json.dumps({"tool_calls": [call]}), json.dumps({"answer": "hunter22x works"})]
    result = Loop(ScriptedModel(script), [login], store=store).run_sync("Log ann in.")
    assert result.answer == "hunter22x works"  # the caller gets the answer as it is
    stored = [str(s.output) + str(s.input) for s in store.steps(result.run_id)]
    assert not any("hunter22x" in s for s in stored)
    assert "hunter22x" not in str(store.run(result.run_id).answer)


def test_a_secret_said_in_the_task_is_redacted_wherever_it_appears_after(
    tmp_path: Path,
) -> None:
    """Regression (issue 26, item 12): "my password is ..." in a task was stored; so were
    the password in the call's arguments and the tool's echo of it."""
    from bigloop import Loop, ScriptedModel, TraceStore, tool

    @tool
    def login(user: str, secret: str) -> str:
        """Log in.

        Args:
            user: who.
            secret: what they said.
        """
        return f"welcome {user} ({secret})"

    store = TraceStore(tmp_path / "t.db")
    call = {"name": "login", "arguments": {"user": "ann", "secret": "tulip-9931"}}
    script = [json.dumps({"tool_calls": [call]}), json.dumps({"answer": "Logged in."})]
    task = "Log ann in; my password is tulip-9931."
    result = Loop(ScriptedModel(script), [login], store=store).run_sync(task)
    run = store.run(result.run_id)
    stored = [run.task, *(str(s.output) + str(s.input) for s in store.steps(result.run_id))]
    assert run.task == f"Log ann in; my password is {REDACTED}."
    assert not any("tulip-9931" in s for s in stored), stored
    store.close()
