"""Training turns from suite tasks (the suite's training half and generated tasks),
verified through the real loop.

A task's `solve` calls the real tools in the order a loop should; `record_solution`
runs it on a toolbox that records those calls and returns the answer. The targets are
one turn per call, then the answer (under the code planner, `planner="code"`: programs
that make the calls, a new one where a call needs an earlier one's result
(`turns.as_programs`), then the answer); a `Recorder` replays them through the loop the suite
builds (`build_loop`: the same prompt, tools and policies as `bigloop run`), keeping the
prompt of every turn, and the turns are kept only when the task's own check passes the
run's outcome and every target was used (a policy that refused a call or asked again
would make the recording differ from the run, so such a task teaches nothing).

`contrast_task` records the same run with a rival model asked at each turn what it would
write there; where it decides otherwise (other tool results, or an answer the task's
check rejects), the turn becomes a preference pair.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from bigloop._errors import UserError
from bigloop.atoms.models.base import ChatModel, ModelResponse, ToolCall
from bigloop.config import LoopConfig
from bigloop.optimize.finetune.turns import (
    PROGRAM_FENCE,
    Pair,
    Recorder,
    Same,
    Turn,
    as_programs,
)
from bigloop_eval.suite import Task, Toolbox, Workspace
from bigloop_eval.suite.checks import Outcome
from bigloop_eval.suite.run import build_loop


class _Recording(Toolbox):
    """A toolbox that keeps every call made through it, in order."""

    def __init__(self, workspace: Workspace) -> None:
        super().__init__(workspace)
        self.calls: list[tuple[ToolCall, str]] = []

    def __call__(self, tool_name: str, /, **arguments: Any) -> Any:
        result = super().__call__(tool_name, **arguments)
        call = ToolCall(id=f"call_{len(self.calls) + 1}", name=tool_name, arguments=arguments)
        self.calls.append((call, str(result)))
        return result


def record_solution(
    task: Task, workspace: Workspace, *, code: bool = False
) -> list[ModelResponse] | None:
    """The replies a model should give for `task`: each tool call of its solution as a
    turn of its own (`code`: as programs, `turns.as_programs`), then the answer (None:
    the task has no solution to teach)."""
    if task.solve is None:
        return None
    box = _Recording(workspace)
    answer = task.solve(box)
    if code:
        turns = as_programs(box.calls, task.text, _computing(task, _written(answer)))
    else:
        turns = [ModelResponse(tool_calls=[call]) for call, _ in box.calls]
    return [*turns, ModelResponse(text=_written(answer))]


def _computing(task: Task, answer: str) -> Callable[[list[str]], str | None]:
    """What the last program should print to answer `task` when its calls' results do
    not show `answer` as they are: the first expression of one or two of them (or of a
    result and a number of the request) — a sum, difference, product or quotient, rounded
    or not — whose value the task's check accepts (None: printing the results is
    enough, or no such expression)."""

    def computed(outputs: list[str]) -> str | None:
        if any(answer in out for out in outputs):
            return None
        numbers = [_number(out) for out in outputs]
        results = {f"r{i}": v for i, v in enumerate(numbers, 1) if v is not None}
        stated = [_number(w) for w in _NUMBER.findall(task.text)]
        given = {str(v): v for v in stated if v is not None}
        for expression in _expressions(results, given, _digits(task.text)):
            try:
                value = eval(expression, {"round": round}, dict(results))  # our own arithmetic
            except ArithmeticError:
                continue
            if task.check(Outcome(status="ok", answer=_written(value)))[0]:
                return expression
        return None

    return computed


_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def _number(text: str) -> float | None:
    try:
        return float(text.strip().replace(",", ""))
    except ValueError:
        return None


def _expressions(
    results: dict[str, float], given: dict[str, float], digits: tuple[str, ...]
) -> Iterator[str]:
    """Candidate expressions, simplest first: a result, then two operands (at least one a
    result) joined by +, -, *, /; each as is, then rounded to each of `digits`."""
    operands = [*results, *given]
    plain = list(results) + [
        f"{a} {op} {b}"
        for a in operands
        for b in operands
        if a != b and (a in results or b in results)
        for op in ("+", "-", "*", "/")
    ]
    for expression in plain:
        yield expression
        for places in digits:
            yield f"round({expression}{places})"


_PLACES = {"cent": ", 2", "two decimal": ", 2", "2 decimal": ", 2", "one decimal": ", 1"}


def _digits(request: str) -> tuple[str, ...]:
    """The roundings to try, the one the request states first ("to the cent": 2 places)."""
    text = request.lower().replace("1 decimal", "one decimal")
    stated = [places for words, places in _PLACES.items() if words in text]
    return tuple(dict.fromkeys([*stated, "", ", 1", ", 2"]))


def _from_output(turn: Turn) -> bool:
    """Whether a code turn's answer is in the program output it follows (a program turn,
    or a turn of the JSON form, is kept as it is): an answer computed in the model's head
    from what was printed teaches the arithmetic the code planner leaves to Python."""
    if not turn.free_text or PROGRAM_FENCE in turn.reply or len(turn.chat) < 3:
        return True
    return turn.reply.strip() in turn.chat[-1]["content"]


def _written(answer: object) -> str:
    """A tool's answer as a reply: whole floats without ".0", long decimals cut to 4."""
    if isinstance(answer, float):
        return str(int(answer)) if answer.is_integer() else str(round(answer, 4))
    return str(answer)


