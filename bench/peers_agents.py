"""One peer framework running suite tasks against an OpenAI-compatible server.

Runs in the peers' environment (`.venv-bench`, `scripts/bench-peers.sh`), where bigloop is
not installed: `bench/peers.py` starts one process per framework and server. Each task
arrives as its id, its text and its tools as (name, description, JSON schema); the
framework gets tools built from exactly those, and a tool call is executed by POSTing
`{"task", "name", "arguments"}` to --tool-url, where the orchestrator runs bigloop's real
tool and answers `{"output": text}` (a tool error comes back as text, as in bigloop).

    .venv-bench/bin/python bench/peers_agents.py --framework langgraph \\
        --base-url http://127.0.0.1:8000/v1 --tool-url http://127.0.0.1:9000/call \\
        --tasks tasks.json            # or --tasks - to read them from stdin

stdout carries JSON Lines only: `{"ready": true}` once the framework is imported, then one
line per task: answer, status ("ok", "error", "max_turns"), error, seconds, model turns
(chat-completion requests sent, counted on the HTTP client) and the tokens the server
reported. Whatever the libraries print goes to stderr. A framework's exception fails the
task, never the process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import urllib.request
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

FRAMEWORKS = ("langgraph", "pydantic-ai", "smolagents", "smolagents-code")


@dataclass(kw_only=True)
class Meter:
    """Chat-completion requests sent and the tokens the server reported for them."""

    turns: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    clients: list[httpx.Client] = field(default_factory=list)

    def count(self, response: httpx.Response) -> None:
        if response.request.method != "POST" or not response.request.url.path.endswith(
            "/chat/completions"
        ):
            return
        self.turns += 1
        for usage in _usages(response.content):
            self.prompt_tokens += usage.get("prompt_tokens") or 0
            self.completion_tokens += usage.get("completion_tokens") or 0

    def sync_client(self, timeout: float) -> httpx.Client:
        def hook(response: httpx.Response) -> None:
            response.read()
            self.count(response)

        client = httpx.Client(timeout=timeout, event_hooks={"response": [hook]})
        self.clients.append(client)
        return client

    def close(self) -> None:
        for client in self.clients:
            client.close()

    def async_client(self, timeout: float) -> httpx.AsyncClient:
        async def hook(response: httpx.Response) -> None:
            await response.aread()
            self.count(response)

        return httpx.AsyncClient(timeout=timeout, event_hooks={"response": [hook]})


def _usages(body: bytes) -> list[dict[str, Any]]:
    """The `usage` objects of a JSON body or of an SSE stream's events."""
    text = body.decode("utf-8", errors="replace")
    if text.lstrip().startswith("{"):
        payloads = [text]
    else:
        payloads = [line[5:] for line in text.splitlines() if line.startswith("data:")]
    found = []
    for payload in payloads:
        try:
            value = json.loads(payload)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and isinstance(value.get("usage"), dict):
            found.append(value["usage"])
    return found


