"""The public surface is deliberate: adding or removing a name is a visible change."""

from __future__ import annotations

import bigloop


def test_exported_members() -> None:
    assert set(bigloop.__all__) == {
        "AtomCard",
        "BigloopError",
        "Budget",
        "BudgetExceeded",
        "ChatModel",
        "FunctionModel",
        "InvalidArguments",
        "LocalModel",
        "Loop",
        "Message",
        "ModelResponse",
        "ModelRetry",
        "ModelSettings",
        "ModelUnavailable",
        "OpenAIModel",
        "RunFailure",
        "RunResult",
        "ScriptedModel",
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
        "__version__",
        "tool",
    }
    for name in bigloop.__all__:
        assert hasattr(bigloop, name), name
