"""Clarifying questions: when a call cannot be filled from the conversation, ask.

A small model given a tool with a required argument the user never stated fills it with a
guess ("receiver_id": "colleague"). `Clarify` is the call check (a policy, see
`bigloop.policies.base`) that decides, per call, whether to ask the user instead: a
required argument is missing, or (with `ungrounded=True`) its value appears nowhere in the
task, the earlier turns or the tool results. The decision is traced as an "ask" step.

For a tool that cannot be undone (`Tool.effect == "irreversible"`), only the user's own
words ground a value: a tool result that names a target ("now delete folder archive") is
data, not the user's instruction.
"""

from __future__ import annotations

from dataclasses import dataclass

from bigloop.atoms.models.base import ToolCall, ToolSpec
from bigloop.policies.approval import irreversible
from bigloop.policies.base import ACCEPT, Evidence, Verdict, guessable, refuse
from bigloop.policies.grounding import grounded
from bigloop.trace.records import Question, Reason

__all__ = ["Clarify", "grounded"]


@dataclass(kw_only=True)
class Clarify:
    """Asks the user instead of guessing an argument.

    An ungrounded value is more often the model's slip (1969 written 2069, a wrong tool)
    than a gap in the request, so with `retry_first` the call first goes back to the
    model, naming the value; a model that makes the call again unchanged had no better
    value, and the user is asked.

    Once a call with arguments has returned a result, a small model that goes on calling
    with values from nowhere is more often wandering past the answer (a unit conversion
    "from kg to miles" after the shipping price it was asked for) than missing a value:
    with `settle`, the first such call goes back to the model with the option to answer,
    and the next one ends the calling (reason `settle`: the planner asks for the answer
    from the results) instead of asking the user.

    Attributes:
        missing: ask when a required argument is absent, or when the model makes again a
            call whose value was refused as a copy of the docs' example.
        ungrounded: act when a required string or number argument's value is mentioned
            nowhere in the conversation (values from enums and booleans are exempt); for an
            irreversible tool, nowhere in what the user said (tool results left out). A
            request that continues a conversation which already called tools is not
            judged so (the model knows what those calls returned and changed), except
            for an irreversible tool.
        retry_first: send an ungrounded call back to the model once before asking.
        settle: after a result, answer from the results instead of asking (see above).
    """

    missing: bool = True
    ungrounded: bool = True
    retry_first: bool = True
    settle: bool = True
    name: str = "clarify"

    def check(self, call: ToolCall, spec: ToolSpec, evidence: Evidence) -> Verdict:
        missing, ungrounded = self._unknown(call, spec, evidence)
        if not missing and ungrounded and self.ungrounded and self.retry_first:
            guesses = evidence.guesses_after_results if self.settle else None
            if guesses is not None:
                reason = Reason.SETTLE if guesses else Reason.WANDERING
                return refuse(self.name, call, reason, ungrounded)
            verdict = refuse(self.name, call, Reason.UNGROUNDED, ungrounded)
            assert verdict.refusal is not None
            if not evidence.told(call.name, verdict.refusal.values):  # let the model correct it
                return verdict
        question = self._question(call, spec, missing + ungrounded)
        if question is None:
            return ACCEPT
        return Verdict(
            action="ask",
            question=Question(text=question, kind="clarify", check=self.name, call=call),
        )

    def question(self, call: ToolCall, spec: ToolSpec, evidence: Evidence | str) -> str | None:
        """The question to ask before making `call` (None: make it), whatever was said
        before."""
        if isinstance(evidence, str):
            evidence = Evidence(evidence)
        missing, ungrounded = self._unknown(call, spec, evidence)
        return self._question(call, spec, missing + ungrounded)

    def _unknown(
        self, call: ToolCall, spec: ToolSpec, evidence: Evidence
    ) -> tuple[list[str], list[str]]:
        """The required arguments that are absent, and those whose value is ungrounded."""
        if not isinstance(call.arguments, dict):
            return [], []
        props = spec.parameters.get("properties", {})
        mentions = evidence.user_mentions if irreversible(spec) else evidence.mentions
        # In a conversation that already called tools, a value the request does not
        # repeat may come from what they returned or changed: only an irreversible call
        # still needs its values said.
        judge = self.ungrounded and (irreversible(spec) or not evidence.continues)
        # A value under a name that is no parameter ("expr" for "expression") is the
        # model's slip, which validation sends back: nothing is missing for the user.
        slip = bool(props) and any(name not in props for name in call.arguments)
        missing, ungrounded = [], []
        for name in spec.parameters.get("required", []):
            if name not in call.arguments:
                if self.missing and not slip:
                    missing.append(name)
                continue
            value = call.arguments[name]
            if judge and guessable(value) and "enum" not in props.get(name, {}):
                if not mentions(value):
                    ungrounded.append(name)
            elif self.missing and _insists_on_copy(call, name, evidence):
                ungrounded.append(name)
        return missing, ungrounded

    def _question(self, call: ToolCall, spec: ToolSpec, unknown: list[str]) -> str | None:
        if not unknown:
            return None
        props = spec.parameters.get("properties", {})
        what = " and ".join(_describe(n, props.get(n, {})) for n in unknown)
        return f"To call {call.name}, what is {what}?"


def _insists_on_copy(call: ToolCall, name: str, evidence: Evidence) -> bool:
    """Whether the model makes again, before any call has returned a result, a call whose
    value of `name` was refused as a copy of the docs' example: it has no value of its
    own, so even when only missing values are asked about, this one is (a copy is a value
    missing in disguise). After a result, such a call is the model wandering past its
    answer (measured: a kg → "miles" conversion after the shipping price it was asked
    for), no question for the user."""
    if evidence.guesses_after_results is not None:
        return False
    value = call.arguments[name]
    copied = any(
        r.reason is Reason.COPIED_EXAMPLE and r.tool == call.name and r.values.get(name) == value
        for r in evidence.refusals
    )
    return copied and not (guessable(value) and evidence.mentions(value))  # "km" for "kilometers"


def _describe(name: str, schema: dict[str, object]) -> str:
    description = str(schema.get("description") or "").rstrip(". ")
    return f"the {name} ({description})" if description else f"the {name}"
