"""`coerce_types`: a call's value types adapted to the schema (a call check)."""

from __future__ import annotations

from dataclasses import dataclass

from bigloop.atoms.models.base import ToolCall, ToolSpec
from bigloop.policies.adapt import coerce
from bigloop.policies.base import ACCEPT, Evidence, Verdict


@dataclass(kw_only=True)
class CoerceTypes:
    """Adapts value types to the schema: "3" for an integer, 2 for a float, "a,b" for an
    array of strings."""

    name: str = "coerce_types"

    def check(self, call: ToolCall, spec: ToolSpec, evidence: Evidence) -> Verdict:
        adapted = coerce(call.arguments, spec.parameters)
        if repr(adapted) == repr(call.arguments):  # == would call 2 and 2.0 equal
            return ACCEPT
        return Verdict(action="adapt", arguments=adapted)
