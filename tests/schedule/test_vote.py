"""Self-consistency as a model (`VoteModel`, `LoopConfig.vote`): plumbing with scripted
models, no quality claim."""

from __future__ import annotations

import asyncio
import json

import pytest

from bigloop import FunctionModel, Message, ToolSpec, UserError
from bigloop.atoms.models.base import ModelResponse, ModelSettings, Usage
from bigloop.config import LoopConfig
from bigloop.optimize.evaluate import fingerprint
from bigloop.routing.vote import VoteModel, most_common

ASK = [Message(role="user", content="What is 2 + 3?")]


def _call(expression: str) -> str:
    return json.dumps(
        {"tool_calls": [{"name": "calculator", "arguments": {"expression": expression}}]}
    )


def _scripted(replies: list[str]) -> tuple[FunctionModel, list[ModelSettings]]:
    seen: list[ModelSettings] = []

    def reply(messages: list[Message], tools: list[ToolSpec], settings: ModelSettings) -> str:
        seen.append(settings)
        return replies[len(seen) - 1]

    return FunctionModel(reply), seen


def test_the_most_common_reply_wins_and_the_greedy_one_is_asked_first() -> None:
    model, seen = _scripted([_call("2 + 2"), _call("2 + 3"), _call("2 + 3")])
    reply = asyncio.run(VoteModel(model, 3).chat(ASK, []))
    assert reply.tool_calls[0].arguments == {"expression": "2 + 3"}
    assert [s.temperature for s in seen] == [0.0, 0.7, 0.7]
    assert len({s.seed for s in seen}) == 3  # each sample its own seed


def test_a_tie_keeps_the_greedy_reply() -> None:
    model, _ = _scripted([_call("2 + 3"), _call("2 + 2"), '{"answer": "5"}'])
    reply = asyncio.run(VoteModel(model, 3).chat(ASK, []))
    assert reply.tool_calls[0].arguments == {"expression": "2 + 3"}


def test_one_vote_and_structured_turns_pass_through_unchanged() -> None:
    model, seen = _scripted([_call("2 + 3")])
    assert asyncio.run(VoteModel(model, 1).chat(ASK, [])).tool_calls
    assert len(seen) == 1
    model, seen = _scripted(['{"plan": []}'])
    plan = ModelSettings(response_schema={"type": "object"})
    assert asyncio.run(VoteModel(model, 3).chat(ASK, [], plan)).text == '{"plan": []}'
    assert len(seen) == 1


def test_usage_counts_every_reply() -> None:
    replies = [
        ModelResponse(text="5", usage=Usage(prompt_tokens=10, completion_tokens=2)),
        ModelResponse(text="five", usage=Usage(prompt_tokens=10, completion_tokens=3)),
    ]
    voted = most_common(replies)
    assert voted.text == "5"  # both answers: one group, the first kept
    assert (voted.usage.prompt_tokens, voted.usage.completion_tokens) == (20, 5)
    assert replies[0].usage.prompt_tokens == 10  # not changed in place


def test_the_config_builds_it_and_keeps_old_fingerprints() -> None:
    assert "vote" not in LoopConfig().model_dump_json(exclude_defaults=True)
    # as before the field (with the defaults of then: clarify="ungrounded")
    assert fingerprint(LoopConfig(vote=1, clarify="ungrounded")) == "984df881e6017948"
    assert fingerprint(LoopConfig()) != fingerprint(LoopConfig(vote=3))
    model, _ = _scripted([_call("2 + 3")])
    assert LoopConfig().voting(model) is model
    assert isinstance(LoopConfig(vote=3).voting(model), VoteModel)
    with pytest.raises(ValueError):
        LoopConfig(vote=0)
    with pytest.raises(UserError):
        VoteModel(model, 0)


def test_a_loop_with_votes_runs_to_the_answer() -> None:
    from bigloop import Loop
    from bigloop.atoms import builtin

    turns = iter([_call("2 + 3"), _call("2 + 3"), _call("2 + 2"), "5", "5", "5"])
    model = FunctionModel(lambda messages, tools: next(turns))
    loop = Loop(model=VoteModel(model, 3), tools=[builtin.calculator])
    result = asyncio.run(loop.run("What is 2 + 3?"))
    assert result.answer == "5"
    assert [s.name for s in result.tool_steps] == ["calculator"]
