"""Verifiers as atoms (issue 25): a check or a model as judge scores a reply; the cascade
escalates on a low score. Scripted models: plumbing only (the verifiers' precision and
recall on real replies are measured by bench/verifiers.py)."""

from __future__ import annotations

import asyncio
import json

import pytest

from bigloop import FunctionModel, Message, ModelResponse, ToolCall, ToolSpec, UserError
from bigloop.atoms.verifiers import (
    CheckVerifier,
    ConfidenceVerifier,
    JudgeVerifier,
    Verifier,
    judge_request,
)
from bigloop.routing.cascade import CascadeModel, calls_are_valid

WEATHER = ToolSpec(
    name="weather",
    description="The weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
ASKED = [Message(role="user", content="What is the weather in Oslo?")]
RIGHT = ModelResponse(tool_calls=[ToolCall(id="1", name="weather", arguments={"city": "Oslo"})])
WRONG = ModelResponse(tool_calls=[ToolCall(id="1", name="weather", arguments={"town": "Oslo"})])


def judge(score: object, seen: list[list[Message]] | None = None) -> FunctionModel:
    def reply(messages: list[Message], tools: list[ToolSpec]) -> str:
        if seen is not None:
            seen.append(messages)
        return json.dumps({"reason": "checked", "score": score})

    return FunctionModel(reply, name="judge")


def test_a_check_is_a_verifier() -> None:
    verifier = CheckVerifier(calls_are_valid)
    assert isinstance(verifier, Verifier) and verifier.name == "calls_are_valid"
    right = asyncio.run(verifier.judge(ASKED, [WEATHER], RIGHT))
    wrong = asyncio.run(verifier.judge(ASKED, [WEATHER], WRONG))
    assert (right.score, wrong.score) == (1.0, 0.0)


def test_a_model_judges_what_it_is_shown_and_its_score_is_read() -> None:
    seen: list[list[Message]] = []
    verdict = asyncio.run(JudgeVerifier(judge(7, seen)).judge(ASKED, [WEATHER], RIGHT))
    assert (verdict.score, verdict.reason, verdict.verifier) == (0.7, "checked", "judge(judge)")
    request = seen[0][-1].content
    assert "What is the weather in Oslo?" in request and 'weather(city="Oslo")' in request
    assert "weather: The weather in a city." in request
    answer = judge_request(ASKED, [WEATHER], ModelResponse(text="It is sunny."))
    assert "It answers without calling a function: It is sunny." in answer


@pytest.mark.parametrize("said", [11, "seven", None])
def test_a_judgement_that_cannot_be_read_is_no_score(said: object) -> None:
    verdict = asyncio.run(JudgeVerifier(judge(said)).judge(ASKED, [WEATHER], RIGHT))
    assert verdict.score is None


def test_the_cascade_escalates_when_the_verifier_scores_the_cheap_reply_low() -> None:
    cheap_call = json.dumps({"tool_calls": [{"name": "weather", "arguments": {"city": "Oslo"}}]})
    strong_call = json.dumps({"tool_calls": [{"name": "weather", "arguments": {"city": "Bergen"}}]})
    cheap = FunctionModel(lambda m, t: cheap_call, name="cheap")
    strong = FunctionModel(lambda m, t: strong_call, name="strong")
    for score, expected in [(8, "cheap"), (3, "strong"), ("??", "strong")]:
        cascade = CascadeModel(cheap, strong, verifier=JudgeVerifier(judge(score)), threshold=0.5)
        reply = asyncio.run(cascade.chat(ASKED, [WEATHER]))
        assert reply.answered_by == expected, score
    with pytest.raises(UserError, match="threshold"):
        CascadeModel(cheap, strong, threshold=2)


def test_the_confidence_verifier_reads_the_replys_own_confidence() -> None:
    sure = ModelResponse(tool_calls=RIGHT.tool_calls, confidence=0.93)
    verdict = asyncio.run(ConfidenceVerifier().judge(ASKED, [WEATHER], sure))
    assert (verdict.score, verdict.verifier) == (0.93, "confidence")
    assert asyncio.run(ConfidenceVerifier().judge(ASKED, [WEATHER], RIGHT)).score is None
    cheap_call = json.dumps({"tool_calls": [{"name": "weather", "arguments": {"city": "Oslo"}}]})
    cheap = FunctionModel(lambda m, t: cheap_call, name="cheap")
    strong = FunctionModel(lambda m, t: cheap_call, name="strong")
    cascade = CascadeModel(cheap, strong, verifier=ConfidenceVerifier(), threshold=0.5)
    reply = asyncio.run(cascade.chat(ASKED, [WEATHER]))
    assert reply.answered_by == "strong"  # a model that reports no confidence escalates


def test_confidence_counts_a_calls_every_token_and_an_answers_choice_only() -> None:
    """`least_decided`: an answer's wording and JSON's layout do not lower the confidence;
    the choice to answer and every name or value of a call do."""
    from bigloop.atoms.models.fast_grammar import least_decided

    pieces = {1: b"{", 2: b"answer", 3: b'":', 4: b' "', 5: b"Oslo", 6: b"tool_calls", 7: b"x"}

    def detokenize(tokens: list[int]) -> bytes:
        return b"".join(pieces[t] for t in tokens)

    answer = [(1, 0.5), (4, 0.4), (2, 0.9), (3, 0.3), (4, 0.4), (5, 0.2), (7, 0.1)]
    assert least_decided(answer, detokenize) == 0.9
    call = [(1, 0.5), (4, 0.4), (6, 0.9), (3, 1.0), (4, 1.0), (5, 0.2), (7, 0.1)]
    assert least_decided(call, detokenize) == 0.1
    assert least_decided([], detokenize) == 1.0
