"""Framework overhead of peers (LangGraph, pydantic-ai, smolagents) on the shared workload.

Runs in the benchmark environment made by `scripts/bench-peers.sh` (the peers are not
bigloop dependencies). Prints one JSON object: {framework: [{k, run_ms, step_ms}], ...}.
"""

import json
import sys
import uuid
import warnings
from typing import Any

from _workload import K_VALUES, TOOL_COUNT, call_plan, plain_baseline, time_runs, tool_fn


def langgraph_stategraph(k: int) -> Any:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.tools import tool as lc_tool
    from langgraph.graph import END, START, MessagesState, StateGraph

    tools = {f"tool_{i}": lc_tool(tool_fn(i)) for i in range(TOOL_COUNT)}
    plan = call_plan(k)

    def model(state: MessagesState) -> dict[str, Any]:
        step = sum(isinstance(m, AIMessage) for m in state["messages"])
        if step < len(plan):
            name, args = plan[step]
            call = {"name": name, "args": args, "id": uuid.uuid4().hex, "type": "tool_call"}
            return {"messages": [AIMessage(content="", tool_calls=[call])]}
        return {"messages": [AIMessage(content="done")]}

    def run_tools(state: MessagesState) -> dict[str, Any]:
        last = state["messages"][-1]
        out = []
        for call in last.tool_calls:  # type: ignore[attr-defined]
            result = tools[call["name"]].invoke(call["args"])
            out.append(ToolMessage(content=str(result), tool_call_id=call["id"]))
        return {"messages": out}

    def route(state: MessagesState) -> str:
        return "tools" if state["messages"][-1].tool_calls else END  # type: ignore[attr-defined]

    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    graph.add_node("tools", run_tools)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route, ["tools", END])
    graph.add_edge("tools", "model")
    app = graph.compile()
    return lambda: app.invoke(
        {"messages": [HumanMessage(content="go")]}, {"recursion_limit": 4 * k + 10}
    )


def langgraph_react(k: int) -> Any:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool as lc_tool
    from langgraph.prebuilt import create_react_agent

    class Scripted(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    tools = [lc_tool(tool_fn(i)) for i in range(TOOL_COUNT)]

    def replies() -> Any:
        for name, args in call_plan(k):
            call = {"name": name, "args": args, "id": uuid.uuid4().hex, "type": "tool_call"}
            yield AIMessage(content="", tool_calls=[call])
        yield AIMessage(content="done")

    def run() -> Any:
        agent = create_react_agent(Scripted(messages=replies()), tools)
        return agent.invoke({"messages": [("user", "go")]}, {"recursion_limit": 4 * k + 10})

    return run


def pydantic_ai(k: int) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.usage import UsageLimits

    plan = call_plan(k)

    def fn(messages: Any, info: Any) -> ModelResponse:
        step = sum(isinstance(m, ModelResponse) for m in messages)
        if step < len(plan):
            name, args = plan[step]
            return ModelResponse(parts=[ToolCallPart(tool_name=name, args=args)])
        return ModelResponse(parts=[TextPart(content="done")])

    agent = Agent(FunctionModel(fn), tools=[tool_fn(i) for i in range(TOOL_COUNT)])
    limits = UsageLimits(request_limit=k + 5)
    return lambda: agent.run_sync("go", usage_limits=limits)


def smolagents_toolcalling(k: int) -> Any:
    from smolagents import ToolCallingAgent
    from smolagents import tool as sm_tool
    from smolagents.models import (
        ChatMessage,
        ChatMessageToolCall,
        ChatMessageToolCallFunction,
        MessageRole,
        Model,
    )
    from smolagents.monitoring import LogLevel

    tools = [sm_tool(tool_fn(i)) for i in range(TOOL_COUNT)]
    plan = call_plan(k)

    class Scripted(Model):
        def __init__(self) -> None:
            super().__init__(model_id="scripted")
            self.step = 0

        def generate(self, messages: Any, **kwargs: Any) -> ChatMessage:
            if self.step < len(plan):
                name, args = plan[self.step]
            else:
                name, args = "final_answer", {"answer": "done"}
            self.step += 1
            call = ChatMessageToolCall(
                id=uuid.uuid4().hex,
                type="function",
                function=ChatMessageToolCallFunction(name=name, arguments=args),
            )
            return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])

    def run() -> Any:
        agent = ToolCallingAgent(
            tools=tools, model=Scripted(), max_steps=k + 5, verbosity_level=LogLevel.OFF
        )
        return agent.run("go")

    return run


RUNNERS = {
    "langgraph StateGraph": langgraph_stategraph,
    "langgraph create_react_agent": langgraph_react,
    "pydantic-ai FunctionModel": pydantic_ai,
    "smolagents ToolCallingAgent": smolagents_toolcalling,
}


def main() -> None:
    warnings.simplefilter("ignore")
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    out: dict[str, list[dict[str, float]]] = {
        "plain python": [time_runs(lambda k=k: plain_baseline(k), k, repeats) for k in K_VALUES]
    }
    for name, make in RUNNERS.items():
        out[name] = [time_runs(make(k), k, repeats) for k in K_VALUES]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
