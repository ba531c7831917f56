"""`bigloop serve mcp` for a loop on a scripted model (tests): one tool, `send_note`;
a task naming no receiver makes the run ask who gets the note.

    python scripted_loop.py TRACE_DB [--http PORT]
"""

from __future__ import annotations

import argparse
import json

from bigloop import Clarify, FunctionModel, Loop, Message, ToolSpec, TraceStore, tool
from bigloop.protocols.mcp_server import serve_mcp

ANSWERED = "Answer to the question"


def call(name: str, **arguments: object) -> str:
    return json.dumps({"tool_calls": [{"name": name, "arguments": arguments}]})


def answer(text: str) -> str:
    return json.dumps({"answer": text})


@tool(idempotent=False, effect="write")
def send_note(receiver: str, text: str) -> str:
    """Send a note to a person.

    Args:
        receiver: who gets the note.
        text: the note.
    """
    return f"sent to {receiver}"


def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
    """Calls send_note (to a receiver the task or the user's answer names, else to an
    invented one), then answers with its result."""
    if messages[-1].role == "tool":
        return answer(f"Done: {messages[-1].content}.")
    answers = [m.content for m in messages if m.role == "user" and m.content.startswith(ANSWERED)]
    if answers:
        return call("send_note", receiver=answers[-1].rsplit(": ", 1)[1], text="hi")
    task = next(m.content for m in messages if m.role == "user")
    return call("send_note", receiver="Ann" if "Ann" in task else "colleague_1", text="hi")


def scripted_loop(trace_db: str | None) -> Loop:
    store = TraceStore(trace_db) if trace_db else None
    model = FunctionModel(reply, name="scripted")
    return Loop(model, [send_note], clarify=Clarify(retry_first=False), store=store)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("trace_db")
    parser.add_argument("--http", default=None)
    options = parser.parse_args()
    serve_mcp(scripted_loop(options.trace_db), http=options.http)
