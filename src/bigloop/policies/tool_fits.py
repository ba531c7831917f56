"""`tool_fits`: the model's own yes/no on whether the tool it called does what was asked
(a call check).

A request no offered tool serves ("Calculate the area of a triangle" with only
`determine_body_mass_index`) gets an unrelated call from a small model, then, with
clarifying on, a question about that call's arguments. Before the first call of a fresh
request is made, this check asks the loop's own model one yes/no question — the tool's
name, description and parameters, the request, "can this function do what the request
asks?" — and reads how likely its next word is "yes" (`LocalModel.yes_probability`: one
prompt evaluation, nothing generated). Under `threshold`, the call goes back to the model
(reason `no_tool_fits`): answer in words instead. A model that makes the call again
insists, and the call is made: the model decides, the check only asks once.

Measured on BFCL cases outside the test block (ids 100 on: 66 requests no tool serves,
70 with the right function; `bench/results/tool_fits/README.md`): at 0.5 it sent back
33 of 66 unserved calls and 1 of 70 right ones.

Only models that can give the probability judge (the embedded and other local GGUF
models); with others, in conversations that already called tools, and while the model is
busy generating (a streamed plan), every call passes.

Opt-in (`LoopConfig(tool_fits=True)`): it also refused `read_file` for "What is the
secret code written in notes.txt?" (P(yes) 0.42) — a lookup fetches what the answer is
read from, it does not do *exactly* what is asked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from bigloop.atoms.models.base import ToolCall, ToolSpec
from bigloop.policies.base import ACCEPT, Evidence, Verdict
from bigloop.trace.records import Reason, Refusal

JUDGE_SYSTEM = "You check whether a function can do what a user asks. Answer yes or no."
JUDGE_QUESTION = (
    "Function: {function}\n\nRequest: {request}\n\nCan this function, called once with "
    "values from the request, do exactly what the request asks? Answer yes or no."
)
"""The judge's prompt (the measured one); `{function}`: name, description, parameters."""


@runtime_checkable
class YesNoJudge(Protocol):
    """A model that gives the probability of "yes" as the answer to a chat."""

    async def yes_probability(self, chat: list[dict[str, str]]) -> float | None: ...


@dataclass(kw_only=True)
class ToolFits:
    """Sends back the first call of a fresh request when the model itself judges that
    the tool does not do what was asked (see the module's docstring).

    Attributes:
        judge: the loop's model, when it can judge (`YesNoJudge`); None: every call
            passes (the loop binds it, `bind_judge`).
        threshold: the least probability of "yes" a call needs.
    """

    judge: YesNoJudge | None = None
    threshold: float = 0.5
    name: str = "tool_fits"

    def check(self, call: ToolCall, spec: ToolSpec, evidence: Evidence) -> Verdict:
        return ACCEPT  # judging needs the model: only the loop's runner awaits `acheck`

    async def acheck(self, call: ToolCall, spec: ToolSpec, evidence: Evidence) -> Verdict:
        if self.judge is None or evidence.continues or evidence.guesses_after_results is not None:
            return ACCEPT
        if any(r.reason is Reason.NO_TOOL_FITS and r.tool == call.name for r in evidence.refusals):
            return ACCEPT  # told once: the model insists
        chat = [
            {"role": "system", "content": JUDGE_SYSTEM},
            {
                "role": "user",
                "content": JUDGE_QUESTION.format(
                    function=described(spec), request=evidence.request
                ),
            },
        ]
        yes = await self.judge.yes_probability(chat)
        if yes is None or yes >= self.threshold:
            return ACCEPT
        refusal = Refusal(
            reason=Reason.NO_TOOL_FITS,
            check=self.name,
            tool=call.name,
            detail={"yes": round(yes, 3)},
        )
        return Verdict(action="reject", refusal=refusal)


def described(spec: ToolSpec) -> str:
    props = spec.parameters.get("properties", {})
    params = "; ".join(
        f"{name}: {schema.get('description', '')}" if isinstance(schema, dict) else name
        for name, schema in props.items()
    )
    return f"{spec.name}: {spec.description} Parameters: {params or json.dumps({})}"


def bind_judge(checks: list[Any], model: object) -> list[Any]:
    """`checks` with the loop's `model` as the judge of any `ToolFits` that has none,
    when the model can judge."""
    if not isinstance(model, YesNoJudge):
        return checks
    return [
        ToolFits(judge=model, threshold=c.threshold, name=c.name)
        if isinstance(c, ToolFits) and c.judge is None
        else c
        for c in checks
    ]
