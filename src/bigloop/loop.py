"""The Loop: configuration, and the drive that runs a planner to an answer.

`Loop.run` builds a `RunContext` for the task (the offered tools chosen by the loop's
selectors, the call checks, the budget), then drives the planner: each `Step` it yields
is committed to the trace store and handed to `on_step` as it completes, which is also
the checkpoint `Loop.resume` continues from. `Loop.run_sync` is a thin wrapper.
The drive always ends a run with a status: an exception from outside bigloop's error
families (a bug in a model, tool or hook) ends it "failed", with the exception's type,
message and place as its error, never leaving it "running".
Planners (`bigloop.planners`) and policies (`bigloop.policies`, named in `bigloop.parts`)
are parts; the Loop only wires them.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Literal, get_args

from bigloop._errors import BudgetExceeded, InputRequired, RunFailure, UserError
from bigloop.atoms.models.base import ChatModel, Message, ModelSettings, ToolCall, ToolSpec
from bigloop.atoms.models.prompts import USER_ANSWERED
from bigloop.atoms.tool import Tool
from bigloop.config import LoopConfig
from bigloop.parts import PlannerName, Policies
from bigloop.policies import (
    AnswerCheck,
    CallCheck,
    ToolSelector,
    with_approval,
)
from bigloop.policies.approval import (
    ASK,
    Approver,
    approval_question,
    approve_all,
    asking,
    says_yes,
)
from bigloop.policies.clarify import Clarify
from bigloop.policies.tool_fits import bind_judge
from bigloop.registry import Registry, RegistrySearch, find_tools_tool
from bigloop.routing.cascade import LearnsFromRuns
from bigloop.runtime.context import AskFn, Budget, Planner, ResultHook, RunContext
from bigloop.trace.records import Question, RunResult, RunStatus, Step, failure_text
from bigloop.trace.store import TraceStore

OnStep = Callable[[Step], None]


class Loop:
    """A tool-calling loop over one model and a set of tools.

    One way to build a loop: `Loop(model, tools, config=LoopConfig(...))`. The config
    gives every default — planner, policies (`off`, `clarify`, `tool_fits`, `top_k`),
    budget, sampling settings, system prompt and demonstrations, tool docs — so
    `Loop(model, tools)` behaves as `bigloop run` with `LoopConfig()`; the keyword
    arguments below replace single parts. The config's own model and tools fields
    describe what `Loop.from_config` builds; here `model` and `tools` are used as given.

    Args:
        model: any `ChatModel` (local, OpenAI-compatible, scripted).
        tools: the tools offered to the model (`config.tool_docs` replaces their docs).
        config: the defaults of every part below (None: `LoopConfig()`).
        system: a system prompt placed before bigloop's own instructions (default: the
            config's system prompt and demonstrations).
        budget: step, token, cost, time and repair limits (default: the config's).
        settings: the model's sampling settings (default: the config's).
        store: where steps are traced; None keeps the run in memory only.
        top_k: offer the model only the k tools most relevant to the task (BM25); None
            takes the config's (None: all, most relevant first).
        planner: "react" (a model turn per step), "graph" (plan a task graph, run it
            concurrently, join; `GraphPlanner`), "search" (tree search over candidate
            calls; `SearchPlanner`), "auto" (graph when the task lists several items,
            else react; `AutoPlanner`), "code" (programs that call the tools;
            `CodePlanner`), or a planner object; None: the config's ("auto").
        clarify: a clarifying check in place of the one `config.clarify` sets.
        ask: how to ask (returns the answer). Without it, a run that must ask stops with
            status "input_required" and the question; `resume(run_id, answer=...)`
            continues it.
        registry: select the offered tools by searching this registry (hybrid BM25 +
            dense) for the task, `top_k` of them (default 5); the model also gets
            `find_tools` to search it for more. Its tools join `tools`.
        checks: the call checks, in order (default: the config's policies).
        answer_checks: revise the final answer, in order (default: the config's).
        selectors: the tool selectors, in order (default: relevance gate, then BM25 rank
            keeping `top_k`; with a registry, `RegistrySearch`).
        approve: who approves calls to irreversible tools, `approve(call, spec) -> bool`
            (sync or async); "ask" (the default): the user, by answering a question
            (through `ask`, or the run stops with it, `RunResult.pending` holds the call,
            and `resume(run_id, answer="yes")` or `run("yes",
            history=result.messages)` makes the call); None: nobody, every such call
            is denied. The approval gate ends every list of
            checks, `checks` included (`with_approval`); `approve_all` switches it off.
        secrets: values that never reach the trace store (added to its `Redactor`).
    """

    def __init__(
        self,
        model: ChatModel,
        tools: Sequence[Tool] = (),
        *,
        config: LoopConfig | None = None,
        system: str | None = None,
        budget: Budget | None = None,
        settings: ModelSettings | None = None,
        store: TraceStore | None = None,
        top_k: int | None = None,
        planner: PlannerName | Planner | None = None,
        clarify: Clarify | None = None,
        ask: AskFn | None = None,
        registry: Registry | None = None,
        checks: Sequence[CallCheck] | None = None,
        selectors: Sequence[ToolSelector] | None = None,
        answer_checks: Sequence[AnswerCheck] | None = None,
        approve: Approver | Literal["ask"] | None = ASK,
        secrets: Sequence[str] = (),
    ) -> None:
        self.config = config or LoopConfig()
        self._described = False  # by `from_config`: the config names the model and tools
        policies = Policies.build(
            self.config.off,
            clarify=self.config.clarify,
            top_k=top_k if top_k is not None else self.config.top_k,
            tool_fits=self.config.tool_fits,
        )
        tools = self._offered(self.config.documented(list(tools)), registry)
        self.model = model
        self.tools = {t.name: t for t in tools}
        self.specs = [
            ToolSpec(name=t.name, description=t.description, parameters=t.schema, effect=t.effect)
            for t in tools
        ]
        self.catalog = {s.name: s for s in self.specs}
        self.system = system if system is not None else self.config.instructions()
        self._user_system = system if system is not None else self.config.system
        self.budget = budget or self.config.budget()
        self.settings = settings or self.config.model_settings()
        self.store = store
        self.planner = _planner(planner or self.config.planner, policies)
        self.checks = _with_clarify(list(policies.checks if checks is None else checks), clarify)
        approve = approve_all if policies.approve_all else approve
        self.checks = bind_judge(with_approval(self.checks, approve), model)
        if store is not None and secrets:
            store.redactor = store.redactor.adding(secrets)
        if selectors is not None:
            self.selectors = list(selectors)
        elif registry is not None:
            self.selectors = [RegistrySearch(registry, k=top_k or 5)]
        else:
            self.selectors = policies.selectors
        self.answer_checks = list(
            policies.answer_checks if answer_checks is None else answer_checks
        )
        self.ask = ask

    @staticmethod
    def _offered(tools: list[Tool], registry: Registry | None) -> list[Tool]:
        """`tools`, with a registry's tools and `find_tools` when there is one.

        Raises:
            UserError: two tools share a name.
        """
        if registry is not None:
            tools = [*tools, *registry.tools_for([c.name for c in registry.cards])]
            tools = [*{t.name: t for t in tools}.values(), find_tools_tool(registry)]
        names = [t.name for t in tools]
        if duplicates := {n for n in names if names.count(n) > 1}:
            raise UserError(f"Two tools share the name(s) {sorted(duplicates)}; rename one.")
        return tools

    @classmethod
    def from_config(
        cls,
        config: LoopConfig,
        *,
        store: TraceStore | None = None,
        ask: AskFn | None = None,
        approve: Approver | Literal["ask"] | None = ASK,
        tools: Sequence[Tool] | None = None,
        model: ChatModel | None = None,
    ) -> Loop:
        """The loop `config` describes, its model and tools built from it: what `bigloop
        run` runs, and what a stored run is resumed with.

        `tools` and `model`, when given, replace the ones `config` names (the same as
        `Loop(model, tools, config=config)`).

        Paths in `config` are made absolute first (`LoopConfig.with_absolute_paths`): the
        config stored with each run then names the same files whatever folder a resume
        starts in.

        Raises:
            UserError: `config.off` names a policy that does not exist, or the model or
                tools cannot be built.
        """
        config = config.with_absolute_paths()
        loop = cls(
            model if model is not None else config.build_model(),
            list(tools) if tools is not None else config.build_tools(),
            config=config,
            store=store,
            ask=ask,
            approve=approve,
        )
        loop._described = model is None and tools is None
        return loop

    async def run(
        self,
        task: str,
        *,
        history: list[Message] | None = None,
        on_step: OnStep | None = None,
    ) -> RunResult:
        """Run `task` to an answer or until the budget runs out.

        Args:
            history: an earlier run's `messages`, to continue that conversation.

        Raises:
            UserError: `task` is empty (or only spaces).
        """
        if not task.strip():
            raise UserError('The task is empty: say what to do, e.g. "What is 2 + 2?".')
        messages = [Message(role="system", content=self.system)] if self.system else []
        if history:
            messages = _with_system(self.system, list(history))
        ctx = self._context(uuid.uuid4().hex[:12], task, messages)
        if self.store:
            self.store.start_run(ctx.transcript.run_id, task, self.model.name, self._run_config())
        if history and (asked := self._approval_waiting(history)) is not None:
            ctx.transcript.messages[-1].answers = asked.text  # the task answers the loop's question
            self._record(ctx, _answer_step(ctx, asked, task, ctx.transcript.messages[-1]), None)
            await self._make_approved(ctx, asked, task, on_step)
        return await self._drive(ctx, on_step)

    def _approval_waiting(self, history: list[Message]) -> Question | None:
        """The approval an earlier run of this conversation stopped on, when `history`
        ends with it (the loop's own question, after the call it quotes): the next user
        turn is its answer, as `resume` would take it."""
        last = history[-1]
        if last.role != "assistant" or last.origin != "loop":
            return None
        for message in reversed(history[:-1]):
            for call in message.tool_calls if message.role == "assistant" else ():
                spec = self.catalog.get(call.name)
                if spec is not None and approval_question(call) == last.content:
                    return asking(call, spec)
        return None

    def run_sync(
        self,
        task: str,
        *,
        history: list[Message] | None = None,
        on_step: OnStep | None = None,
    ) -> RunResult:
        """`run` for code that is not async (`history`: an earlier run's `messages`)."""
        return asyncio.run(self.run(task, history=history, on_step=on_step))

    async def resume(
        self, run_id: str, *, answer: str | None = None, on_step: OnStep | None = None
    ) -> RunResult:
        """Continue an interrupted run from its last completed step.

        Completed tool calls are never repeated: the context is rebuilt from the stored
        steps, and only calls that never completed are run — except calls to tools that
        are not idempotent, which are reported to the model instead of being repeated.

        Args:
            answer: the user's answer, for a run that stopped with "input_required".

        Raises:
            UserError: there is no store, no such run, or another process (or another
                resume in this one) is running it (`TraceStore.claim`).
        """
        if self.store is None:
            raise UserError("Loop.resume needs a TraceStore: pass store=TraceStore().")
        summary = self.store.run(run_id)
        if summary.status == "ok" or not self.store.claim(summary.run_id):
            return self._finished(summary.run_id)
        messages = [Message(role="system", content=self.system)] if self.system else []
        ctx = self._context(summary.run_id, summary.task, messages)
        ctx.replay(self.store.steps(summary.run_id))
        ctx.meter.cost = summary.cost or 0.0
        ctx.runner.intents = self.store.intents(summary.run_id)
        if summary.status == "input_required" and answer is not None:
            asked = _waiting_question(ctx.transcript.steps, summary.question or summary.error or "")
            note = USER_ANSWERED.format(question=asked.text, answer=answer)
            message = Message(role="user", content=note, origin="user", answers=asked.text)
            ctx.transcript.messages.append(message)
            self._record(ctx, _answer_step(ctx, asked, answer, message), None)
            await self._make_approved(ctx, asked, answer, on_step)
        return await self._drive(ctx, on_step)

    async def _make_approved(
        self, ctx: RunContext, question: Question, answer: str, on_step: OnStep | None
    ) -> None:
        """When the run stopped to ask approval for a call and the answer approves it,
        make that call now (the gate finds the answer) and tell the model its result, so
        the model need not ask for it again."""
        if question.kind != "approval" or question.call is None or not says_yes(answer):
            return
        asked = question.call
        call = ToolCall(
            id=f"approved-{len(ctx.transcript.steps)}", name=asked.name, arguments=asked.arguments
        )
        result = await ctx.runner.call(call)
        note = f"The user approved {call.name}; it was called and returned: {result.output}"
        if not result.ok:
            note = f"The user approved {call.name}, but the call failed: {result.output}"
        ctx.transcript.messages.append(Message(role="user", content=note, origin="loop"))
        self._record(ctx, ctx.runner.tool_step(call, result.output, result), on_step)

    def _finished(self, run_id: str) -> RunResult:
        """A run that already ended with an answer, as stored (resuming it does nothing)."""
        assert self.store is not None
        summary = self.store.run(run_id)
        messages = [Message(role="system", content=self.system)] if self.system else []
        ctx = self._context(run_id, summary.task, messages)
        ctx.replay(self.store.steps(run_id))
        ctx.meter.cost = summary.cost or 0.0
        ctx.answer = summary.answer
        return self._result(ctx, "ok", None)

    def as_tool(self, name: str, description: str, *, timeout_s: float = 300.0) -> Tool:
        """This loop as one tool taking a `task`: a sub-loop another loop (or a workflow)
        can call. The sub-run's trace goes to this loop's store."""

        async def run(task: str) -> str:
            result = await self.run(task)
            if result.status != "ok":
                raise RuntimeError(f"sub-loop {name!r} ended {result.status}: {result.error}")
            return result.answer or ""

        schema = {
            "type": "object",
            "properties": {"task": {"type": "string", "description": "what to do, in words"}},
            "required": ["task"],
        }
        return Tool.from_schema(name, description, schema, run, timeout_s=timeout_s)

    def select(self, task: str, history: Sequence[Message] = ()) -> list[ToolSpec]:
        """The tools offered for `task`: the loop's selectors applied in order. A selector
        that reads the conversation (`reads_conversation`) gets the words of `history`
        too; one that was already calling tools keeps them all."""
        said = "\n".join(m.content for m in history if m.origin in ("user", "tool"))
        called = any(m.tool_calls for m in history)
        specs = self.specs
        for selector in self.selectors:
            if getattr(selector, "reads_conversation", False):
                if called:
                    continue
                specs = selector.select(f"{said}\n{task}" if said else task, specs)
            else:
                specs = selector.select(task, specs)
        return specs

    def _context(self, run_id: str, task: str, messages: list[Message]) -> RunContext:
        hooks: list[ResultHook] = [
            hook for s in self.selectors if (hook := getattr(s, "after_call", None)) is not None
        ]
        task_index = len(messages)
        history = list(messages)
        messages.append(Message(role="user", content=task))
        return RunContext(
            grounds=self._system_said(history),
            run_id=run_id,
            task=task,
            model=self.model,
            settings=self.settings,
            system=self.system,
            tools=self.tools,
            catalog=self.catalog,
            specs=self.select(task, history),
            messages=messages,
            task_index=task_index,
            budget=self.budget,
            checks=self.checks,
            answer_checks=self.answer_checks,
            ask_user=self.ask,
            store=self.store,
            on_result=hooks,
            planner=self.planner.name,
        )

    def _system_said(self, history: list[Message]) -> tuple[str, ...]:
        """What the user said in system prompts: the loop's own `system` without the
        demonstrations a config adds (`LoopConfig.system`), and a history's own system
        message (merged after the loop's by `_with_system`). Such text grounds values (a
        date or an account id given there); the demonstrations' values do not."""
        said = [self._user_system] if self._user_system else []
        first = history[0] if history else None
        system = self.system or ""
        if first is None or first.role != "system" or first.content == system:
            return tuple(said)
        merged = bool(system) and first.content.startswith(system + "\n\n")
        said.append(first.content[len(system) + 2 :] if merged else first.content)
        return tuple(said)

    async def _drive(self, ctx: RunContext, on_step: OnStep | None) -> RunResult:
        status: RunStatus = "failed"
        error: str | None = None
        steps = self.planner.steps(ctx)
        try:
            async for step in steps:
                self._record(ctx, step, on_step)
            status = "ok"
        except InputRequired as e:
            status, error, ctx.question = "input_required", e.question, e.question
            # the record says who asked what; the run's error keeps the question's words
        except BudgetExceeded as e:
            status, error = "budget_exceeded", str(e)
        except RunFailure as e:
            error = str(e)
        except (asyncio.CancelledError, KeyboardInterrupt, SystemExit):
            if self.store:
                self.store.finish_run(
                    ctx.transcript.run_id, "interrupted", None, "interrupted", cost=ctx.meter.cost
                )
            raise
        except Exception as e:  # noqa: BLE001 - the top level: every run ends with a status
            error = failure_text(e)
        finally:
            # A planner stopped by a failure to record its step still has calls running.
            if (close := getattr(steps, "aclose", None)) is not None:
                await close()
        result = self._result(ctx, status, error)
        if isinstance(self.model, LearnsFromRuns):
            self.model.observe_run(result)
        return result

    def _record(self, ctx: RunContext, step: Step, on_step: OnStep | None) -> None:
        # A planner may create a step before an earlier one is recorded (a streamed plan
        # whose calls finish first): its number is its place in the run, set here.
        step.index = len(ctx.transcript.steps)
        ctx.transcript.steps.append(step)
        if self.store:
            self.store.add_step(step, cost=ctx.meter.cost)
        if on_step:
            on_step(step)

    def _result(self, ctx: RunContext, status: RunStatus, error: str | None) -> RunResult:
        if self.store:
            stored_error = None if status == "input_required" else error
            self.store.finish_run(
                ctx.transcript.run_id,
                status,
                ctx.answer,
                stored_error,
                cost=ctx.meter.cost,
                question=ctx.question,
            )
        ctx.meter.usage.seconds = sum(s.seconds for s in ctx.transcript.steps if s.kind == "model")
        return RunResult(
            run_id=ctx.transcript.run_id,
            task=ctx.transcript.task,
            status=status,
            answer=ctx.answer,
            error=error,
            steps=ctx.transcript.steps,
            usage=ctx.meter.usage,
            cost=ctx.meter.cost,
            messages=ctx.transcript.messages,
            question=ctx.question,
            pending=_waiting_question(ctx.transcript.steps, ctx.question) if ctx.question else None,
            planner=ctx.planner,
        )

    def _run_config(self) -> dict[str, Any]:
        """What is stored with each run: the `LoopConfig` when it names the loop's model
        and tools (so the CLI can rebuild it), else a description of the loop."""
        if self._described:
            return self.config.model_dump()
        return {
            "tools": list(self.tools),
            "max_steps": self.budget.max_steps,
            "planner": self.planner.name,
        }


def _answer_step(ctx: RunContext, asked: Question, answer: str, message: Message) -> Step:
    """The user's answer to the loop's question, as the run's next step."""
    return Step(
        run_id=ctx.transcript.run_id,
        index=len(ctx.transcript.steps),
        kind="ask",
        name="user",
        input={"question": asked.text},
        output=answer,
        message=message,
        started_at=time.time(),
        question=asked,
    )


def _waiting_question(steps: list[Step], text: str) -> Question:
    """The question a stopped run waits on (`text`, as stored with the run): the record of
    the unanswered "ask" step that asked it, or the text alone (a planner's own question,
    or a run recorded before questions were data)."""
    for step in reversed(steps):
        if step.kind == "ask" and step.error == "unanswered" and step.question is not None:
            if step.question.text == text:
                return step.question
    return Question(text=text)


def _with_system(system: str | None, history: list[Message]) -> list[Message]:
    """`history` led by one system message: the loop's `system`, then the history's own
    (merged, as some chat templates refuse two), unless the history already starts with
    the loop's (an earlier run's messages)."""
    if not system:
        return history
    first = history[0] if history else None
    if first is not None and first.role == "system":
        if first.content == system or first.content.startswith(system + "\n\n"):
            return history
        merged = Message(role="system", content=f"{system}\n\n{first.content}")
        return [merged, *history[1:]]
    return [Message(role="system", content=system), *history]


def _planner(planner: PlannerName | Planner, policies: Policies) -> Planner:
    if not isinstance(planner, str):
        return planner
    if planner not in get_args(PlannerName):
        raise UserError(
            f"Unknown planner {planner!r}; use react, graph, search, auto or code "
            "(or pass a planner object)."
        )
    return policies.planner(planner)


def _with_clarify(checks: list[CallCheck], clarify: Clarify | None) -> list[CallCheck]:
    """`checks` with `clarify` in the place of their own clarifying check (or last)."""
    if clarify is None:
        return checks
    at = next((i for i, c in enumerate(checks) if isinstance(c, Clarify)), len(checks))
    return [*checks[:at], clarify, *checks[at + 1 :]]
