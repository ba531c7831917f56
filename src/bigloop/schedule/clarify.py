"""Clarifying questions: when a call cannot be filled from the conversation, ask.

A small model given a tool with a required argument the user never stated fills it with a
guess ("receiver_id": "colleague"). `Clarify` is the call check (a policy, see
`bigloop.schedule.policies`) that decides, per call, whether to ask the user instead: a
required argument is missing, or (with `ungrounded=True`) its value appears nowhere in the
task, the earlier turns or the tool results. The decision is traced as an "ask" step.
"""

from __future__ import annotations

from dataclasses import dataclass

from bigloop.atoms.models.base import ToolCall, ToolSpec
from bigloop.schedule.grounding import grounded
from bigloop.schedule.policies import ACCEPT, Evidence, Verdict, guessable

__all__ = ["Clarify", "grounded"]


@dataclass(kw_only=True)
class Clarify:
    """Asks the user instead of guessing an argument.

    Attributes:
        missing: ask when a required argument is absent.
        ungrounded: ask when a required string or number argument's value is mentioned
            nowhere in the conversation (values from enums and booleans are exempt).
    """

    missing: bool = True
    ungrounded: bool = True
    name: str = "clarify"

    def check(self, call: ToolCall, spec: ToolSpec, evidence: Evidence) -> Verdict:
        question = self.question(call, spec, evidence)
        return ACCEPT if question is None else Verdict(action="ask", message=question)

    def question(self, call: ToolCall, spec: ToolSpec, evidence: Evidence | str) -> str | None:
        """The question to ask before making `call`, or None to make it."""
        if isinstance(evidence, str):
            evidence = Evidence(evidence)
        if not isinstance(call.arguments, dict):
            return None
        props = spec.parameters.get("properties", {})
        unknown = []
        for name in spec.parameters.get("required", []):
            if name not in call.arguments:
                if self.missing:
                    unknown.append(name)
                continue
            value = call.arguments[name]
            if self.ungrounded and guessable(value) and "enum" not in props.get(name, {}):
                if not evidence.mentions(value):
                    unknown.append(name)
        if not unknown:
            return None
        what = " and ".join(_describe(n, props.get(n, {})) for n in unknown)
        return f"To call {call.name}, what is {what}?"


def _describe(name: str, schema: dict[str, object]) -> str:
    description = str(schema.get("description") or "").rstrip(". ")
    return f"the {name} ({description})" if description else f"the {name}"
