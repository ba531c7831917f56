"""bigloop: build Big Loop systems from atoms — tools, models, agents — scheduled into
closed, traced, resumable loops."""

from bigloop._errors import (
    BigloopError,
    BudgetExceeded,
    InvalidArguments,
    ModelRetry,
    ModelUnavailable,
    RunFailure,
    ToolFailure,
    UnknownTool,
    UserError,
    WeightsError,
)
from bigloop.atoms.card import AtomCard
from bigloop.atoms.models.base import (
    ChatModel,
    Message,
    ModelResponse,
    ModelSettings,
    ToolCall,
    ToolSpec,
    Usage,
)
from bigloop.atoms.models.function import FunctionModel, ScriptedModel
from bigloop.atoms.models.local import LocalModel
from bigloop.atoms.models.openai_compat import OpenAIModel
from bigloop.atoms.tool import Tool, tool
from bigloop.loop import Budget, Loop
from bigloop.trace.records import RunResult, Step
from bigloop.trace.store import TraceStore

__version__ = "0.1.0"

__all__ = [
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
]
