"""`reject_copied_examples`: values copied from a tool's documented examples go back to
the model (a call check)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from bigloop.atoms.models.base import ToolCall, ToolSpec
from bigloop.policies.base import ACCEPT, Evidence, Verdict, refuse
from bigloop.trace.records import Reason


@dataclass(kw_only=True)
class RejectCopiedExamples:
    """Rejects string arguments taken from the examples of the tool's own documentation.

    Small models copy a description's example ("e.g. San Francisco, CA") into the call. A
    value of at least `min_chars` characters that the tool's docs give as an example
    (after "e.g.", "for example", "such as", "like", "for instance" or "example") but the
    conversation never mentions is sent back to the model. A value the docs list as a
    choice ("can be 'START' or 'STOP'") is a choice, not an example, and an argument set
    to its own default (`list_files(pattern="**/*")`) is the call the tool makes anyway.
    """

    name: str = "reject_copied_examples"
    min_chars: int = 3

    def check(self, call: ToolCall, spec: ToolSpec, evidence: Evidence) -> Verdict:
        if not isinstance(call.arguments, dict):
            return ACCEPT
        docs = json.dumps(spec.parameters, ensure_ascii=False) + " " + spec.description
        props = spec.parameters.get("properties", {})
        copied = [
            name
            for name, value in call.arguments.items()
            if isinstance(value, str)
            and len(value) >= self.min_chars
            and value not in props.get(name, {}).get("enum", ())  # a choice, not an example
            and value != props.get(name, {}).get("default")  # the call the tool makes anyway
            and _given_as_example(value, docs)
            and value.lower() not in evidence.said
        ]
        if not copied:
            return ACCEPT
        verdict = refuse(self.name, call, Reason.COPIED_EXAMPLE, copied)
        assert verdict.refusal is not None
        if evidence.told(call.name, verdict.refusal.values):  # said once; the model insists:
            return ACCEPT  # the next checks (a question to the user, the tool itself) decide
        return verdict


_EXAMPLE = re.compile(r"\b(?:e\.\s?g\.?|eg\b|for example|for instance|such as|examples?|like)")


_SENTENCE_END = re.compile(r"[.!?;]\s")


_EXAMPLE_REACH = 60


"""How far before a value the docs' "e.g.", "such as"… may stand and still introduce it
(a list of examples: "e.g. Paris, Berlin or Rome")."""


def _given_as_example(value: str, docs: str) -> bool:
    """Whether `docs` writes `value` as an example: after "e.g.", "for example", "such
    as"… in the same sentence, at most `_EXAMPLE_REACH` characters before it."""
    lowered, start = docs.lower(), 0
    while (at := docs.find(value, start)) >= 0:
        before = lowered[max(0, at - _EXAMPLE_REACH) : at]
        markers = list(_EXAMPLE.finditer(before))
        if markers and not _SENTENCE_END.search(before[markers[-1].end() :]):
            return True
        start = at + 1
    return False
