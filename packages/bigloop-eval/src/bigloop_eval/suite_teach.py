"""Training turns from suite tasks (the suite's training half and generated tasks),
verified through the real loop.

A task's `solve` calls the real tools in the order a loop should; `record_solution`
runs it on a toolbox that records those calls and returns the answer. The targets are
one turn per call, then the answer; a `Recorder` replays them through the loop the suite
builds (`build_loop`: the same prompt, tools and policies as `bigloop run`), keeping the
prompt of every turn, and the turns are kept only when the task's own check passes the
run's outcome and every target was used (a policy that refused a call or asked again
would make the recording differ from the run, so such a task teaches nothing).

`contrast_task` records the same run with a rival model asked at each turn what it would
write there; where it decides otherwise (other tool results, or an answer the task's
check rejects), the turn becomes a preference pair.
"""

from __future__ import annotations

from typing import Any

from bigloop.atoms.models.base import ChatModel, ModelResponse, ToolCall
from bigloop.config import LoopConfig
from bigloop.optimize.finetune.turns import Pair, Recorder, Same, Turn
from bigloop_eval.suite import Task, Toolbox, Workspace
from bigloop_eval.suite.checks import Outcome
from bigloop_eval.suite.run import build_loop


class _Recording(Toolbox):
    """A toolbox that keeps every call made through it, in order."""

    def __init__(self, workspace: Workspace) -> None:
        super().__init__(workspace)
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, tool_name: str, /, **arguments: Any) -> Any:
        self.calls.append((tool_name, arguments))
        return super().__call__(tool_name, **arguments)


def record_solution(task: Task, workspace: Workspace) -> list[ModelResponse] | None:
    """The replies a model should give for `task`: each tool call of its solution as a
    turn of its own, then the answer (None: the task has no solution to teach)."""
    if task.solve is None:
        return None
    box = _Recording(workspace)
    answer = task.solve(box)
    turns = [
        ModelResponse(tool_calls=[ToolCall(id=f"call_{i}", name=name, arguments=arguments)])
        for i, (name, arguments) in enumerate(box.calls, 1)
    ]
    return [*turns, ModelResponse(text=_written(answer))]


def _written(answer: object) -> str:
    """A tool's answer as a reply: whole floats without ".0", long decimals cut to 4."""
    if isinstance(answer, float):
        return str(int(answer)) if answer.is_integer() else str(round(answer, 4))
    return str(answer)


async def teach_task(task: Task, workspace: Workspace, config: LoopConfig) -> list[Turn]:
    """`task`'s verified turns under `config` (empty when it teaches nothing)."""
    recorder = await _record(task, workspace, config, None)
    return recorder.turns if recorder is not None else []


async def contrast_task(
    task: Task, workspace: Workspace, config: LoopConfig, rival: ChatModel
) -> list[Pair]:
    """`task`'s preference pairs under `config`: the turns of its verified run at which
    `rival` decides otherwise (empty when the run cannot be verified)."""
    recorder = await _record(task, workspace, config, rival)
    return recorder.pairs if recorder is not None else []


async def _record(
    task: Task, workspace: Workspace, config: LoopConfig, rival: ChatModel | None
) -> Recorder | None:
    """The recorder of `task`'s solution replayed through the suite's loop, when the
    task's check passed the run and every target was used (else None)."""
    targets = record_solution(task, workspace)
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