@dataclass(kw_only=True)
class Setup:
    """What every task of the run shares."""

    base_url: str
    model: str
    tool_url: str
    max_turns: int
    max_tokens: int
    timeout: float
    meter: Meter = field(default_factory=Meter)
    task_id: str = ""

    def tool_caller(self, name: str) -> Callable[..., str]:
        """A function running tool `name` of the current task on the orchestrator."""

        def call(**arguments: Any) -> str:
            body = json.dumps({"task": self.task_id, "name": name, "arguments": arguments})
            request = urllib.request.Request(
                self.tool_url,
                data=body.encode(),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return str(json.loads(response.read())["output"])

        return call


@dataclass(kw_only=True)
class Answer:
    text: str | None
    status: str = "ok"
    error: str | None = None


class MaxTurns(Exception):
    """The framework stopped at its turn limit without an answer."""


def langgraph(task: dict[str, Any], setup: Setup) -> Answer:
    from langchain_core.tools import StructuredTool
    from langchain_openai import ChatOpenAI
    from langgraph.errors import GraphRecursionError
    from langgraph.prebuilt import create_react_agent

    tools = [
        StructuredTool.from_function(
            func=setup.tool_caller(spec["name"]),
            name=spec["name"],
            description=spec["description"],
            args_schema=spec["parameters"],
        )
        for spec in task["tools"]
    ]
    llm = ChatOpenAI(
        model=setup.model,
        base_url=setup.base_url,
        api_key="unused",
        temperature=0,
        max_tokens=setup.max_tokens,  # sent as max_completion_tokens
        extra_body={"max_tokens": setup.max_tokens},  # what llama_cpp.server reads
        max_retries=0,
        timeout=setup.timeout,
        http_client=setup.meter.sync_client(setup.timeout),
        http_async_client=setup.meter.async_client(setup.timeout),
    )
    with warnings.catch_warnings():  # moved to `langchain.agents`, which is not installed
        warnings.filterwarnings("ignore", message="create_react_agent has been moved")
        agent = create_react_agent(llm, tools)
    # A model turn and a tool turn are one graph step each: N model turns take 2N - 1.
    limit = {"recursion_limit": 2 * setup.max_turns - 1}
    try:
        state = agent.invoke({"messages": [("user", task["text"])]}, limit)
    except GraphRecursionError as e:
        raise MaxTurns(str(e)) from None
    return Answer(text=_text(state["messages"][-1].content))


def pydantic_ai(task: dict[str, Any], setup: Setup) -> Answer:
    from openai import AsyncOpenAI
    from pydantic_ai import Agent, Tool, UsageLimits
    from pydantic_ai.exceptions import UsageLimitExceeded
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    client = AsyncOpenAI(
        base_url=setup.base_url,
        api_key="unused",
        max_retries=0,
        timeout=setup.timeout,
        http_client=setup.meter.async_client(setup.timeout),
    )
    model = OpenAIChatModel(setup.model, provider=OpenAIProvider(openai_client=client))
    tools = [
        Tool.from_schema(
            setup.tool_caller(spec["name"]),
            name=spec["name"],
            description=spec["description"],
            json_schema=spec["parameters"],
        )
        for spec in task["tools"]
    ]
    agent = Agent(
        model,
        tools=tools,
        model_settings={
            "temperature": 0.0,
            "max_tokens": setup.max_tokens,  # sent as max_completion_tokens
            "extra_body": {"max_tokens": setup.max_tokens},  # what llama_cpp.server reads
        },
    )

    async def run() -> str:
        try:
            result = await agent.run(
                task["text"], usage_limits=UsageLimits(request_limit=setup.max_turns)
            )
        except UsageLimitExceeded as e:
            raise MaxTurns(str(e)) from None
        finally:
            await client.close()
        return str(result.output)

    return Answer(text=asyncio.run(run()))


def smolagents(task: dict[str, Any], setup: Setup, *, code: bool = False) -> Answer:
    """smolagents' `ToolCallingAgent`, or with `code` its `CodeAgent` (the model writes
    Python that calls the tools, run by smolagents' local interpreter)."""
    from smolagents import CodeAgent, LogLevel, OpenAIServerModel, Tool, ToolCallingAgent

    class Remote(Tool):
        skip_forward_signature_validation = True
        output_type = "string"

        def __init__(self, spec: dict[str, Any]) -> None:
            self.name = spec["name"]
            self.description = spec["description"]
            self.inputs = smolagents_inputs(spec["parameters"])
            self._call = setup.tool_caller(spec["name"])
            super().__init__()

        def forward(self, **arguments: Any) -> str:
            return self._call(**arguments)

    server = OpenAIServerModel(
        model_id=setup.model,
        api_base=setup.base_url,
        api_key="unused",
        client_kwargs={
            "max_retries": 0,
            "timeout": setup.timeout,
            "http_client": setup.meter.sync_client(setup.timeout),
        },
        retry=False,
        temperature=0,
        max_tokens=setup.max_tokens,
    )
    kind = CodeAgent if code else ToolCallingAgent
    agent = kind(
        tools=[Remote(spec) for spec in task["tools"]],
        model=server,
        max_steps=setup.max_turns,
        verbosity_level=LogLevel.OFF,
    )
    result = agent.run(task["text"], return_full_result=True)
    text = None if result.output is None else _text(result.output)
    if result.state == "max_steps_error":  # smolagents then asks the model for an answer
        return Answer(text=text, error="max_steps_error: answer forced after the step limit")
    return Answer(text=text)


def smolagents_code(task: dict[str, Any], setup: Setup) -> Answer:
    return smolagents(task, setup, code=True)


def smolagents_inputs(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """smolagents' `Tool.inputs` for a JSON schema: every property as written, with the
    `type` and `description` smolagents requires, and `nullable` for optional ones."""
    required = set(schema.get("required", []))
    inputs = {}
    for name, prop in schema.get("properties", {}).items():
        entry = {"type": "any", "description": "", **prop}
        if name not in required:
            entry["nullable"] = True
        inputs[name] = entry
    return inputs


def _text(content: Any) -> str:
    """A message's text: LangChain content may be a list of parts."""
    if isinstance(content, list):
        parts = [p.get("text", "") if isinstance(p, dict) else str(p) for p in content]
        return "".join(parts)
    return str(content)


RUNNERS: dict[str, Callable[[dict[str, Any], Setup], Answer]] = {
    "langgraph": langgraph,
    "pydantic-ai": pydantic_ai,
    "smolagents": smolagents,
    "smolagents-code": smolagents_code,
}


def run_task(
    run: Callable[[dict[str, Any], Setup], Answer], task: dict[str, Any], setup: Setup
) -> dict[str, Any]:
    setup.task_id = task["id"]
    setup.meter = Meter()
    start = time.perf_counter()
    try:
        answer = run(task, setup)
    except MaxTurns as e:
        answer = Answer(text=None, status="max_turns", error=f"MaxTurns: {e}"[:1000])
    except Exception as e:  # noqa: BLE001 (a framework's failure fails the task only)
        answer = Answer(text=None, status="error", error=f"{type(e).__name__}: {e}"[:1000])
    finally:
        setup.meter.close()
    return {
        "id": task["id"],
        "answer": answer.text,
        "status": answer.status,
        "error": answer.error,
        "seconds": round(time.perf_counter() - start, 3),
        "model_turns": setup.meter.turns,
        "prompt_tokens": setup.meter.prompt_tokens,
        "completion_tokens": setup.meter.completion_tokens,
    }


def _imports(framework: str) -> None:
    """Import the framework now, so that the first task's time does not include it."""
    if framework == "langgraph":
        import langchain_openai  # noqa: F401
        import langgraph.prebuilt  # noqa: F401
    elif framework == "pydantic-ai":
        import pydantic_ai.models.openai  # noqa: F401
    else:
        import smolagents  # noqa: F401


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--framework", choices=FRAMEWORKS, required=True)
    parser.add_argument("--tasks", required=True, help="A JSON file of tasks, or - for stdin.")
    parser.add_argument("--base-url", required=True, help="The OpenAI-compatible server.")
    parser.add_argument("--model", default="local", help="The model name sent to the server.")
    parser.add_argument("--tool-url", required=True, help="The orchestrator's tool endpoint.")
    parser.add_argument("--max-turns", type=int, default=8, help="Model turns per task.")
    parser.add_argument("--max-tokens", type=int, default=512, help="Tokens per model turn.")
    parser.add_argument("--timeout", type=float, default=120.0, help="Seconds per request.")
    args = parser.parse_args()

    # Results go to the real stdout; anything else written to it goes to stderr.
    results = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())

    source = sys.stdin if args.tasks == "-" else open(args.tasks, encoding="utf-8")
    with source:
        tasks = json.load(source)
    _imports(args.framework)
    setup = Setup(
        base_url=args.base_url,
        model=args.model,
        tool_url=args.tool_url,
        max_turns=args.max_turns,
        max_tokens=args.max_tokens,
        timeout=args.timeout,
    )
    print(json.dumps({"ready": True}), file=results, flush=True)
    for task in tasks:
        row = run_task(RUNNERS[args.framework], task, setup)
        print(json.dumps(row, ensure_ascii=False), file=results, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
