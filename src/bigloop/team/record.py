"""A team run's trace: every message between agents is a step, committed as it completes.

A team run is a run in the `TraceStore` like a loop's: its steps are "message" steps (one
exchange: `name` "sender→receiver", `input["text"]` what was sent, `output` the reply),
the coordinator's own model turns ("model" steps with a `role`), and the conversions of
semantic adapters ("adapt" steps). Each agent's own run goes to the same store as a run of
its own, named in the message's `input["run"]`.

The trace is also the checkpoint. A pattern asks for an exchange or a model turn through
`TeamRun`; on a resumed run, one already recorded (same kind, name and input) is returned
from the trace instead of being made again, so a deterministic pattern replays its
completed work and goes on from the first exchange that never finished.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bigloop._errors import BudgetExceeded, InputRequired, RunFailure, UserError
from bigloop.atoms.models.base import ChatModel, Message, ModelSettings, ToolSpec, Usage
from bigloop.trace.records import RunResult, RunStatus, Step, StepKind, failure_text, valid_text
from bigloop.trace.store import TraceStore

_IGNORED = ("run",)
"""Input fields that differ between a run and its resume (an agent's run id)."""


@dataclass(kw_only=True)
class Reply:
    """What the receiver of a message answered."""

    text: str
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    run: str | None = None
    """The receiver's own run id, when it ran a loop."""


class TeamRun:
    """One run of a team pattern: its steps, its store, and the replay of a resume."""

    def __init__(
        self,
        *,
        run_id: str,
        task: str,
        pattern: str,
        store: TraceStore | None,
        steps: list[Step] | None = None,
    ) -> None:
        self.run_id = run_id
        self.task = task
        self.pattern = pattern
        self.store = store
        self.steps: list[Step] = list(steps or [])
        """Every step of the run: on resume, the stored ones first."""
        self.messages: list[Message] = []
        """The conversation, for patterns that pass one on (hand-off)."""
        self._stored = len(self.steps)
        self._replayed: set[int] = set()
        self._started = time.perf_counter()

    @classmethod
    def start(
        cls,
        task: str,
        *,
        pattern: str,
        model: str,
        config: dict[str, Any],
        store: TraceStore | None,
    ) -> TeamRun:
        run = cls(run_id=uuid.uuid4().hex[:12], task=task, pattern=pattern, store=store)
        if store is not None:
            store.start_run(run.run_id, task, model, {"team": pattern, **config})
        return run

    @classmethod
    def reopen(cls, run_id: str, *, pattern: str, store: TraceStore | None) -> TeamRun | RunResult:
        """The run to continue, or its result when it has already ended with an answer.

        Raises:
            UserError: no store, no such run, a run of another pattern, or a run another
                process is resuming.
        """
        if store is None:
            raise UserError("Resuming a team run needs its TraceStore: pass store=TraceStore().")
        summary = store.run(run_id)
        if summary.config.get("team") != pattern:
            what = summary.config.get("team") or "a loop"
            raise UserError(f"Run {summary.run_id} is a run of {what}, not of a {pattern}.")
        if summary.status == "ok" or not store.claim(summary.run_id):
            result = store.result(summary.run_id)
            result.planner = pattern
            return result
        steps = store.steps(summary.run_id)
        return cls(
            run_id=summary.run_id, task=summary.task, pattern=pattern, store=store, steps=steps
        )

    # ------------------------------------------------------------------ steps

    def add(self, step: Step) -> Step:
        """Record `step` as the run's next step (numbered here) and commit it."""
        step.run_id = self.run_id
        step.index = len(self.steps)
        self.steps.append(step)
        if self.store is not None:
            self.store.add_step(step)
        return step

    def _record(self, kind: StepKind, name: str, inputs: dict[str, Any], **fields: Any) -> Step:
        """Record a new step of `kind` named `name`, with `inputs` as its input."""
        return self.add(
            Step(
                run_id=self.run_id,
                index=len(self.steps),
                kind=kind,
                name=name,
                input=inputs,
                **fields,
            )
        )

    def _replay(self, kind: str, name: str, key: dict[str, Any]) -> Step | None:
        """The first stored step of a resumed run with this kind, name and input that no
        earlier request has replayed."""
        for i, step in enumerate(self.steps[: self._stored]):
            if i in self._replayed or step.kind != kind or step.name != name:
                continue
            stored = step.input if isinstance(step.input, dict) else {}
            if {k: v for k, v in stored.items() if k not in _IGNORED} == key:
                self._replayed.add(i)
                return step
        return None

    def stored(self, kind: str) -> list[Step]:
        """The steps of `kind` a resumed run had recorded (none on a new run)."""
        return [s for s in self.steps[: self._stored] if s.kind == kind]

    async def exchange(
        self,
        sender: str,
        receiver: str,
        text: str,
        send: Callable[[], Awaitable[Reply]],
        **extras: Any,
    ) -> Step:
        """`sender` sends `text` to `receiver`; `send()` delivers it and returns the reply.

        The exchange is one "message" step (`input` = {"text": text, **extras, "run": the
        receiver's run}, `output` = the reply's text, `error` = the reply's error). On a
        resumed run an exchange already recorded is not made again.
        """
        name = f"{sender}→{receiver}"
        key = {"text": text, **extras}
        if (done := self._replay("message", name, key)) is not None:
            return done
        started, clock = time.time(), time.perf_counter()
        reply = await send()
        info = dict(key)
        if reply.run is not None:
            info["run"] = reply.run
        return self._record(
            "message",
            name,
            info,
            output=valid_text(reply.text),
            error=reply.error,
            seconds=time.perf_counter() - clock,
            prompt_tokens=reply.usage.prompt_tokens,
            completion_tokens=reply.usage.completion_tokens,
            started_at=started,
        )

    def note(self, sender: str, receiver: str, text: str, **extras: Any) -> Step:
        """A one-way message (`output` None), such as a hand-off; replayed on resume."""
        name = f"{sender}→{receiver}"
        info = {"text": text, **extras}
        key = {k: v for k, v in info.items() if k not in _IGNORED}
        if (done := self._replay("message", name, key)) is not None:
            return done
        return self._record("message", name, info, started_at=time.time())

    async def model_turn(
        self,
        model: ChatModel,
        messages: list[Message],
        settings: ModelSettings,
        *,
        role: str,
        turn: int = 0,
        tools: list[ToolSpec] | None = None,
    ) -> str:
        """One structured or plain model turn of the team itself (a coordinator's plan,
        a merge): recorded as a "model" step with `role`, replayed on resume. With
        `tools`, a reply that calls them is the JSON `{"tool_calls": [{"name",
        "arguments"}, ...]}`."""
        key = {"role": role, "turn": turn}
        if (done := self._replay("model", model.name, key)) is not None:
            return str(done.output or "")
        started = time.time()
        response = await model.chat(messages, tools or [], settings)
        text = valid_text(response.text)
        if response.tool_calls:
            calls = [{"name": c.name, "arguments": c.arguments} for c in response.tool_calls]
            text = json.dumps({"tool_calls": calls}, ensure_ascii=False)
        self._record(
            "model",
            model.name,
            key,
            output=text,
            seconds=response.usage.seconds,
            prompt_tokens=response.usage.prompt_tokens,
            completion_tokens=response.usage.completion_tokens,
            started_at=started,
        )
        return text

    def on_step(self, step: Step) -> None:
        """Record a step made elsewhere (an adapter's "adapt" step)."""
        self.add(step)

    # ------------------------------------------------------------------ the end

    async def drive(self, work: Awaitable[str | None]) -> RunResult:
        """Run the pattern's `work` to its answer; the run always ends with a status.

        The result's usage counts the tokens of every step (the agents' runs included,
        through their messages) and the run's wall time in seconds."""
        status: RunStatus = "failed"
        answer = error = question = None
        try:
            answer = await work
            status = "ok"
        except InputRequired as e:
            status, error, question = "input_required", e.question, e.question
        except BudgetExceeded as e:
            status, error = "budget_exceeded", str(e)
        except RunFailure as e:
            error = str(e)
        except (asyncio.CancelledError, KeyboardInterrupt, SystemExit):
            if self.store is not None:
                self.store.finish_run(self.run_id, "interrupted", None, "interrupted")
            raise
        except Exception as e:  # noqa: BLE001 - the top level: every run ends with a status
            error = failure_text(e, "team run")
        if self.store is not None:
            self.store.finish_run(self.run_id, status, answer, error)
        usage = Usage(seconds=time.perf_counter() - self._started)
        for step in self.steps:
            usage.prompt_tokens += step.prompt_tokens
            usage.completion_tokens += step.completion_tokens
        return RunResult(
            run_id=self.run_id,
            task=self.task,
            status=status,
            answer=answer,
            error=error,
            steps=self.steps,
            usage=usage,
            messages=self.messages,
            question=question,
            planner=self.pattern,
        )
