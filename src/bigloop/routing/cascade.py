"""Model wrappers that add redundancy, fallback or routing to a `ChatModel`.

- `FallbackModel` tries models in order when one fails or times out.
- `RoutedModel` orders its models by their cards (`route`) for each request, then falls
  back along that order.
- `HedgedModel` sends a critical request to a second model when the first is slow and
  takes the first valid reply.
- `CascadeModel` asks a cheap model first and escalates to a strong one when the cheap
  reply does not pass a check (cheap/strong routing; default check: `calls_are_valid`;
  `grounded_reply` also escalates invented values and answers from memory; `samples`
  also escalates when sampled replies of the cheap model disagree with it; `verifier`
  also when a verifier, such as a model as judge, scores it below `threshold`).

Each wrapper is itself a `ChatModel` and keeps no per-call state, so one wrapper can serve
concurrent runs. What happened in a call is reported on the reply it returns:
`ModelResponse.answered_by` names the model that wrote it and, for `RoutedModel`,
`ModelResponse.route` holds the routing decision. A wrapper fills either field only when
the reply it passes on left it empty: with nested wrappers the innermost report wins, so
`answered_by` names the model that actually wrote the reply, not an intermediate wrapper.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol, runtime_checkable

from bigloop._errors import ModelUnavailable, UserError
from bigloop.atoms.card import AtomCard
from bigloop.atoms.models.base import (
    CallContinuation,
    ChatModel,
    Message,
    ModelResponse,
    ModelSettings,
    ToolCall,
    ToolSpec,
)
from bigloop.atoms.schema import schema_problems
from bigloop.atoms.verifiers import Check, Verifier
from bigloop.policies.grounding import grounded, scalars
from bigloop.routing.route import Constraints, Weights, route
from bigloop.runtime.call import MODEL_MISTAKES
from bigloop.trace.records import RunResult, Step


class RouteLearner(Protocol):
    """Which model to try first for a kind of task, learned from run outcomes
    (`bigloop.optimize.bandit.BanditPolicy` is one)."""

    def choose(self, kind: str, atoms: Sequence[str]) -> str: ...

    def update(self, kind: str, atom: str, success: bool) -> None: ...


@runtime_checkable
class LearnsFromRuns(Protocol):
    """A model that learns from each finished run: the loop calls `observe_run` with the
    result as soon as a run ends (`RoutedModel` with a learner)."""

    def observe_run(self, result: RunResult) -> None: ...


class FallbackModel:
    """Tries `models` in order: a model that fails (unreachable, error) or takes longer than
    `timeout_s` hands the request to the next. The reply says which model answered."""

    def __init__(self, models: Sequence[ChatModel], *, timeout_s: float | None = None) -> None:
        if not models:
            raise UserError("FallbackModel needs at least one model.")
        self.models = list(models)
        self.timeout_s = timeout_s

    @property
    def name(self) -> str:
        return "fallback(" + ", ".join(m.name for m in self.models) + ")"

    @property
    def card(self) -> AtomCard:
        cards = [m.card for m in self.models]
        return _redundant(self.name, "fallback chain", cards, max(c.cost for c in cards))

    async def chat(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        failures = []
        for model in self.models:
            try:
                turn = model.chat(messages, tools, settings)
                response = await (
                    asyncio.wait_for(turn, self.timeout_s) if self.timeout_s else turn
                )
            except (ModelUnavailable, TimeoutError) as e:
                failures.append(f"{model.name}: {e or 'timed out'}")
                continue
            return _answered(response, model.name)
        raise ModelUnavailable("Every model in the fallback chain failed: " + "; ".join(failures))


class RoutedModel:
    """A model atom that routes every request among `models` by their cards (`route`),
    then falls back along the route's order. Each reply carries its routing decision in
    `ModelResponse.route` (order, Pareto front, rejections), which the loop writes into
    the trace.

    With a `learner`, routing also learns: for each request the learner picks, among the
    models the constraints allow, the one to try first for the request's kind
    (`kind_of(task)`, the user's last request); the loop reports every finished run
    (`observe_run`), and each reply counts for the model that wrote it: a failure when
    it was unreadable or had a call refused, or when it was the last and the run did not
    end "ok"; a success otherwise. Seed the learner from earlier traces with
    `BanditPolicy.from_store`.
    """

    def __init__(
        self,
        models: Sequence[ChatModel],
        *,
        constraints: Constraints | None = None,
        weights: Weights | None = None,
        cards: Sequence[AtomCard] | None = None,
        timeout_s: float | None = None,
        learner: RouteLearner | None = None,
        kind_of: Callable[[str], str] = lambda task: "any",
    ) -> None:
        self.models = {m.name: m for m in models}
        self.constraints = constraints
        self.weights = weights
        self.cards = list(cards) if cards is not None else [m.card for m in models]
        self.timeout_s = timeout_s
        self.learner = learner
        self.kind_of = kind_of
        route(self.cards, constraints, weights)  # fail fast on impossible constraints

    @property
    def name(self) -> str:
        return "routed(" + ", ".join(self.models) + ")"

    @property
    def card(self) -> AtomCard:
        first = self.models[route(self.cards, self.constraints, self.weights).order[0]]
        return replace(first.card, name=self.name, description="routed model")

    async def chat(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        decision = route(self.cards, self.constraints, self.weights)
        order = list(decision.order)
        report = decision.to_dict()
        if self.learner is not None:
            kind = self.kind_of(_request(messages))
            first = self.learner.choose(kind, order)
            order = [first, *(n for n in order if n != first)]
            report["learned"] = {"kind": kind, "first": first}
        chain = FallbackModel([self.models[n] for n in order], timeout_s=self.timeout_s)
        response = await chain.chat(messages, tools, settings)
        if response.route is not None:
            return response
        return replace(response, route=report)

    def observe_run(self, result: RunResult) -> None:
        """Credit each reply of the run to the model that wrote it (`credits`)."""
        if self.learner is None or result.status in ("input_required", "interrupted"):
            return
        kind = self.kind_of(result.task)
        for atom, success in credits(result.steps, result.status, list(self.models)):
            self.learner.update(kind, atom, success)


class HedgedModel:
    """Redundant calls for critical steps: ask `primary`; if it has not answered within
    `hedge_after_s`, also ask `backup`; the first valid reply wins, the other is cancelled."""

    def __init__(self, primary: ChatModel, backup: ChatModel, *, hedge_after_s: float) -> None:
        self.primary, self.backup = primary, backup
        self.hedge_after_s = hedge_after_s

    @property
    def name(self) -> str:
        return f"hedged({self.primary.name}, {self.backup.name})"

    @property
    def card(self) -> AtomCard:
        cards = [self.primary.card, self.backup.card]
        return _redundant(self.name, "hedged pair", cards, sum(c.cost for c in cards))

    async def chat(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        first = asyncio.ensure_future(self.primary.chat(messages, tools, settings))
        done, _ = await asyncio.wait({first}, timeout=self.hedge_after_s)
        if done and _valid(first):
            return _answered(first.result(), self.primary.name)
        racers = {first: self.primary.name} if not done else {}
        second = asyncio.ensure_future(self.backup.chat(messages, tools, settings))
        racers[second] = self.backup.name
        try:
            while racers:
                done, _ = await asyncio.wait(racers, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    name = racers.pop(task)
                    if _valid(task):
                        return _answered(task.result(), name)
            if first.done() and not first.cancelled() and first.exception() is None:
                # Both replied, neither valid: the primary's, for the loop to repair.
                return _answered(first.result(), self.primary.name)
            raise ModelUnavailable(f"{self.name}: neither model gave a reply.")
        finally:
            for task in racers:
                task.cancel()


REFUSED = MODEL_MISTAKES


def credits(steps: Sequence[Step], status: str, members: Sequence[str]) -> list[tuple[str, bool]]:
    """(model, success) per routed reply of a run: the reply's model (the member that
    answered; a nested wrapper's inner name maps to the member the router put first) gets
    a failure when the reply was unreadable or had a call refused, or when it was the
    last and the run did not end "ok"; the member the router put first also gets a
    failure when another had to answer for it. Replies without a routing decision (not
    routed, or replayed by a resume) are skipped."""
    turns: list[list[tuple[str, bool]]] = []
    for step in steps:
        info = step.input if isinstance(step.input, dict) else {}
        if step.kind == "model":
            learned = (info.get("route") or {}).get("learned")
            if not learned:
                turns.append([])
                continue
            first = str(learned["first"])
            answered = str(info.get("answered_by") or first)
            atom = answered if answered in members else first
            turn = [(atom, step.error is None)]
            if atom != first:
                turn.append((first, False))
            turns.append(turn)
        elif step.kind == "tool" and step.error in REFUSED and turns and turns[-1]:
            turns[-1][0] = (turns[-1][0][0], False)
    out: list[tuple[str, bool]] = []
    for k, turn in enumerate(turns):
        for n, (atom, clean) in enumerate(turn):
            last = k == len(turns) - 1 and n == 0
            out.append((atom, clean and (status == "ok" or not last)))
    return out


def _request(messages: list[Message]) -> str:
    """The user's last request (not the loop's own notes)."""
    for m in reversed(messages):
        if m.origin == "user" and m.answers is None:
            return m.content
    return ""


def calls_are_valid(
    response: ModelResponse, tools: list[ToolSpec], messages: list[Message] | None = None
) -> bool:
    """The default cascade check: a readable reply whose calls name offered tools with
    arguments that satisfy their schemas."""
    if response.error:
        return False
    specs = {t.name: t for t in tools}
    return all(
        c.name in specs and not schema_problems(c.arguments, specs[c.name].parameters)
        for c in response.tool_calls
    )


def grounded_reply(response: ModelResponse, tools: list[ToolSpec], messages: list[Message]) -> bool:
    """A stricter cascade check, for a small model's usual failures: valid calls whose
    every string and number argument (in lists and objects too) comes from what the user
    and the tools have said (`grounded`; not the loop's notes or refusals, which quote
    what they refuse, but the user's answers given on resume), and no answer before any
    tool has been called when tools are offered (an answer from memory)."""
    if not calls_are_valid(response, tools):
        return False
    if not response.tool_calls:
        return not tools or any(m.role == "tool" for m in messages)
    context = " ".join(_said(messages)).lower()
    return all(
        grounded(value, context)
        for call in response.tool_calls
        for value in scalars(call.arguments)
    )


def _said(messages: list[Message]) -> list[str]:
    """What the user (their requests and answers) and the tools said — not the loop's own
    notes or refusals (`Message.origin`)."""
    return [m.content for m in messages if m.origin in ("user", "tool")]


class CascadeModel:
    """Cheap/strong routing: ask `cheap` first; escalate to `strong` when its reply fails
    `check` (default: valid calls to offered tools). `calls` counts requests and
    `escalated` how many of them went to `strong`, over every run that shares the model.

    With `samples` > 0 a reply that passes the check must also agree with that many more
    replies of the cheap model, sampled at `temperature` (self-consistency as the
    cheap model's confidence): the same calls, or all of them an answer. A local model
    reads the prompt once for all of them (its prefix cache), so a sample costs only its
    generated tokens."""

    def __init__(
        self,
        cheap: ChatModel,
        strong: ChatModel,
        *,
        check: Check | None = None,
        samples: int = 0,
        temperature: float = 0.7,
        verifier: Verifier | None = None,
        threshold: float = 0.5,
    ) -> None:
        if samples < 0:
            raise UserError(f"CascadeModel(samples={samples}): use 0 or more.")
        if not 0 <= threshold <= 1:
            raise UserError(f"CascadeModel(threshold={threshold}): use a score in [0, 1].")
        self.cheap, self.strong = cheap, strong
        self.check = check or calls_are_valid
        self.samples = samples
        self.temperature = temperature
        self.verifier = verifier
        self.threshold = threshold
        self.escalated = 0
        self.calls = 0

    @property
    def name(self) -> str:
        return f"cascade({self.cheap.name} → {self.strong.name})"

    @property
    def card(self) -> AtomCard:
        return replace(self.strong.card, name=self.name, description="cheap/strong cascade")

    async def chat(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        self.calls += 1
        try:
            response = await self.cheap.chat(messages, tools, settings)
            if (
                self.check(response, tools, messages)
                and await self._confident(response, messages, tools, settings)
                and await self._verified(response, messages, tools, settings)
            ):
                return _answered(response, self.cheap.name)
        except ModelUnavailable:
            pass
        self.escalated += 1
        return _answered(await self.strong.chat(messages, tools, settings), self.strong.name)

    async def _confident(
        self,
        response: ModelResponse,
        messages: list[Message],
        tools: list[ToolSpec],
        settings: ModelSettings | None,
    ) -> bool:
        """Whether `samples` sampled replies of the cheap model agree with `response`."""
        for i in range(self.samples):
            sampled = sample_settings(settings, self.temperature, i)
            if not agree(response, await self.cheap.chat(messages, tools, sampled)):
                return False
        return True

    async def _verified(
        self,
        response: ModelResponse,
        messages: list[Message],
        tools: list[ToolSpec],
        settings: ModelSettings | None,
    ) -> bool:
        """Whether the verifier scores `response` at least `threshold` (no verifier: yes;
        a structured-output turn, a plan or a judgement, is not judged; a verifier that
        cannot judge escalates)."""
        if self.verifier is None or (settings is not None and settings.as_written):
            return True
        judgement = await self.verifier.judge(messages, tools, response)
        return judgement.score is not None and judgement.score >= self.threshold

    async def next_call(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        calls: list[ToolCall],
        settings: ModelSettings | None = None,
        stop: Callable[[str], bool] | None = None,
    ) -> ModelResponse:
        """One more call after `calls` (`CallContinuation`): the cheap model's when it can
        continue and its call passes the check, else the strong model's; no call (an
        empty reply) when neither can continue."""
        if isinstance(self.cheap, CallContinuation):
            response = await self.cheap.next_call(messages, tools, calls, settings, stop)
            if not response.tool_calls or self.check(response, tools, messages):
                return _answered(response, self.cheap.name)
        if isinstance(self.strong, CallContinuation):
            self.escalated += 1
            response = await self.strong.next_call(messages, tools, calls, settings, stop)
            return _answered(response, self.strong.name)
        return ModelResponse()


def sample_settings(settings: ModelSettings | None, temperature: float, i: int) -> ModelSettings:
    """The settings of sample `i` beside a reply made with `settings`: `temperature`,
    and a seed of its own (the reply's seed + 1 + i), so no two samples repeat."""
    base = settings or ModelSettings()
    return replace(base, temperature=temperature, seed=(base.seed or 0) + 1 + i)


def agree(a: ModelResponse, b: ModelResponse) -> bool:
    """Two replies that do the same: the same calls (names and arguments, in any order),
    or both an answer without calls (their words may differ). An error agrees with
    nothing."""
    if a.error or b.error:
        return False
    return sorted(map(_call_key, a.tool_calls)) == sorted(map(_call_key, b.tool_calls))


def _call_key(call: ToolCall) -> str:
    return json.dumps([call.name, call.arguments], sort_keys=True, default=str)


def _answered(response: ModelResponse, name: str) -> ModelResponse:
    """`response` (a copy: the inner model may hand out a shared object) naming `name` as
    its author, unless an inner wrapper already named the model that wrote it."""
    return replace(response, answered_by=response.answered_by or name)


def _valid(task: asyncio.Future[ModelResponse]) -> bool:
    if task.cancelled() or task.exception() is not None:
        return False
    return task.result().error is None


def _redundant(name: str, description: str, cards: list[AtomCard], cost: float) -> AtomCard:
    """The card of atoms used as one: local only if all are; it fails only if all fail."""
    unreliability = 1.0
    for c in cards:
        unreliability *= 1 - c.reliability
    return AtomCard(
        name=name,
        kind="model",
        description=description,
        privacy="local" if all(c.privacy == "local" for c in cards) else "mixed",
        cost=cost,
        reliability=1 - unreliability,
    )
