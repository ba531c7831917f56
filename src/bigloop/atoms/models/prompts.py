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
Take argument values from the user's request, not from the examples in descriptions; \
give an optional argument only when the request states its value.
Never compute by yourself what a tool can compute; never invent tools or arguments."""

RESULTS = """\
Tool results so far for my request ({task}):
{results}
If they give what I asked for, reply {{"answer": "<the answer>"}} now; call another tool only \
if something I asked for is still missing."""

USER_ANSWERED = "Answer to the question {question!r}: {answer}"
"""The loop's note of the user's answer to a question, given on resume (the answer is
the user's own words, although the loop writes the note)."""

ANSWER_NOW = "Using the results above, answer my request now: {task}"

FROM_MEMORY = (
    "You answered {number} without using a tool, and the request does not say it. Call the "
    "tool that computes or looks it up, then answer."
)
"""The planner rule `check_answers`: an answer from memory (a number no tool gave, or a
calculation left unevaluated)."""

UNEVALUATED = (
    "Your answer is a calculation left unevaluated. Call the tool that computes it, then "
    "answer with the result."
)
"""The planner rule `check_answers`: an answer that is bare arithmetic after tools were
used (a sum of the values a file gave, not the sum)."""

UNUSED_QUANTITY = (
    "Your answer repeats a tool's result, but my request also gives {value}, which no call "
    "has used yet. Call a tool that uses {value} to finish my request."
)
"""The planner rule `use_quantities` (`policies.quantities`): an answer one step short."""

DEMOS_HEADER = """\
Examples of requests and the replies that solved them (their tools may differ from \
yours; take values only from the request you are given):"""

NO_TOOLS_SYSTEM = "You are a precise, concise assistant."

# Tool making (`bigloop.atoms.made.make_tool`).
MAKE_TOOL_SYSTEM = """\
You write small, correct Python functions that other programs call as tools. Use only \
the standard library; no files, network or processes. Return plain JSON values \
(numbers, strings, lists, objects)."""

MAKE_TOOL_REQUEST = """\
Write one Python function that does this:
{description}

It must give these results for these arguments (one JSON object per line):
{examples}

Reply with the tool: a snake_case "name" (the function's name), a one-sentence \
"description" for someone deciding whether to call it, "parameters" (a JSON schema of \
type object with a property, type and description for each argument, and "required"), \
and "source": the complete code defining `def <name>(...)` with exactly those \
parameters, imports inside it or at the top."""

MAKE_TOOL_FOR_TASK_REQUEST = """\
A small assistant got this request wrong:
{task}

The right answer is: {answer}

Write one general, reusable Python function for requests of this kind (the same kind \
of task with other values), so that the assistant can call it instead of working it out \
itself. Every value that can change between such requests is a parameter: hard-code \
no number or name from this request.

Reply with the tool: a snake_case "name" (the function's name), a one-sentence \
"description" for someone deciding whether to call it, "parameters" (a JSON schema of \
type object with a property, type and description for each argument, and "required"), \
"source": the complete code defining `def <name>(...)` with exactly those parameters, \
and "arguments": the call that answers the request above (each value as written in it)."""

MAKE_TOOL_RETRY = """\
That tool was rejected: {reason}
Reply with a corrected tool in the same form (write the source with real line breaks \
and indentation)."""

# The model-as-judge verifier (`bigloop.atoms.verifiers.JudgeVerifier`).
JUDGE_SYSTEM = """\
You check the work of a junior assistant that completes requests by calling tools. \
Judge strictly: a reply is right only if doing exactly what it says gives the user \
what they asked for."""

JUDGE_REQUEST = """\
Functions the assistant can call (name, description, JSON schema of the arguments):
{tools}

The conversation so far:
{conversation}

The assistant's next step:
{reply}

Check that step. A function call is right when the function does what the user asked, \
every required argument is given, and each value is the one the user stated (not \
invented, not an example from a description); when the request needs several calls, all \
of them are made. An answer without calls is right when the results support it, or when \
it says that no function can do the request and none can. Give a short reason, then a \
score from 0 (surely wrong) to 10 (surely right)."""


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
    """Messages for a plain chat template: tools in the system prompt; after each batch of
    tool calls, one user turn listing every result so far, as `call -> result`, with the
    request restated (small models lose track of both)."""
    system = "\n\n".join(m.content for m in messages if m.role == "system") or None
    task = ""
    out = [{"role": "system", "content": tool_system_prompt(tools, system)}]
    calls: dict[str, str] = {}
    results: list[str] = []
    pending = False
    for m in messages:
        if m.role == "tool":
            call = calls.get(m.tool_call_id or "", f"{m.name}(…)")
            results.append(f"{call} -> {m.content}")
            pending = True
            continue
        if pending:
            out.append(_results_turn(results, task))
            pending = False
        if m.role == "assistant":
            for c in m.tool_calls:
                args = json.dumps(c.arguments, ensure_ascii=False)
                calls[c.id] = f"{c.name}({args})"
            out.append({"role": "assistant", "content": render_call_reply(m)})
        elif m.role == "user":
            if m.origin == "user" and m.answers is None:  # a request, not an answer
                task = m.content
            out.append({"role": "user", "content": m.content})
    if pending:
        out.append(_results_turn(results, task))
    return out


def _results_turn(results: list[str], task: str) -> dict[str, str]:
    return {"role": "user", "content": RESULTS.format(results="\n".join(results), task=task)}
