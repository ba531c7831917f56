"""Debate with a judge: several agents answer, see each other's answers, answer again.

Round 1: every agent answers the task on its own (concurrently). Each later round shows
each agent the others' latest answers and asks for its answer again; an agent keeps its
own thread of the debate (its earlier prompts and answers), so it sees what it said.
After any round, when every answer is the same once normalized (`same`), the debate stops
and that answer is the team's: agreement needs no judge. Otherwise, after `rounds`
rounds, the judge decides: an `Agent` that writes the final answer from all of them
(combining them if it likes), or with `pick=True` names the agent whose answer is right
(structured output, an enum of the names). Without a judge, the most common answer wins
(ties: the earliest agent's).

Every prompt and answer is a "message" step: "debate→alice" with `input["round"]`, and
"debate→judge" for the verdict. An agent that fails, or gives an empty answer (it
abstains), keeps its previous answer (none in round 1: it is left out), so abstentions
never make an agreement; when nobody has answered after round 1, the debate fails.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from bigloop._errors import RunFailure, UserError
from bigloop.atoms.models.base import Message, ModelSettings
from bigloop.team.agent import Agent, with_system
from bigloop.team.pattern import TeamPattern, ask_agent
from bigloop.team.prompts import DEBATE_ROUND, JUDGE, JUDGE_PICK
from bigloop.team.record import Reply, TeamRun
from bigloop.trace.records import RunResult
from bigloop.trace.store import TraceStore

Normalize = Callable[[str], str]
AnswerOf = Callable[[RunResult], str]


def normalize(text: str) -> str:
    """An answer for comparison: case-folded, punctuation (but decimal points) and
    thousands separators removed, whitespace collapsed."""
    text = text.casefold()
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    text = re.sub(r"(?<!\d)\.|\.(?!\d)", " ", text)
    text = re.sub(r"[^\w\s.%-]", " ", text)
    return " ".join(text.split())


def answer_text(result: RunResult) -> str:
    """A run's answer (the default way a debater's answer is read)."""
    return result.answer or ""


class Debate(TeamPattern):
    """Agents that debate, and a judge (see the module docstring).

    Args:
        agents: the debaters (two or more; distinct names).
        judge: decides when the debaters do not agree; None: majority.
        rounds: answering rounds in all (1: answer once, then judge).
        pick: the judge names a debater instead of writing an answer.
        same: how answers are normalized to detect agreement.
        answer: how a debater's answer is read from its run (default: its answer); e.g.
            the calls it made, for a benchmark that scores calls ("" for none: an
            abstention).
        name: the moderator's name in the trace.
        store: where the run, and the agents' runs, are traced.
    """

    pattern = "debate"

    def __init__(
        self,
        agents: Sequence[Agent],
        *,
        judge: Agent | None = None,
        rounds: int = 2,
        pick: bool = False,
        same: Normalize = normalize,
        answer: AnswerOf = answer_text,
        name: str = "debate",
        store: TraceStore | None = None,
    ) -> None:
        names = [a.name for a in agents]
        if len(agents) < 2:
            raise UserError("A Debate needs at least two agents.")
        if len(set(names)) != len(names) or (judge is not None and judge.name in names):
            raise UserError(f"Debaters and judge need distinct names; got {names}.")
        if rounds < 1:
            raise UserError(f"rounds={rounds}: a debate has at least one round.")
        if pick and judge is None:
            raise UserError("pick=True needs a judge.")
        self.agents = list(agents)
        self.judge = judge
        self.rounds = rounds
        self.pick = pick
        self.same = same
        self.answer_of = answer
        self.name = name
        self.store = store

    @property
    def model_name(self) -> str:
        return self.agents[0].model.name

    @property
    def config(self) -> dict[str, Any]:
        return {
            "agents": [a.name for a in self.agents],
            "judge": self.judge.name if self.judge else None,
            "rounds": self.rounds,
        }

    async def _work(self, run: TeamRun) -> str:
        answers: dict[str, str | None] = {a.name: None for a in self.agents}
        threads: dict[str, list[Message]] = {a.name: [] for a in self.agents}
        for round_ in range(1, self.rounds + 1):
            prompts = {a.name: self._prompt(run.task, a.name, answers, round_) for a in self.agents}
            steps = await asyncio.gather(
                *(
                    run.exchange(
                        self.name,
                        a.name,
                        prompts[a.name],
                        self._sender(a, prompts[a.name], threads[a.name], run),
                        round=round_,
                    )
                    for a in self.agents
                )
            )
            for agent, step in zip(self.agents, steps, strict=True):
                if step.error is None:
                    if str(step.output or "").strip():
                        answers[agent.name] = str(step.output)
                    threads[agent.name] += [
                        Message(role="user", content=prompts[agent.name]),
                        Message(role="assistant", content=str(step.output or "")),
                    ]
            given = [a for a in answers.values() if a is not None]
            if not given:
                raise RunFailure("No debater answered; see the agents' runs in the trace.")
            if len({self.same(a) for a in given}) == 1:
                return given[0]
        return await self._verdict(run, answers)

    def _prompt(self, task: str, name: str, answers: dict[str, str | None], round_: int) -> str:
        if round_ == 1:
            return task
        others = "\n".join(f"- {n}: {a}" for n, a in answers.items() if n != name and a)
        return DEBATE_ROUND.format(task=task, others=others or "(no answers)")

    def _sender(
        self, agent: Agent, prompt: str, thread: list[Message], run: TeamRun
    ) -> Callable[[], Any]:
        return lambda: ask_agent(agent, prompt, run, history=thread, answer=self.answer_of)

    async def _verdict(self, run: TeamRun, answers: dict[str, str | None]) -> str:
        given = {n: a for n, a in answers.items() if a is not None}
        if self.judge is None:
            counts = Counter(self.same(a) for a in given.values())
            best = max(counts.values())
            return next(a for a in given.values() if counts[self.same(a)] == best)
        judge = self.judge
        listed = "\n".join(f"- {n}: {a}" for n, a in given.items())
        template = JUDGE_PICK if self.pick else JUDGE
        prompt = template.format(task=run.task, n=len(given), answers=listed)

        async def send() -> Reply:
            if self.pick:
                return await _pick(judge, prompt, list(given))
            result = await judge.run(prompt, history=[], store=run.store)
            if result.status != "ok":
                raise RunFailure(f"The judge ended {result.status}: {result.error}")
            return Reply(text=result.answer or "", usage=result.usage, run=result.run_id)

        step = await run.exchange(self.name, judge.name, prompt, send, round="verdict")
        verdict = str(step.output or "")
        return given.get(verdict, verdict) if self.pick else verdict


async def _pick(judge: Agent, prompt: str, names: list[str]) -> Reply:
    """The judge's choice among `names`, as structured output."""
    schema = {"type": "object", "properties": {"pick": {"enum": names}}, "required": ["pick"]}
    settings = replace(judge.settings or ModelSettings(), response_schema=schema)
    messages = with_system(judge.system_prompt(prompt), [Message(role="user", content=prompt)])
    response = await judge.model.chat(messages, [], settings)
    try:
        picked = json.loads(response.text)["pick"]
    except (ValueError, KeyError, TypeError):
        picked = None
    if picked not in names:
        raise RunFailure(f"The judge did not pick one of {names}: {response.text[:200]!r}")
    return Reply(text=str(picked), usage=response.usage)
