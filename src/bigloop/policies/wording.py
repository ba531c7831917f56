"""What the loop says to the model, rendered from its typed decisions.

A check refuses a call with a `Refusal` (a `Reason`, the check, the values concerned);
the planners and the trace read that record, and the model reads the sentence this module
renders from it. Nothing decides by reading these sentences back, so the wording is free
to change: `REFUSALS` holds one template per reason, and an optimizer (or a user) may
replace any of them (`render(refusal, templates=...)`).

A template is a `str.format` string over the refusal's fields: `{slip}` (the tool and
its values, "get_weather: city='Paris' appears nowhere in the request"), `{tool}`,
`{names}`, and every key of the refusal's `detail`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bigloop.trace.records import Reason, Refusal

NOWHERE = "appears nowhere in the request"
"""How a value from nowhere is described in `{slip}`."""

REFUSALS: dict[Reason, str] = {
    Reason.UNGROUNDED: "{slip}. Use the values the request gives; if it gives none, make the "
    "same call again and the user will be asked.",
    Reason.WANDERING: "{slip}. Use the values the request or the results give; if the results "
    "so far answer the request, give the answer.",
    Reason.SETTLE: "{slip}. The results so far are all there is: answer the request from them now.",
    Reason.COPIED_EXAMPLE: "{slip}: it is the example from the tool's description. Use the "
    "values the request gives; if it gives none, make the same call again.",
    Reason.REWRITTEN_EXPRESSION: "{name}={value!r} computes {written:g}, but the request's "
    "{expression!r} computes {meant:g}; write the request's expression as it is, "
    "parentheses included",
    Reason.DENIED: "denied: needs approval: {tool} cannot be undone and {why}, so it was not "
    "called. Do not call it again; tell the user it needs their approval.",
    Reason.NO_TOOL_FITS: "{tool} does not do what the request asks. If none of the tools "
    "does, do not call one: answer in words (say what you cannot do, or answer from what you "
    "know).",
    Reason.OTHER: "{message}",
}
"""The model-facing sentence of each refusal reason (see the module's docstring)."""

ERROR_PREFIX = "Error: "
"""What a refused or failed call's result starts with, as the model reads it."""


def slip(tool: str, values: Mapping[str, Any]) -> str:
    """ "tool: name='value' appears nowhere in the request"."""
    shown = ", ".join(f"{n}={v!r}" for n, v in values.items())
    return f"{tool}: {shown} {NOWHERE}"


def render(refusal: Refusal, templates: Mapping[Reason, str] | None = None) -> str:
    """The sentence the model reads for `refusal` (the call's result, after
    `ERROR_PREFIX`)."""
    template = (templates or REFUSALS).get(refusal.reason) or REFUSALS[refusal.reason]
    fields = {
        "slip": slip(refusal.tool, refusal.values),
        "tool": refusal.tool,
        "names": ", ".join(refusal.values),
        **refusal.detail,
    }
    return template.format(**fields)
