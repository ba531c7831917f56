"""`relevance_gate`: no tools for a conversation about something else (a tool selector)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from bigloop.atoms.models.base import ToolSpec
from bigloop.policies.quantities import quantities
from bigloop.policies.select import terms, tool_text

_ARITHMETIC = re.compile(r"\b(?:arithmetic|math(?:ematical)?)\b")


def computes(spec: ToolSpec) -> bool:
    """Whether the tool evaluates arithmetic: a string parameter named "expression", or one
    its docs call arithmetic or math (a calculator; a regular expression is no such
    parameter)."""
    for name, schema in spec.parameters.get("properties", {}).items():
        if not isinstance(schema, dict) or schema.get("type") != "string":
            continue
        about = f"{name} {schema.get('description', '')}".lower()
        if (name == "expression" or _ARITHMETIC.search(about)) and "regular" not in about:
            return True
    return False


@dataclass(kw_only=True)
class RelevanceGate:
    """Offers no tool when the request is clearly about something else.

    A conversation with at least `min_terms` content words, none of which appears in any
    tool's name, description or parameters, gets no tools: the model then answers instead
    of forcing an unrelated call. Shorter requests always get every tool, and so does a
    conversation in which a tool was already called, and one that gives `min_numbers`
    numbers or more while a tool evaluates arithmetic (`computes`): "a $120 jacket, 25%
    off" is arithmetic in words no calculator's docs use.
    """

    min_terms: int = 3
    min_numbers: int = 2
    name: str = "relevance_gate"
    reads_conversation: bool = True
    """The loop gives it the whole conversation's words (earlier requests, tool results),
    not only the last request: a follow-up ("and the other one?") is about the same
    tools."""

    def select(self, task: str, specs: list[ToolSpec]) -> list[ToolSpec]:
        wanted = {t for t in terms(task) if not t.isdigit()}
        if len(wanted) < self.min_terms:
            return specs
        if len(quantities(task)) >= self.min_numbers and any(map(computes, specs)):
            return specs
        vocabulary = {
            t
            for spec in specs
            for t in terms(tool_text(spec) + " " + json.dumps(spec.parameters, ensure_ascii=False))
        }
        return specs if wanted & vocabulary else []
