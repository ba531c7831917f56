"""The default policies of each kind, in the order the loop applies them (the registry that
names and builds them with some switched off: `bigloop.parts`)."""

from __future__ import annotations

from bigloop.policies.approval import Approver
from bigloop.policies.approve_irreversible import ApproveIrreversible
from bigloop.policies.base import AnswerCheck, CallCheck, ToolSelector
from bigloop.policies.coerce_types import CoerceTypes
from bigloop.policies.drop_invented_optionals import DropInventedOptionals
from bigloop.policies.faithful_expressions import FaithfulExpressions
from bigloop.policies.honour_precision import HonourPrecision
from bigloop.policies.rank_tools import RankTools
from bigloop.policies.reject_copied_examples import RejectCopiedExamples
from bigloop.policies.relevance_gate import RelevanceGate


def default_answer_checks() -> list[AnswerCheck]:
    return [HonourPrecision()]


def default_checks(
    clarify: CallCheck | None = None, approve: Approver | None = None
) -> list[CallCheck]:
    """Type coercion, invented optionals dropped, copied doc examples and rewritten
    expressions rejected, then `clarify` when given, and last the approval of
    irreversible calls by `approve` (none: denied)."""
    checks: list[CallCheck] = [
        CoerceTypes(),
        DropInventedOptionals(),
        RejectCopiedExamples(),
        FaithfulExpressions(),
    ]
    if clarify is not None:
        checks.append(clarify)
    return [*checks, ApproveIrreversible(approve=approve)]


def default_selectors(top_k: int | None = None) -> list[ToolSelector]:
    return [RelevanceGate(), RankTools(top_k=top_k)]
