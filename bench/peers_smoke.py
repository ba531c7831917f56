"""The peer frameworks as clients of `bigloop serve openai`: LangGraph `create_react_agent`
(langchain-openai `ChatOpenAI`), pydantic-ai `Agent` (`OpenAIChatModel`) and smolagents
`ToolCallingAgent` (`OpenAIServerModel`) each get one task that needs one tool call, and
pass when the tool was called and their final answer carries its result.

    bash scripts/bench-peers.sh                       # once: .venv-bench with the peers
    bigloop serve openai --port 8000 &
    .venv-bench/bin/python bench/peers_smoke.py --base-url http://127.0.0.1:8000/v1

Prints `PASS <framework>: <answer>` or `FAIL <framework>: <why>` per framework and exits 1
if any failed. tests/protocols/test_openai_server.py runs it against a scripted model.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable

TASK = "What is the weather in Paris? Use the get_weather tool."
REPORT = "21 °C and sunny"
CALLS: list[str] = []


def get_weather(city: str) -> str:
    """Current weather of a city.

    Args:
        city: the city's name, e.g. "Paris".
    """
    CALLS.append(city)
    return f"{REPORT} in {city}"


def langgraph(base_url: str, model: str) -> str:
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent

    llm = ChatOpenAI(model=model, base_url=base_url, api_key="unused", max_retries=0)
    with warnings.catch_warnings():  # moved to `langchain.agents`, which is not installed
        warnings.filterwarnings("ignore", message="create_react_agent has been moved")
        agent = create_react_agent(llm, [get_weather])
    state = agent.invoke({"messages": [("user", TASK)]}, {"recursion_limit": 8})
    return str(state["messages"][-1].content)


def pydantic_ai(base_url: str, model: str) -> str:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(base_url=base_url, api_key="unused")
    agent = Agent(OpenAIChatModel(model, provider=provider), tools=[get_weather])
    return str(agent.run_sync(TASK).output)


def smolagents(base_url: str, model: str) -> str:
    from smolagents import LogLevel, OpenAIServerModel, ToolCallingAgent, tool

    server = OpenAIServerModel(model_id=model, api_base=base_url, api_key="unused")
    agent = ToolCallingAgent(
        tools=[tool(get_weather)],
        model=server,
        max_steps=4,
        verbosity_level=LogLevel.OFF,  # stdout carries the PASS/FAIL lines
    )
    return str(agent.run(TASK))


FRAMEWORKS: dict[str, Callable[[str, str], str]] = {
    "langgraph": langgraph,
    "pydantic-ai": pydantic_ai,
    "smolagents": smolagents,
}


def check(name: str, base_url: str, model: str) -> str | None:
    """None if `name` called the tool and answered with its result; else why not."""
    CALLS.clear()
    try:
        answer = FRAMEWORKS[name](base_url, model)
    except Exception as e:  # noqa: BLE001 (top level: report the framework's failure)
        return f"{type(e).__name__}: {e}"
    if not CALLS:
        return f"no tool call; answered {answer!r}"
    if REPORT not in answer:
        return f"called get_weather{tuple(CALLS)} but answered {answer!r}"
    print(f"PASS {name}: {answer!r}")
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000/v1")
    parser.add_argument("--model", default="bigloop", help="model name sent to the server")
    parser.add_argument("--only", choices=sorted(FRAMEWORKS), action="append")
    args = parser.parse_args()
    failed = 0
    for name in args.only or FRAMEWORKS:
        why = check(name, args.base_url, args.model)
        if why is not None:
            failed += 1
            print(f"FAIL {name}: {why}")
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
