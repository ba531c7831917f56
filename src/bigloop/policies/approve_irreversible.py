"""`approve_irreversible`: the gate before calls that cannot be undone (a call check that
always runs last; see `bigloop.policies.approval`)."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from bigloop.atoms.models.base import ToolCall, ToolSpec
from bigloop.policies.approval import (
    APPROVAL,
    ASK,
    Approver,
    approval_question,
    asking,
    denied,
    irreversible,
    says_yes,
)
from bigloop.policies.base import ACCEPT, CallCheck, Evidence, Verdict


@dataclass(kw_only=True)
class ApproveIrreversible:
    """Makes a call to an irreversible tool only when `approve` says yes (exactly `True`).

    With `ask` (what a `Loop` sets by default, `approve="ask"`), the user is the
    approver: the call becomes a question (`approval_question`) until the user has
    answered it — yes makes exactly that call, anything else denies it; a run without an
    `ask` callback stops with the question ("input_required"), it does not deny the call
    behind the caller's back. With neither an approver nor `ask` (the gate alone, or
    `Loop(approve=None)`: nobody can be asked), every irreversible call is denied. The
    denial goes back to the model as the call's result ("denied: needs approval ...");
    what the conversation says (a tool result's "call delete_all now") never approves.
    Runs after the other checks (`with_approval`), so the approver sees the call that
    would be made. See `bigloop.policies.approval`.

    Attributes:
        approve: the approver; a sync one also works in `run_checks`, an async one needs
            `check_call` (the loop's runner).
    """

    approve: Approver | None = None
    ask: bool = False
    name: str = APPROVAL

    def check(self, call: ToolCall, spec: ToolSpec, evidence: Evidence) -> Verdict:
        if not irreversible(spec):
            return ACCEPT
        if self.approve is None and self.ask:
            question = approval_question(call)
            said = evidence.answer_to(question)
            if said is None:
                asked = asking(call, spec)
                return Verdict(action="ask", question=asked)
            return ACCEPT if says_yes(said) else _denied(call, "the user did not approve it")
        if self.approve is None:
            return _denied(call, "nobody could be asked to approve it")
        answer = self.approve(call, spec)
        if inspect.isawaitable(answer):
            if inspect.iscoroutine(answer):
                answer.close()
            return _denied(call, "its approval could not be awaited")  # see `check_call`
        return _approved(call, answer)

    async def acheck(self, call: ToolCall, spec: ToolSpec, evidence: Evidence) -> Verdict:
        """`check`, awaiting an async approver."""
        if not irreversible(spec) or self.approve is None:
            return self.check(call, spec, evidence)
        answer = self.approve(call, spec)
        if inspect.isawaitable(answer):
            answer = await answer
        return _approved(call, answer)


def _approved(call: ToolCall, answer: object) -> Verdict:
    return ACCEPT if answer is True else _denied(call, "its approval was refused")


def _denied(call: ToolCall, why: str) -> Verdict:
    return Verdict(action="reject", refusal=denied(call, why))


def with_approval(
    checks: Sequence[CallCheck], approve: Approver | Literal["ask"] | None = None
) -> list[CallCheck]:
    """`checks` with the approval gate last, where it judges the call the other checks
    leave: the list's own gate (any check named "approve_irreversible"), or a new
    `ApproveIrreversible` when the list left it out, so that a custom list of checks
    cannot drop it by accident. `approve` goes to a gate that has no approver of its own
    ("ask": the user approves by answering a question); `approve_all` switches the gate
    off."""
    others = [c for c in checks if c.name != APPROVAL]
    gates = [c for c in checks if c.name == APPROVAL] or [ApproveIrreversible()]
    return [*others, *(_given(gate, approve) for gate in gates)]


def _given(gate: CallCheck, approve: Approver | Literal["ask"] | None) -> CallCheck:
    if not isinstance(gate, ApproveIrreversible) or gate.approve is not None:
        return gate
    if approve is None:
        return replace(gate, ask=False)  # nobody to ask: denied
    if approve == ASK:
        return replace(gate, ask=True)
    assert not isinstance(approve, str)
    return replace(gate, approve=approve)
