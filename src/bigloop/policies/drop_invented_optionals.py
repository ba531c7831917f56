"""`drop_invented_optionals`: optional values nobody said are left out (a call check)."""

from __future__ import annotations

from dataclasses import dataclass

from bigloop.atoms.models.base import ToolCall, ToolSpec
from bigloop.policies.base import ACCEPT, Evidence, Verdict, guessable


@dataclass(kw_only=True)
class DropInventedOptionals:
    """Omits optional string or number arguments the conversation never mentions.

    A value the user did not give, for a parameter they need not give, was invented by
    the model ("unit": "cm" for a request in inches); the tool's own default is the
    better guess. In a conversation that already called tools (`Evidence.continues`), a
    value may come from what they returned or changed, and is kept.
    """

    name: str = "drop_invented_optionals"

    def check(self, call: ToolCall, spec: ToolSpec, evidence: Evidence) -> Verdict:
        if not isinstance(call.arguments, dict) or evidence.continues:
            return ACCEPT
        schema = spec.parameters
        optional = set(schema.get("properties", {})) - set(schema.get("required", []))
        kept = {
            name: value
            for name, value in call.arguments.items()
            if not (name in optional and guessable(value) and not evidence.mentions(value))
        }
        if len(kept) == len(call.arguments):
            return ACCEPT
        return Verdict(action="adapt", arguments=kept)
