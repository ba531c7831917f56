"""Tree search over tool calls, for tasks where the first try often fails.

Best-first search in the style of ToolChain* (A*) and DFSDT: a node is a conversation so
far. Expanding a node asks the model for `width` candidate next moves (the greedy reply
and sampled alternatives), makes each candidate's calls (identical calls across branches
are made once), and scores each child by f = g + h: g counts the calls made on the path
(cost so far), h penalises failed and empty results; a candidate answer costs its path's
f plus a penalty for the verifier's doubt. The lowest-f node is expanded next,
which backtracks by itself when a branch keeps failing. A candidate answer ends the search
when the verifier accepts it; `max_nodes` bounds the expansions. A candidate answer that
an answer rule (`planners.rules`) would send back is not a candidate: the search goes on
along the other branches.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace

from bigloop._errors import BudgetExceeded
from bigloop.atoms.models.base import Message, ModelSettings
from bigloop.planners.plan import is_empty
from bigloop.planners.rules import Answered, AnswerRules, calls_in, default_rules
from bigloop.runtime.context import RunContext
from bigloop.trace.records import Step


@dataclass(frozen=True, kw_only=True)
class Result:
    """One tool result on a path: what the model read, and whether the call succeeded."""

    text: str
    ok: bool


Verifier = Callable[[str, str, list[Result]], float]
"""(task, answer, tool results on the path) -> score in [0, 1]; ≥ 0.5 accepts."""

FAILURE_COST = 2.0
UNVERIFIED_COST = 2.0
"""Added to an answer's cost per unit of verifier doubt (1 - score)."""


@dataclass(kw_only=True)
class Node:
    id: int
    parent: int | None
    messages: list[Message]
    g: float = 0.0
    h: float = 0.0
    results: list[Result] = field(default_factory=list)

    @property
    def f(self) -> float:
        return self.g + self.h


def default_verifier(task: str, answer: str, results: list[Result]) -> float:
    """1 for a non-empty answer reached after a successful last call; 0.5 for one made
    without any call (accepted, but after any tool-backed answer of similar cost); below
    0.5 (rejected) when empty or after a failed or empty last result."""
    if not answer.strip():
        return 0.0
    if not results:
        return 0.5
    if not results[-1].ok or is_empty(results[-1].text):
        return 0.2
    return 1.0


class SearchPlanner:
    """Best-first tree search over candidate calls.

    Args:
        width: candidate moves per expansion (the greedy one, then sampled ones).
        max_nodes: expansions before giving up (each costs `width` model turns).
        temperature: sampling temperature of the alternative candidates.
        verifier: scores a candidate answer; the default accepts an answer whose path
            ended in a successful call.
        rules: an answer any of them would send back is dropped (judged on its own path;
            default: all of them).
    """

    name = "search"

    def __init__(
        self,
        *,
        width: int = 2,
        max_nodes: int = 6,
        temperature: float = 0.8,
        verifier: Verifier | None = None,
        rules: AnswerRules | None = None,
    ) -> None:
        self.rules = default_rules() if rules is None else rules
        self.width = width
        self.max_nodes = max_nodes
        self.temperature = temperature
        self.verifier = verifier or default_verifier

    async def steps(self, ctx: RunContext) -> AsyncIterator[Step]:
        ids = itertools.count()
        root = Node(id=next(ids), parent=None, messages=list(ctx.transcript.messages))
        frontier: list[tuple[float, int, Node]] = [(0.0, root.id, root)]
        answers: list[tuple[float, float, int, Node, str]] = []
        expanded = 0
        while frontier and expanded < self.max_nodes:
            _, _, node = heapq.heappop(frontier)
            if answers and answers[0][0] < node.f:
                break  # the best answer costs less than any open path
            expanded += 1
            seen: set[str] = set()
            for k in range(self.width):
                ctx.meter.check()
                response = await ctx.model_turn(
                    node.messages, self._settings(ctx.settings, k), ctx.runner.specs
                )
                reply = response.as_message()
                yield ctx.model_step(response, reply, role=f"expand:{node.id}")
                signature = reply.content + repr([(c.name, c.arguments) for c in reply.tool_calls])
                if response.error or signature in seen:
                    continue
                seen.add(signature)
                child = Node(
                    id=next(ids),
                    parent=node.id,
                    messages=[*node.messages, reply],
                    g=node.g,
                    h=node.h,
                    results=list(node.results),
                )
                if not response.tool_calls:
                    score = self._score(ctx, child, response.text)
                    if score >= 0.5:
                        cost = child.f + UNVERIFIED_COST * (1 - score)
                        heapq.heappush(answers, (cost, 1 - score, child.id, child, response.text))
                    continue
                results: list[Message] = []
                async for step in ctx.runner.calls(response.tool_calls):
                    if step.message is not None:
                        results.append(step.message)
                    output = str(step.output)
                    child.results.append(Result(text=output, ok=_succeeded(step)))
                    child.g += 1
                    if step.error or is_empty(output):
                        child.h += FAILURE_COST
                    yield step
                # Calls complete in any order; the conversation lists results in call order.
                order = {c.id: i for i, c in enumerate(response.tool_calls)}
                results.sort(key=lambda m: order.get(m.tool_call_id or "", len(order)))
                child.messages.extend(results)
                heapq.heappush(frontier, (child.f, child.id, child))
        if not answers:
            raise BudgetExceeded(
                f"Tree search found no accepted answer in {expanded} expansions "
                f"(max_nodes={self.max_nodes})."
            )
        *_, best, answer = answers[0]
        ctx.transcript.messages[:] = best.messages
        ctx.finish(answer)

    def _score(self, ctx: RunContext, path: Node, text: str) -> float:
        """The verifier's score of the answer `text` at the end of `path`; 0 (rejected)
        when an answer rule would send it back, judged on `path` alone."""
        answer = Answered(
            text=text,
            task=ctx.transcript.task,
            evidence=ctx.transcript.evidence(),
            specs=ctx.runner.specs,
            results=[r.text for r in path.results if r.ok],
            calls=calls_in(path.messages),
        )
        if self.rules.fresh().judge(answer) is not None:
            return 0.0
        return self.verifier(ctx.transcript.task, text, path.results)

    def _settings(self, base: ModelSettings, k: int) -> ModelSettings:
        if k == 0:
            return base
        return replace(base, temperature=self.temperature, seed=(base.seed or 0) + k)


def _succeeded(step: Step) -> bool:
    """The call gave a result: made, or repeated with the earlier result (the tool's)."""
    if step.error == "repeated":
        return step.message is not None and step.message.origin == "tool"
    return step.error is None
