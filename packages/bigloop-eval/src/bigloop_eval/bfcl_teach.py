"""Training turns from BFCL's ground truth, verified through the real loop.

A case's possible answers become the reply the model should have written: for each
parameter the first allowed value, an optional one left out unless the request states
it; an irrelevance case's reply is an answer that no tool fits. The reply is replayed
through `loop_run` — the loop BFCL loop mode runs, with its prompt and policies — by a
`Recorder`, which keeps the prompt the loop built; the turn is kept only when BFCL's
checker passes the calls the loop made of it. Only the categories and cases the issue
allows are trainable (`TRAINABLE`, beyond each file's first 100 cases); the others stay
a check of generalisation (`NEVER_TRAINED`).
"""

from __future__ import annotations

import functools
from typing import Any

from bigloop._errors import UserError
from bigloop.atoms.models.base import ModelResponse, ToolCall
from bigloop.config import LoopConfig
from bigloop.optimize.finetune.turns import Recorder, Turn
from bigloop.planners.code import program_reply
from bigloop_eval.bfcl_data import SINGLE_TURN, Case, load_cases
from bigloop_eval.bfcl_score import score
from bigloop_eval.bfcl_single import loop_run, made_calls

TRAINABLE = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "irrelevance",
    "live_simple",
)
FIRST_TRAINABLE = 100
"""Cases before this index are test cases of every category: never trained on."""
NEVER_TRAINED = tuple(c for c in SINGLE_TURN if c not in TRAINABLE)


def target(case: Case, *, code: bool = False) -> ModelResponse:
    """The reply the case's ground truth asks for (`code`: as the code planner's program
    making the calls, `planners.code.program_reply`)."""
    if "irrelevance" in case.category or not case.answer:
        names = ", ".join(f["name"] for f in case.functions)
        return ModelResponse(text=f"None of the available tools ({names}) can do this.")
    request = " ".join(m["content"] for m in case.messages if m["role"] == "user")
    calls = [
        ToolCall(id=f"call_{i}", name=name, arguments=_arguments(options, request))
        for i, entry in enumerate(case.answer, 1)
        for name, options in entry.items()
    ]
    return ModelResponse(text=program_reply(calls)) if code else ModelResponse(tool_calls=calls)


def _arguments(options: dict[str, list[Any]], request: str) -> dict[str, Any]:
    picked = {k: _pick(v, request) for k, v in options.items()}
    return {k: v for k, v in picked.items() if v is not _OMIT}


_OMIT = object()


def _pick(options: Any, request: str) -> Any:
    """A value the checker accepts: the first allowed one; `_OMIT` for an optional
    parameter (one allowing "") unless another allowed value is in the request."""
    if not isinstance(options, list) or not options:
        return options
    given = [o for o in options if o != "" and o is not None]
    if len(given) < len(options):  # optional
        stated = [o for o in given if str(o).lower() in request.lower()]
        if not stated:
            return _OMIT
        given = stated
    first = given[0] if given else _OMIT
    if isinstance(first, list) and first and all(isinstance(x, dict) for x in first):
        # a list of objects whose fields hold options
        return [_nested(x, request) for x in first]
    return _nested(first, request)


def _nested(first: Any, request: str) -> Any:
    if isinstance(first, dict):
        picked = {k: _pick(v, request) for k, v in first.items()}
        return {k: v for k, v in picked.items() if v is not _OMIT}
    return first


async def teach(case: Case, config: LoopConfig) -> list[Turn]:
    """The case's first turn, recorded through the loop (under `planner="code"`, BFCL's
    code mode: the program making the calls); empty when it is not trainable or the
    checker does not pass what the loop made of the target.

    Raises:
        UserError: the case is a test case or of a category never trained on.
    """
    if case.category not in TRAINABLE or _position(case.category)[case.id] < FIRST_TRAINABLE:
        raise UserError(f"{case.id} may not be trained on (test case or held-out category).")
    code = config.planner == "code"
    recorder = Recorder([target(case, code=code)], source=case.id, family=case.category)
    run = await loop_run(case, recorder, case.tools, 0, config, code=code)
    calls = [] if run.status == "failed" else made_calls(run)
    if not recorder.turns or not score(case, calls).valid:
        return []
    return recorder.turns[:1]


@functools.cache
def _position(category: str) -> dict[str, int]:
    """Each case id's index in its category's file."""
    return {c.id: i for i, c in enumerate(load_cases(category))}


@functools.cache
def never_trained_requests() -> list[str]:
    """Every request of the categories never trained on (for near-copy checks)."""
    requests = []
    for category in NEVER_TRAINED:
        for case in load_cases(category):
            requests += [m["content"] for m in case.messages if m["role"] == "user"]
    return requests


@functools.cache
def bfcl_test_requests() -> list[str]:
    """Every request of the trainable categories' test cases (their first 100)."""
    requests = []
    for category in TRAINABLE:
        for case in load_cases(category)[:FIRST_TRAINABLE]:
            requests += [m["content"] for m in case.messages if m["role"] == "user"]
    return requests
