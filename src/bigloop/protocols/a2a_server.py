"""`bigloop serve a2a`: a loop published as an A2A agent (the official `a2a-sdk`, JSON-RPC).

The agent card lists the loop's tools as its skills. A message starts a task that runs
the loop, and the task follows the run as it happens:

- each completed step (a model turn, a tool call) is a `working` status update whose
  message is the step in one line;
- the answer is an artifact named "answer", then the task is `completed`;
- a clarifying question ends the request `input-required`, the question as the status
  message. The next message on the same task is the answer: the run resumes
  (`Loop.resume`, same run id; the trace shows the question and the answer as an "ask"
  step);
- a run that fails or exceeds its budget ends the task `failed`, the reason as its message;
- a cancel stops the run (its trace says "interrupted") and ends the task `canceled`.

Each status update carries the run id in its metadata (`bigloop_run_id`, merged into the
task's metadata), so a follow-up finds its run from the task alone.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from a2a.helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    Task,
    TaskState,
)
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol
from a2a.utils.errors import InvalidParamsError, UnsupportedOperationError
from starlette.applications import Starlette
from starlette.middleware import Middleware

from bigloop._errors import UserError
from bigloop.loop import Loop, OnStep
from bigloop.protocols.guard import LOOPBACK, Guard, allowed_hosts_for, require_token
from bigloop.protocols.threaded import http_url, in_thread
from bigloop.trace.records import RunResult, Step
from bigloop.trace.redact import Redactor

RUN_ID = "bigloop_run_id"
"""The metadata key of a task's run id."""

Start = Callable[[OnStep], Coroutine[Any, Any, RunResult]]

_CANCEL_WAIT_S = 10.0  # a cancelled run records itself "interrupted" well within this
_STEP_CHARS = 500


