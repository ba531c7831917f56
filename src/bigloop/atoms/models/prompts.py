"""Every prompt bigloop sends to a model that has no native tool calling, in one place."""

from __future__ import annotations

import json

from bigloop.atoms.models.base import Message, ToolSpec

TOOL_SYSTEM = """\
You are a precise assistant that completes tasks by calling tools.

Available tools (name, description, JSON schema of the arguments):
{tools}

Reply with JSON only, in exactly one of two forms:
{{"tool_calls": [{{"name": "<tool name>", "arguments": {{...}}}}]}}
  to call one or more tools; put every independent call the task needs in the list.
{{"answer": "<final answer>"}}
  when the tool results (or the conversation) contain what the user asked for.
Take argument values from the user's request, not from the examples in descriptions.
Never compute by yourself what a tool can compute; never invent tools or arguments."""

RESULTS = """\
Tool results for my request ({task}):
{results}
If they give what I asked for, reply {{"answer": "<the answer>"}} now; call another tool only \
if something I asked for is still missing."""

ANSWER_NOW = "Using the results above, answer my request now: {task}"

NO_TOOLS_SYSTEM = "You are a precise, concise assistant."


def describe_tools(tools: list[ToolSpec]) -> str:
    lines = []
    for spec in tools:
        schema = json.dumps(spec.parameters, separators=(",", ":"), ensure_ascii=False)
        lines.append(f"- {spec.name}: {spec.description}\n  arguments schema: {schema}")
    return "\n".join(lines)


def tool_system_prompt(tools: list[ToolSpec], system: str | None = None) -> str:
    prompt = TOOL_SYSTEM.format(tools=describe_tools(tools)) if tools else NO_TOOLS_SYSTEM
    return f"{system}\n\n{prompt}" if system else prompt


def render_call_reply(message: Message) -> str:
    """An assistant turn, in the JSON form the model was asked to write."""
    if message.tool_calls:
        calls = [{"name": c.name, "arguments": c.arguments} for c in message.tool_calls]
        return json.dumps({"tool_calls": calls}, ensure_ascii=False)
    if message.content.lstrip().startswith(("{", "[")):
        return message.content  # the model's own (possibly malformed) JSON, shown as written
    return json.dumps({"answer": message.content}, ensure_ascii=False)


def to_plain_chat(messages: list[Message], tools: list[ToolSpec]) -> list[dict[str, str]]:
    """Messages for a plain chat template: tools in the system prompt, each group of tool
    results as one user turn that restates the request (small models lose track of it)."""
    system = "\n\n".join(m.content for m in messages if m.role == "system") or None
    task = next((m.content for m in messages if m.role == "user"), "")
    out = [{"role": "system", "content": tool_system_prompt(tools, system)}]
    results: list[str] = []
    for m in messages:
        if m.role == "tool":
            results.append(f"Result of {m.name}: {m.content}")
            continue
        if results:
            out.append(
                {"role": "user", "content": RESULTS.format(results="\n".join(results), task=task)}
            )
            results = []
        if m.role == "assistant":
            out.append({"role": "assistant", "content": render_call_reply(m)})
        elif m.role == "user":
            out.append({"role": "user", "content": m.content})
    if results:
        out.append(
            {"role": "user", "content": RESULTS.format(results="\n".join(results), task=task)}
        )
    return out
