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
    """Messages for a plain chat template: tools in the system prompt, results as user turns."""
    system = "\n\n".join(m.content for m in messages if m.role == "system") or None
    out = [{"role": "system", "content": tool_system_prompt(tools, system)}]
    for m in messages:
        if m.role == "system":
            continue
        if m.role == "assistant":
            out.append({"role": "assistant", "content": render_call_reply(m)})
        elif m.role == "tool":
            text = f"Result of {m.name}: {m.content}"
            if out[-1]["role"] == "user" and out[-1]["content"].startswith("Result of "):
                out[-1]["content"] += "\n" + text
            else:
                out.append({"role": "user", "content": text})
        else:
            out.append({"role": "user", "content": m.content})
    return out