def agent_card(
    loop: Loop, url: str, *, name: str = "bigloop", description: str | None = None
) -> AgentCard:
    """The A2A agent card of `loop` served at `url`: one skill per tool (its name and
    description), text in and out, streaming."""
    skills = [
        AgentSkill(id=s.name, name=s.name, description=s.description or s.name, tags=["tool"])
        for s in loop.specs
    ] or [
        AgentSkill(
            id="answer", name="answer", description="Answers a task in words.", tags=["task"]
        )
    ]
    tools = ", ".join(s.name for s in loop.specs) or "no tools"
    return AgentCard(
        name=name,
        description=description or f"A bigloop loop over {loop.model.name} ({tools}).",
        version=_version(),
        supported_interfaces=[
            AgentInterface(
                url=url,
                protocol_binding=TransportProtocol.JSONRPC.value,
                protocol_version=PROTOCOL_VERSION_CURRENT,
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=skills,
    )


def create_app(
    loop: Loop,
    *,
    url: str,
    name: str = "bigloop",
    description: str | None = None,
    allowed_hosts: Sequence[str] = LOOPBACK,
    token: str | None = None,
) -> Starlette:
    """An ASGI app serving `loop` as an A2A agent: the card at
    `/.well-known/agent-card.json`, JSON-RPC at `/`.

    Args:
        url: where clients reach the app (the card's interface URL), e.g.
            "http://127.0.0.1:9999/".
        allowed_hosts: the host names requests may be addressed to (`Guard`: Host and
            Origin checked, bodies capped).
        token: the bearer token requests must carry (None: none).

    Raises:
        UserError: the loop has no trace store (a question's answer resumes the run from
            it).
    """
    if loop.store is None:
        raise UserError(
            "An A2A agent resumes runs from its trace store: build the loop with "
            "store=TraceStore(...)."
        )
    card = agent_card(loop, url, name=name, description=description)
    handler = DefaultRequestHandler(
        agent_executor=LoopExecutor(loop), task_store=InMemoryTaskStore(), agent_card=card
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await handler.aclose()

    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")]
    guard = Middleware(Guard, allowed_hosts=allowed_hosts, token=token)
    return Starlette(routes=routes, lifespan=lifespan, middleware=[guard])


class LoopExecutor(AgentExecutor):
    """Runs the loop for A2A requests: a new task runs `Loop.run`; a message on a task
    waiting for input resumes its run with the message as the answer."""

    def __init__(self, loop: Loop) -> None:
        self.loop = loop
        self._runs: dict[str, asyncio.Task[RunResult]] = {}
        self._cancelled: set[str] = set()
        self._redactor = loop.store.redactor if loop.store else Redactor.from_env()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = _ids(context)
        updater = TaskUpdater(event_queue, task_id, context_id)
        text = context.get_user_input()
        current = context.current_task
        start: Start
        if current is None:
            if context.message is None or not text.strip():
                raise InvalidParamsError(message="Send the task as a text part.")
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
            start = _starting(self.loop, text)
        else:
            if current.context_id != context_id:  # answers come from the conversation asked
                raise InvalidParamsError(
                    message=f"Task {task_id} belongs to another context; answer it from the "
                    "context that started it."
                )
            run_id = _run_id(current)
            if current.status.state != TaskState.TASK_STATE_INPUT_REQUIRED or run_id is None:
                raise UnsupportedOperationError(
                    message=f"Task {task_id} is not waiting for an answer "
                    f"({TaskState.Name(current.status.state)}); start a new task."
                )
            start = _resuming(self.loop, run_id, text)
        await updater.start_work()
        try:
            result = await self._drive(task_id, start, updater)
            if result is not None and task_id not in self._cancelled:
                await self._finish(result, updater)
        finally:
            self._cancelled.discard(task_id)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = _ids(context)
        self._cancelled.add(task_id)
        run = self._runs.get(task_id)
        if run is not None and not run.done():
            run.cancel()
            await asyncio.wait({run}, timeout=_CANCEL_WAIT_S)
        elif context.current_task is not None and self.loop.store is not None:
            parked = context.current_task
            run_id = _run_id(parked)
            if run_id and parked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
                self.loop.store.finish_run(
                    run_id, "interrupted", None, "cancelled by the A2A client"
                )
            self._cancelled.discard(task_id)
        updater = TaskUpdater(event_queue, task_id, context_id)
        await updater.cancel(updater.new_agent_message([Part(text="Cancelled.")]))

    async def _drive(self, task_id: str, start: Start, updater: TaskUpdater) -> RunResult | None:
        """Run `start`, streaming each step as a `working` update; None when cancelled."""
        steps: asyncio.Queue[Step | None] = asyncio.Queue()
        run = asyncio.create_task(start(steps.put_nowait))
        run.add_done_callback(lambda _: steps.put_nowait(None))
        self._runs[task_id] = run
        try:
            while (step := await steps.get()) is not None:
                if task_id in self._cancelled:
                    break
                shown = self._redactor.step(step)
                message = updater.new_agent_message(
                    [Part(text=step_text(shown))],
                    metadata={"step": step.index, "kind": step.kind, "name": shown.name},
                )
                await updater.update_status(
                    TaskState.TASK_STATE_WORKING, message=message, metadata={RUN_ID: step.run_id}
                )
            return await run
        except asyncio.CancelledError:
            this = asyncio.current_task()
            if task_id in self._cancelled and this is not None and not this.cancelling():
                return None  # our cancel() stopped the run; it writes the task's end
            raise
        finally:
            self._runs.pop(task_id, None)
            if not run.done():
                run.cancel()
                await asyncio.wait({run}, timeout=_CANCEL_WAIT_S)

    async def _finish(self, result: RunResult, updater: TaskUpdater) -> None:
        meta = {RUN_ID: result.run_id}
        if result.status == "ok":
            answer = self._redactor.text(result.answer or "")
            await updater.add_artifact([Part(text=answer)], name="answer", last_chunk=True)
            await updater.update_status(TaskState.TASK_STATE_COMPLETED, metadata=meta)
        elif result.status == "input_required":
            question = self._redactor.text(result.question or "")
            await updater.update_status(
                TaskState.TASK_STATE_INPUT_REQUIRED,
                message=updater.new_agent_message([Part(text=question)]),
                metadata=meta,
            )
        else:
            why = self._redactor.text(f"The run ended {result.status}: {result.error}")
            await updater.update_status(
                TaskState.TASK_STATE_FAILED,
                message=updater.new_agent_message([Part(text=why)]),
                metadata=meta,
            )


def step_text(step: Step) -> str:
    """A step in one line: a model turn's calls (or "answered"), a tool's result or error,
    a question and its answer."""
    if step.kind == "model":
        calls = step.message.tool_calls if step.message else []
        if calls:
            made = ", ".join(
                f"{c.name}({json.dumps(c.arguments, ensure_ascii=False)})" for c in calls
            )
            return f"model: {made}"
        return f"model: {step.error}" if step.error else "model: answered"
    if step.kind == "ask":
        question = step.input.get("question") if isinstance(step.input, dict) else step.input
        return f"asked: {question} -> {step.output}"[:_STEP_CHARS]
    outcome = f"error: {step.error}" if step.error else str(step.output)
    return f"{step.name} -> {outcome}"[:_STEP_CHARS]


def serve_a2a(
    loop: Loop,
    *,
    host: str = "127.0.0.1",
    port: int = 9999,
    url: str | None = None,
    name: str = "bigloop",
    description: str | None = None,
    token: str | None = None,
) -> None:
    """Serve `loop` as an A2A agent until interrupted (`bigloop serve a2a`).

    Args:
        host: the address to bind; the default answers this machine only. "0.0.0.0"
            answers the whole network, and needs a `token`.
        url: the URL clients use (the agent card's), default `http://HOST:PORT/`.
        token: the bearer token clients must send; required beyond loopback.

    Raises:
        UserError: `host` is not loopback and there is no `token`.
    """
    import uvicorn

    require_token(host, token)

    from bigloop.atoms.models.local import LocalModel

    if isinstance(loop.model, LocalModel):
        loop.model.llama()  # load the weights now, not during the first task
    shown = f"[{host}]" if ":" in host else host
    app = create_app(
        loop,
        url=url or f"http://{shown}:{port}/",
        name=name,
        description=description,
        allowed_hosts=allowed_hosts_for(host),
        token=token,
    )
    uvicorn.run(app, host=host, port=port, log_level="info")


@contextmanager
def serving(
    loop: Loop,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    name: str = "bigloop",
    description: str | None = None,
) -> Iterator[str]:
    """`loop` served as an A2A agent by uvicorn in a background thread, for tests,
    notebooks and benchmarks; yields the agent's URL. Port 0 takes a free port.

    Raises:
        RuntimeError: the server did not start within 10 s.
    """
    import uvicorn

    # IPPROTO_TCP, not the default 0: asyncio sets TCP_NODELAY only on sockets that say
    # TCP, and without it every response on a kept-alive connection waits ~40 ms (Nagle
    # against the client's delayed ACK).
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind((host, port))
    url = f"{http_url(host, sock.getsockname()[1])}/"
    app = create_app(loop, url=url, name=name, description=description)
    config = uvicorn.Config(app, log_level="warning", ws="none", timeout_graceful_shutdown=2)
    failure = f"The A2A server for {url} did not start."
    with in_thread(uvicorn.Server(config), sock, failure=failure, name="bigloop-a2a"):
        yield url


def _starting(loop: Loop, task: str) -> Start:
    return lambda on_step: loop.run(task, on_step=on_step)


def _resuming(loop: Loop, run_id: str, answer: str) -> Start:
    return lambda on_step: loop.resume(run_id, answer=answer, on_step=on_step)


def _ids(context: RequestContext) -> tuple[str, str]:
    if not context.task_id or not context.context_id:
        raise InvalidParamsError(message="The request names no task or context.")
    return context.task_id, context.context_id


def _run_id(task: Task) -> str | None:
    value = task.metadata[RUN_ID] if RUN_ID in task.metadata else None
    return value if isinstance(value, str) and value else None


def _version() -> str:
    try:
        return version("bigloop")
    except PackageNotFoundError:
        return "0"
