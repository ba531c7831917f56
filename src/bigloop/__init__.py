"""bigloop: build Big Loop systems from atoms — tools, models, agents — scheduled into
closed, traced, resumable loops."""

from bigloop._errors import (
    BigloopError,
    BudgetExceeded,
    InputRequired,
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
from bigloop.config import LoopConfig
from bigloop.loop import Loop
from bigloop.planners.auto import AutoPlanner
from bigloop.planners.graph import GraphPlanner
from bigloop.planners.react import ReactPlanner
from bigloop.planners.rules import AnswerRule, AnswerRules, default_rules
from bigloop.planners.search import SearchPlanner
from bigloop.policies import (
    AnswerCheck,
    ApproveIrreversible,
    CallCheck,
    CoerceTypes,
    DropInventedOptionals,
    Evidence,
    FaithfulExpressions,
    HonourPrecision,
    RankTools,
    RejectCopiedExamples,
    RelevanceGate,
    ToolSelector,
    Verdict,
)
from bigloop.policies.adapt import Adapter
from bigloop.policies.clarify import Clarify
from bigloop.runtime.context import Budget, Planner, RunContext
from bigloop.team import Agent, Debate, Handoff, Memory, Orchestrator
from bigloop.trace.records import RunResult, Step
from bigloop.trace.redact import Redactor
from bigloop.trace.store import TraceStore
from bigloop.workflow import Do, Workflow

__version__ = "0.1.0"

__all__ = [
    "Adapter",
    "Agent",
    "AnswerCheck",
    "AnswerRule",
    "AnswerRules",
    "ApproveIrreversible",
    "AtomCard",
    "AutoPlanner",
    "BigloopError",
    "Budget",
    "BudgetExceeded",
    "CallCheck",
    "ChatModel",
    "Clarify",
    "CoerceTypes",
    "Debate",
    "Do",
    "DropInventedOptionals",
    "Evidence",
    "FaithfulExpressions",
    "FunctionModel",
    "GraphPlanner",
    "Handoff",
    "HonourPrecision",
    "InputRequired",
    "InvalidArguments",
    "LocalModel",
    "Loop",
    "LoopConfig",
    "Memory",
    "Message",
    "ModelResponse",
    "ModelRetry",
    "ModelSettings",
    "ModelUnavailable",
    "OpenAIModel",
    "Orchestrator",
    "Planner",
    "RankTools",
    "ReactPlanner",
    "Redactor",
    "RejectCopiedExamples",
    "RelevanceGate",
    "RunContext",
    "RunFailure",
    "RunResult",
    "ScriptedModel",
    "SearchPlanner",
    "Step",
    "Tool",
    "ToolCall",
    "ToolFailure",
    "ToolSelector",
    "ToolSpec",
    "TraceStore",
    "UnknownTool",
    "Usage",
    "UserError",
    "Verdict",
    "WeightsError",
    "Workflow",
    "__version__",
    "default_rules",
    "tool",
]
