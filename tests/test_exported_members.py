"""The public surface is deliberate: adding or removing a name is a visible change."""

from __future__ import annotations

import bigloop


def test_exported_members() -> None:
    assert set(bigloop.__all__) == {
        "AtomCard",
        "FaithfulExpressions",
        "Verdict",
        "ToolSelector",
        "RelevanceGate",
        "RejectCopiedExamples",
        "RankTools",
        "Evidence",
        "DropInventedOptionals",
        "CoerceTypes",
        "CallCheck",
        "RunContext",
        "Planner",
        "AutoPlanner",
        "LoopConfig",
        "BigloopError",
        "Budget",
        "BudgetExceeded",
        "ChatModel",
        "Clarify",
        "Do",
        "FunctionModel",
        "GraphPlanner",
        "InputRequired",
        "InvalidArguments",
        "LocalModel",
        "Loop",
        "Message",
        "ModelResponse",
        "ModelRetry",
        "ModelSettings",
        "ModelUnavailable",
        "OpenAIModel",
        "ReactPlanner",
        "RunFailure",
        "RunResult",
        "ScriptedModel",
        "SearchPlanner",
        "Step",
        "Tool",
        "ToolCall",
        "ToolFailure",
        "ToolSpec",
        "TraceStore",
        "UnknownTool",
        "Usage",
        "UserError",
        "WeightsError",
        "Workflow",
        "__version__",
        "tool",
    }
    for name in bigloop.__all__:
        assert hasattr(bigloop, name), name