async def teach_task(task: Task, workspace: Workspace, config: LoopConfig) -> list[Turn]:
    """`task`'s verified turns under `config` (empty when it teaches nothing)."""
    recorder = await _record(task, workspace, config, None)
    return [t for t in recorder.turns if _from_output(t)] if recorder is not None else []


async def contrast_task(
    task: Task, workspace: Workspace, config: LoopConfig, rival: ChatModel
) -> list[Pair]:
    """`task`'s preference pairs under `config`: the turns of its verified run at which
    `rival` decides otherwise (empty when the run cannot be verified).

    Raises:
        UserError: `config`'s planner is "code" (the judge of equal decisions compares
            calls, not programs).
    """
    if config.planner == "code":
        raise UserError(
            "The prefer step contrasts JSON calls; it cannot judge the code planner's "
            "programs yet. Use --step finetune with a code-planner config."
        )
    recorder = await _record(task, workspace, config, rival)
    return recorder.pairs if recorder is not None else []


async def _record(
    task: Task, workspace: Workspace, config: LoopConfig, rival: ChatModel | None
) -> Recorder | None:
    """The recorder of `task`'s solution replayed through the suite's loop, when the
    task's check passed the run and every target was used (else None)."""
    targets = record_solution(task, workspace, code=config.planner == "code")
    if not targets:
        return None
    recorder = Recorder(
        targets,
        source=task.id,
        family=task.category,
        rival=rival,
        same=_same(task, workspace) if rival is not None else None,
    )
    loop = build_loop(recorder, workspace.tools(task.tools), config)
    run = await loop.run(task.text)
    passed, _ = task.check(Outcome.of(run))
    if not passed or len(recorder.turns) != len(targets):
        return None
    return recorder


def _same(task: Task, workspace: Workspace) -> Same:
    """The suite's judge of equal decisions: calls each matching a distinct call still to
    be made in the verified run (same tool, same result on the task's workspace; any
    order, several at once), or an answer its check accepts when an answer is due."""
    box = Toolbox(workspace)

    def result(call: ToolCall) -> tuple[object, ...]:
        try:
            return (call.name, box(call.name, **call.arguments))
        except Exception as e:  # noqa: BLE001 - the loop makes any tool failure a tool error
            return ("error", call.name, type(e).__name__, str(e))

    def same(remaining: list[ModelResponse], own: ModelResponse) -> bool:
        if not remaining[0].tool_calls:
            return not own.tool_calls and task.check(Outcome(status="ok", answer=own.text))[0]
        if not own.tool_calls:
            return False
        left = [result(c) for r in remaining for c in r.tool_calls]
        for call in own.tool_calls:
            made = result(call)
            if made[0] == "error" or made not in left:
                return False
            left.remove(made)
        return True

    return same
