"""Policies: the loop's heuristics as named, swappable parts (one module per part).

Call checks look at each call before it is made (`base.CallCheck`), tool selectors
choose the tools a task is offered (`base.ToolSelector`), answer checks revise the final
answer (`base.AnswerCheck`). A check's decision is data (`Verdict`, carrying a `Refusal`
or a `Question`); `wording` renders what the model reads from it. The registry that names
every policy, planner rules included, and builds them with some switched off is
`bigloop.parts`.
"""

from bigloop.policies.approve_irreversible import ApproveIrreversible, with_approval
from bigloop.policies.base import (
    ACCEPT,
    AnswerCheck,
    CallCheck,
    Checked,
    Evidence,
    ToolSelector,
    Verdict,
    check_call,
    guessable,
    refuse,
    run_checks,
)
from bigloop.policies.clarify import Clarify
from bigloop.policies.coerce_types import CoerceTypes
from bigloop.policies.defaults import default_answer_checks, default_checks, default_selectors
from bigloop.policies.drop_invented_optionals import DropInventedOptionals
from bigloop.policies.faithful_expressions import FaithfulExpressions
from bigloop.policies.honour_precision import HonourPrecision, asked_places
from bigloop.policies.more_calls import MoreCalls
from bigloop.policies.rank_tools import RankTools
from bigloop.policies.reject_copied_examples import RejectCopiedExamples
from bigloop.policies.relevance_gate import RelevanceGate

__all__ = [
    "ACCEPT",
    "AnswerCheck",
    "ApproveIrreversible",
    "CallCheck",
    "Checked",
    "Clarify",
    "CoerceTypes",
    "DropInventedOptionals",
    "Evidence",
    "FaithfulExpressions",
    "HonourPrecision",
    "MoreCalls",
    "RankTools",
    "RejectCopiedExamples",
    "RelevanceGate",
    "ToolSelector",
    "Verdict",
    "asked_places",
    "check_call",
    "default_answer_checks",
    "default_checks",
    "default_selectors",
    "guessable",
    "refuse",
    "run_checks",
    "with_approval",
]
