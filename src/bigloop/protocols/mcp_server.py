"""`bigloop serve mcp`: a loop's tools, and the loop itself, to any MCP client.

Served with the official `mcp` SDK's low-level server, over stdio or streamable HTTP:

- every tool of the loop (the set `bigloop run` gets with the same options), with its
  schema and description, annotated from its effect (read-only, destructive,
  idempotent); a call runs `Tool.call`, and invalid arguments or a failure come back
  as a result flagged `isError` — what the calling model can act on;
- `run_task`: the whole loop as one tool. Its input is a task in words; its result is
  the answer (and, as structured content, the run's id, status and answer).

A run that must ask the user (a clarifying question, `InputRequired`) stops with the
question; what happens next depends on the client:

- a client on the 2026-07-28 protocol that declared elicitation gets an
  `input_required` result carrying a form elicitation (one string, `answer`) and a
  request state naming the run, sealed by the SDK (`RequestStateBoundary`: a client
  cannot forge another run's). Its retry with the answer resumes the run
  (`Loop.resume`), which may ask again;
- a client on an earlier protocol that declared elicitation is sent an
  `elicitation/create` request during the call; its answer resumes the run;
- any other client gets the question as the result, with the run's id: calling
  `run_task` again with that `run_id` and the answer as `task` resumes the run (so
  does `bigloop resume RUN_ID --answer ...`).

Resuming needs the loop's trace store; without one, the question is the result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import anyio
from mcp import MCPError
from mcp import types as mcp_types
from mcp.server import Server, ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.stdio import stdio_server
from mcp.types.version import is_version_at_least

from bigloop import __version__
from bigloop._errors import InvalidArguments, ToolFailure, UserError
from bigloop.atoms.tool import Tool
from bigloop.loop import Loop
from bigloop.protocols.guard import Guard, allowed_hosts_for, require_token
from bigloop.trace.records import RunResult

RUN_TASK = "run_task"
_ASK_KEY = "answer"  # the key of the one input request of an `input_required` result
_INPUT_REQUIRED = "2026-07-28"  # the first revision carrying questions in the result
_ANSWER_SCHEMA: mcp_types.ElicitRequestedSchema = {
    "type": "object",
    "properties": {"answer": {"type": "string", "description": "your answer"}},
    "required": ["answer"],
}
_RUN_TASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task": {
            "type": "string",
            "description": "what to do, in words; or, with run_id, the answer to the "
            "question that run asked",
        },
        "run_id": {
            "type": "string",
            "description": "only when answering a question a run asked: that run's id",
        },
    },
    "required": ["task"],
}


def create_server(loop: Loop, *, name: str = "bigloop") -> Server[Any]:
    """An MCP server (the SDK's low-level `Server`) exposing `loop`'s tools and
    `run_task`; serve it with `serve_mcp`, or with any of the SDK's transports.

    Raises:
        UserError: one of the loop's tools is named `run_task`.
    """
    tools = dict(loop.tools)
    if RUN_TASK in tools:
        raise UserError(f"A tool of the loop is named {RUN_TASK!r}, the loop's own tool.")
    listed = [_listed(tool) for tool in tools.values()] + [_run_task_listed(loop)]
    schemas = {tool.name: tool.input_schema for tool in listed}
    started: set[str] = set()  # the runs this server started: the only ones it resumes

    async def list_tools(
        ctx: ServerRequestContext[Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        return mcp_types.ListToolsResult(tools=listed)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: mcp_types.CallToolRequestParams
    ) -> mcp_types.CallToolResult | mcp_types.InputRequiredResult:
        if params.name == RUN_TASK:
            return await _run_task(loop, ctx, params, started)
        tool = tools.get(params.name)
        if tool is None:
            raise MCPError(
                mcp_types.INVALID_PARAMS,
                f"Unknown tool {params.name!r}; the tools are {sorted(schemas)}.",
            )
        try:
            text = await tool.call(params.arguments or {})
        except (InvalidArguments, ToolFailure) as e:
            return _result(str(e), error=True)
        return _result(text)

    server: Server[Any] = Server(
        name,
        version=__version__,
        instructions=f"The tools of a bigloop loop (model {loop.model.name}), and "
        f"{RUN_TASK}: the whole loop, given a task in words.",
        get_tool_input_schema=schemas.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    server.middleware.append(
        RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=name)
    )
    return server


def serve_mcp(
    loop: Loop, *, http: str | None = None, name: str = "bigloop", token: str | None = None
) -> None:
    """Serve `loop` over stdio until stdin closes, or with `http="HOST:PORT"` over
    streamable HTTP at `http://HOST:PORT/mcp` until interrupted (`bigloop serve mcp`).
    Over HTTP the requests pass bigloop's guard (`bigloop.protocols.guard`: Host, Origin,
    body cap, unreadable bodies, `token`).

    Raises:
        UserError: `http` is not HOST:PORT, or is beyond loopback without a `token`.
    """
    server = create_server(loop, name=name)
    if http is None:
        anyio.run(_serve_stdio, server)
        return
    import uvicorn

    host, port = _host_port(http)
    require_token(host, token)
    uvicorn.run(http_app(server, host, token), host=host, port=port, log_level="warning")


def http_app(server: Server[Any], host: str, token: str | None = None) -> Any:
    """The streamable-HTTP ASGI app of `server` listening on `host`, behind the guard."""
    app = server.streamable_http_app(host=host, stateless_http=True)
    return Guard(app, allowed_hosts=allowed_hosts_for(host), token=token)


async def _serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def _host_port(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError(f"--http {address!r}: give HOST:PORT, e.g. 127.0.0.1:8765.")
    return host.strip("[]"), int(port)


def _listed(tool: Tool) -> mcp_types.Tool:
    return mcp_types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.schema,
        annotations=mcp_types.ToolAnnotations(
            read_only_hint=tool.effect == "read",
            destructive_hint=tool.effect == "irreversible",
            idempotent_hint=tool.idempotent,
            open_world_hint=False,
        ),
    )


def _run_task_listed(loop: Loop) -> mcp_types.Tool:
    names = ", ".join(loop.tools) or "no tools"
    return mcp_types.Tool(
        name=RUN_TASK,
        description=f"Do a task in words with a tool-calling loop (model {loop.model.name}; "
        f"tools: {names}) and return its answer. When the run asks a question, answer "
        f"it with a second call: the answer as task, and the run_id given.",
        input_schema=_RUN_TASK_SCHEMA,
        annotations=mcp_types.ToolAnnotations(
            read_only_hint=all(t.effect == "read" for t in loop.tools.values()),
            destructive_hint=any(t.effect == "irreversible" for t in loop.tools.values()),
            idempotent_hint=False,
            open_world_hint=False,
        ),
    )


async def _run_task(
    loop: Loop,
    ctx: ServerRequestContext[Any],
    params: mcp_types.CallToolRequestParams,
    started: set[str],
) -> mcp_types.CallToolResult | mcp_types.InputRequiredResult:
    """Run (or resume) the loop; ask the client when the run asks and the client can.

    Only a run this server started is resumed, and only by its whole id (which only the
    client that started it was given): another client cannot answer a run's question by
    guessing a prefix, nor resume a run another program wrote to the same trace file."""
    arguments = params.arguments or {}
    task, run_id = arguments.get("task"), arguments.get("run_id")
    if not isinstance(task, str) or not task.strip() or not isinstance(run_id, str | None):
        return _result(
            f"{RUN_TASK} takes a task (a non-empty string) and optionally a run_id.",
            error=True,
        )
    try:
        if params.request_state is not None:
            run_id = json.loads(params.request_state)["run_id"]
            answer = _answer(params.input_responses)
            if answer is None:
                return _result(
                    f"Run {run_id} stays stopped on its question: no answer was given. "
                    f"Answer later with {RUN_TASK}(task=ANSWER, run_id={run_id!r}).",
                    error=True,
                )
            result = await _resume(loop, started, run_id, answer)
        elif run_id is not None:
            result = await _resume(loop, started, run_id, task)
        else:
            result = await loop.run(task)
            started.add(result.run_id)
        while result.status == "input_required" and loop.store is not None:
            question = result.question or result.error or ""
            if _asks_in_result(ctx):
                return mcp_types.InputRequiredResult(
                    input_requests={_ASK_KEY: _elicitation(question)},
                    request_state=json.dumps({"run_id": result.run_id}),
                )
            answer = await _elicit_now(ctx, question)
            if answer is None:
                break
            result = await loop.resume(result.run_id, answer=answer)
    except UserError as e:  # e.g. no such run, or no store to resume from
        return _result(str(e), error=True)
    return _outcome(result, resumable=loop.store is not None)


async def _resume(loop: Loop, started: set[str], run_id: object, answer: str) -> RunResult:
    """`loop.resume(run_id, answer=answer)` for a run this server started.

    Raises:
        UserError: any other id (the message does not say whether such a run exists).
    """
    if not isinstance(run_id, str) or run_id not in started:
        raise UserError(f"No run of this server has the id {run_id!r}.")
    return await loop.resume(run_id, answer=answer)


def _elicitation(question: str) -> mcp_types.ElicitRequest:
    return mcp_types.ElicitRequest(
        params=mcp_types.ElicitRequestFormParams(message=question, requested_schema=_ANSWER_SCHEMA)
    )


def _can_elicit(ctx: ServerRequestContext[Any]) -> bool:
    capabilities = ctx.session.client_capabilities
    return capabilities is not None and capabilities.elicitation is not None


def _asks_in_result(ctx: ServerRequestContext[Any]) -> bool:
    """The client takes questions as `input_required` results (2026-07-28 and later)."""
    modern = is_version_at_least(ctx.protocol_version, _INPUT_REQUIRED)
    return modern and _can_elicit(ctx)


async def _elicit_now(ctx: ServerRequestContext[Any], question: str) -> str | None:
    """Ask a client of an earlier protocol during the call; None when it cannot be asked
    or gave no answer."""
    if is_version_at_least(ctx.protocol_version, _INPUT_REQUIRED) or not _can_elicit(ctx):
        return None
    try:
        reply = await ctx.session.elicit_form(
            question, _ANSWER_SCHEMA, related_request_id=ctx.request_id
        )
    except MCPError:  # no channel back to the client (e.g. stateless HTTP)
        return None
    return _accepted(reply)


def _answer(responses: Mapping[str, Any] | None) -> str | None:
    reply = (responses or {}).get(_ASK_KEY)
    return _accepted(reply) if isinstance(reply, mcp_types.ElicitResult) else None


def _accepted(reply: mcp_types.ElicitResult) -> str | None:
    if reply.action != "accept" or not reply.content:
        return None
    answer = reply.content.get("answer")
    return str(answer) if answer not in (None, "") else None


def _outcome(result: RunResult, *, resumable: bool) -> mcp_types.CallToolResult:
    structured = {"run_id": result.run_id, "status": result.status, "answer": result.answer}
    if result.status == "ok":
        return _result(result.answer or "", structured=structured)
    if result.status == "input_required":
        question = result.question or result.error or ""
        how = (
            f"Answer with {RUN_TASK}(task=ANSWER, run_id={result.run_id!r}), or "
            f"`bigloop resume {result.run_id} --answer ANSWER`."
            if resumable
            else "This server keeps no trace store, so the run cannot be resumed."
        )
        structured["question"] = question
        return _result(f"The run needs an answer: {question}\n{how}", structured=structured)
    structured["error"] = result.error
    return _result(
        f"Run {result.run_id} ended {result.status}: {result.error}",
        error=True,
        structured=structured,
    )


def _result(
    text: str, *, error: bool = False, structured: dict[str, Any] | None = None
) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=error,
    )
