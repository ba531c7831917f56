"""Training turns from suite tasks (the suite's training half and generated tasks),
verified through the real loop.

A task's `solve` calls the real tools in the order a loop should; `record_solution`
runs it on a toolbox that records those calls and returns the answer. The targets are
one turn per call, then the answer; a `Recorder` replays them through the loop the suite
builds (`build_loop`: the same prompt, tools and policies as `bigloop run`), keeping the
prompt of every turn, and the turns are kept only when the task's own check passes the
run's outcome and every target was used (a policy that refused a call or asked again
would make the recording differ from the run, so such a task teaches nothing).
"""

from __future__ import annotations

from typing import Any

from bigloop.atoms.models.base import ModelResponse, ToolCall
from bigloop.config import LoopConfig
from bigloop.optimize.finetune.turns import Recorder, Turn
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
    targets = record_solution(task, workspace)
    if not targets:
        return []
    recorder = Recorder(targets, source=task.id, family=task.category)
    loop = build_loop(recorder, workspace.tools(task.tools), config)
    run = await loop.run(task.text)
    passed, _ = task.check(Outcome.of(run))
    if not passed or len(recorder.turns) != len(targets):
        return []
    return recorder.turns
