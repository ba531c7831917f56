from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from bigloop import (
    AtomCard,
    FunctionModel,
    Loop,
    Message,
    ModelUnavailable,
    ScriptedModel,
    ToolSpec,
    TraceStore,
    UserError,
    tool,
)
from bigloop.routing.cascade import CascadeModel, FallbackModel, HedgedModel, RoutedModel
from bigloop.routing.route import Constraints

LOCAL = AtomCard(name="local", kind="model", privacy="local", cost=0.0, latency_s=3.0,
                 reliability=0.7)  # fmt: skip
CLOUD = AtomCard(name="cloud", kind="model", privacy="api.example.com", cost=0.01,
                 latency_s=0.8, reliability=0.95)  # fmt: skip


def answer(text: str) -> str:
    return json.dumps({"answer": text})


def user(text: str) -> list[Message]:
    return [Message(role="user", content=text)]


def test_fallback_moves_on_when_a_model_fails() -> None:
    broken = ScriptedModel([], name="broken")
    chain = FallbackModel([broken, ScriptedModel([answer("hi")], name="ok")])
    result = Loop(chain, []).run_sync("Say hi.")
    assert result.answer == "hi"
    assert result.steps[0].input["answered_by"] == "ok"


def test_a_shared_fallback_model_names_the_answerer_of_each_concurrent_call() -> None:
    inside_primary = asyncio.Event()
    backup_answered = asyncio.Event()
    finished: list[str] = []

    async def primary(messages: list[Message], tools: list[ToolSpec]) -> str:
        if messages[-1].content != "wait":
            raise ModelUnavailable("primary: busy")
        inside_primary.set()
        await backup_answered.wait()
        finished.append("primary")
        return answer("from primary")

    async def backup(messages: list[Message], tools: list[ToolSpec]) -> str:
        await inside_primary.wait()
        finished.append("backup")
        backup_answered.set()
        return answer("from backup")

    chain = FallbackModel(
        [FunctionModel(primary, name="primary"), FunctionModel(backup, name="backup")]
    )

    async def both() -> list[tuple[str, str | None]]:
        replies = await asyncio.gather(chain.chat(user("wait"), []), chain.chat(user("go"), []))
        return [(r.text, r.answered_by) for r in replies]

    assert asyncio.run(both()) == [("from primary", "primary"), ("from backup", "backup")]
    assert finished == ["backup", "primary"]  # the primary's call ended last


def test_hedged_call_takes_the_faster_valid_reply() -> None:
    async def stuck(messages: list[Message], tools: list[ToolSpec]) -> str:
        await asyncio.Event().wait()  # never answers: only the backup can
        return answer("stuck")

    def hedged() -> HedgedModel:
        return HedgedModel(
            FunctionModel(stuck, name="primary"),
            ScriptedModel([answer("fast")], name="backup"),
            hedge_after_s=0.05,
        )

    response = asyncio.run(hedged().chat(user("Quick?"), []))
    assert response.text == "fast" and response.answered_by == "backup"
    result = Loop(hedged(), []).run_sync("Quick?")
    assert result.answer == "fast" and result.steps[0].input["answered_by"] == "backup"


def test_cascade_escalates_only_invalid_replies() -> None:
    @tool
    def area(width: float, height: float) -> float:
        """Area of a rectangle."""
        return width * height

    cheap = ScriptedModel(
        [
            json.dumps({"tool_calls": [{"name": "area", "arguments": {"width": 2}}]}),
            answer("6"),
        ],
        name="cheap",
    )
    strong = ScriptedModel(
        [json.dumps({"tool_calls": [{"name": "area", "arguments": {"width": 2, "height": 3}}]})],
        name="strong",
    )
    cascade = CascadeModel(cheap, strong)
    result = Loop(cascade, [area]).run_sync("Area of 2 by 3?")
    assert result.answer == "6"
    assert (cascade.calls, cascade.escalated) == (2, 1)
    assert [s.input.get("answered_by") for s in result.steps if s.kind == "model"] == [
        "strong",
        "cheap",
    ]


def test_nested_wrappers_name_the_model_that_wrote_the_reply() -> None:
    cascade = CascadeModel(
        ScriptedModel([], name="cheap"), ScriptedModel([answer("x")], name="strong")
    )
    chain = FallbackModel([cascade])
    response = asyncio.run(chain.chat(user("x?"), []))
    assert response.answered_by == "strong"


def test_routed_model_writes_its_decision_into_the_trace(tmp_path: Path) -> None:
    local = ScriptedModel([answer("done locally")], name="local")
    cloud = ScriptedModel([answer("done remotely")], name="cloud")
    routed = RoutedModel(
        [local, cloud], constraints=Constraints(private=True), cards=[LOCAL, CLOUD]
    )
    store = TraceStore(tmp_path / "t.db")
    result = Loop(routed, [], store=store).run_sync("Summarise my medical record.")
    assert result.answer == "done locally"
    step = store.steps(result.run_id)[0]
    assert step.input["answered_by"] == "local"
    assert step.input["route"]["order"] == ["local"]
    assert step.input["route"]["rejected"]["cloud"].startswith("private data")
    assert step.input["route"]["pareto"] == ["local"]  # the front among feasible atoms


def test_routed_model_reply_carries_its_decision() -> None:
    local = ScriptedModel([answer("done locally")], name="local")
    cloud = ScriptedModel([answer("done remotely")], name="cloud")
    routed = RoutedModel([local, cloud], cards=[LOCAL, CLOUD])
    response = asyncio.run(routed.chat(user("Summarise."), []))
    assert response.route is not None
    assert response.answered_by == response.route["order"][0]
    assert response.route["rejected"] == {}


def test_fallback_chain_reports_every_failure() -> None:
    chain = FallbackModel([ScriptedModel([], name="a"), ScriptedModel([], name="b")])
    with pytest.raises(ModelUnavailable, match=r"a: .*; b: "):
        asyncio.run(chain.chat([Message(role="user", content="x")], []))


def test_grounded_reply_escalates_invented_values_and_answers_from_memory() -> None:
    from bigloop.atoms.models.base import ModelResponse, ToolCall
    from bigloop.atoms.models.prompts import USER_ANSWERED
    from bigloop.routing.cascade import grounded_reply

    spec = ToolSpec(
        name="weather",
        description="Weather of a city.",
        parameters={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    )

    def call(city: object) -> ModelResponse:
        return ModelResponse(
            tool_calls=[ToolCall(id="1", name="weather", arguments={"city": city})]
        )

    asked = user("Is it raining in Oslo?")
    assert grounded_reply(call("Oslo"), [spec], asked)
    assert not grounded_reply(call("Rome"), [spec], asked)  # nobody said Rome
    assert not grounded_reply(call(3), [spec], asked)  # not valid for the schema
    assert not grounded_reply(ModelResponse(text="Yes."), [spec], asked)  # from memory
    assert grounded_reply(ModelResponse(text="Yes."), [], asked)  # no tools: fine
    after = [*asked, Message(role="tool", content="Rain, 4 °C; next: Bergen", tool_call_id="1")]
    assert grounded_reply(ModelResponse(text="Yes, 4 °C."), [spec], after)
    assert grounded_reply(call("Bergen"), [spec], after)  # a tool said it
    refused = [
        *asked,
        Message(
            role="tool",
            content="Error: city='Rome' appears nowhere",
            tool_call_id="1",
            origin="loop",
        ),
        Message(role="user", content="Use Paris then.", origin="loop"),
    ]
    assert not grounded_reply(call("Rome"), [spec], refused)  # quoted by an error
    assert not grounded_reply(call("Paris"), [spec], refused)  # the loop's note
    again = [
        *asked,
        Message(
            role="tool",
            content="You already made this call ('Rome')",
            tool_call_id="2",
            origin="loop",
        ),
    ]
    assert not grounded_reply(call("Rome"), [spec], again)
    answered = [
        *asked,
        Message(
            role="user",
            content=USER_ANSWERED.format(question="Which city?", answer="Lima"),
            answers="Which city?",
        ),
    ]
    assert grounded_reply(call("Lima"), [spec], answered)  # the user's answer on resume
    cities = ToolSpec(
        name="weather",
        description="Weather of cities.",
        parameters={
            "type": "object",
            "properties": {"cities": {"type": "array", "items": {"type": "string"}}},
        },
    )
    several = ModelResponse(
        tool_calls=[ToolCall(id="1", name="weather", arguments={"cities": ["Oslo", "Rome"]})]
    )
    assert not grounded_reply(several, [cities], asked)  # Rome, inside a list


class Continues:
    """A model that continues a reply with a call to `weather` for `city`."""

    def __init__(self, name: str, city: str) -> None:
        self.name, self.city, self.asked = name, city, 0
        self.card = AtomCard(name=name, kind="model")

    async def chat(self, messages: Any, tools: Any, settings: Any = None) -> Any:
        raise AssertionError("only next_call is used here")

    async def next_call(
        self, messages: Any, tools: Any, calls: Any, settings: Any = None, stop: Any = None
    ) -> Any:
        from bigloop.atoms.models.base import ModelResponse, ToolCall

        self.asked += 1
        call = ToolCall(id="2", name="weather", arguments={"city": self.city})
        return ModelResponse(tool_calls=[call])


def test_a_cascade_continues_a_reply_with_the_cheap_model_unless_its_call_fails() -> None:
    from bigloop.atoms.models.base import CallContinuation
    from bigloop.routing.cascade import grounded_reply

    spec = ToolSpec(
        name="weather",
        description="Weather of a city.",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}},
    )
    asked = user("Weather in Oslo and Lima?")
    good = CascadeModel(
        Continues("cheap", "Lima"), Continues("strong", "Lima"), check=grounded_reply
    )
    assert isinstance(good, CallContinuation)  # so the loop's more_calls stays on
    reply = asyncio.run(good.next_call(asked, [spec], []))
    assert reply.answered_by == "cheap" and good.escalated == 0
    bad = CascadeModel(
        Continues("cheap", "Rome"), Continues("strong", "Lima"), check=grounded_reply
    )
    reply = asyncio.run(bad.next_call(asked, [spec], []))
    assert reply.answered_by == "strong" and reply.tool_calls[0].arguments == {"city": "Lima"}
    plain = CascadeModel(ScriptedModel([], name="cheap"), Continues("strong", "Lima"))
    assert asyncio.run(plain.next_call(asked, [spec], [])).answered_by == "strong"


def test_a_config_with_escalate_builds_a_cheap_strong_cascade(tmp_path: Path) -> None:
    from bigloop.config import LoopConfig

    strong = tmp_path / "strong.gguf"
    strong.write_bytes(b"")
    model = LoopConfig(escalate=str(strong)).build_model()  # nothing loads until a chat
    assert isinstance(model, CascadeModel)
    assert model.strong.name == "strong.gguf"
    assert model.cheap.name == LoopConfig().build_model().name
    absolute = LoopConfig(escalate="x/strong.gguf").with_absolute_paths().escalate
    assert absolute == str((Path.cwd() / "x/strong.gguf").resolve())
    with pytest.raises(UserError, match="--escalate 'coder-15b'"):
        LoopConfig(escalate="coder-15b").build_model()


def test_a_config_escalating_when_unsure_judges_the_cheap_models_own_confidence(
    tmp_path: Path,
) -> None:
    from bigloop.atoms.verifiers import ConfidenceVerifier
    from bigloop.config import LoopConfig
    from bigloop.routing.cascade import calls_are_valid

    strong = tmp_path / "strong.gguf"
    strong.write_bytes(b"")
    config = LoopConfig(escalate=str(strong), escalate_when="unsure", escalate_threshold=0.3)
    model = config.build_model()
    assert isinstance(model, CascadeModel)
    assert isinstance(model.verifier, ConfidenceVerifier) and model.threshold == 0.3
    assert model.check is calls_are_valid
    grounded = LoopConfig(escalate=str(strong)).build_model()
    assert isinstance(grounded, CascadeModel) and grounded.verifier is None
    with pytest.raises(UserError, match="escalate_when: Unknown escalate_when 'sure'"):
        LoopConfig.from_data({"escalate_when": "sure"}, source="x")
    with pytest.raises(UserError, match="escalate_threshold"):
        LoopConfig.from_data({"escalate_threshold": 2}, source="x")


def _area_call(width: int) -> str:
    return json.dumps({"tool_calls": [{"name": "area", "arguments": {"width": width}}]})


AREA = ToolSpec(
    name="area",
    description="Area.",
    parameters={"type": "object", "properties": {"width": {"type": "integer"}}},
)


@pytest.mark.parametrize(("sampled_width", "escalated"), [(2, 0), (3, 1)])
def test_cascade_escalates_when_sampled_replies_disagree(
    sampled_width: int, escalated: int
) -> None:
    seen: list[tuple[float, int | None]] = []

    def cheap(messages: list[Message], tools: list[ToolSpec], settings: Any) -> str:
        seen.append((settings.temperature, settings.seed))
        return _area_call(2 if settings.temperature == 0 else sampled_width)

    strong = ScriptedModel([_area_call(7)], name="strong")
    cascade = CascadeModel(FunctionModel(cheap, name="cheap"), strong, samples=2)
    response = asyncio.run(cascade.chat(user("Area of width 2?"), [AREA]))
    assert cascade.escalated == escalated
    assert response.answered_by == ("strong" if escalated else "cheap")
    # The first sample already disagrees when it differs, so no second one is drawn.
    assert seen == ([(0.0, 0), (0.7, 1), (0.7, 2)] if not escalated else [(0.0, 0), (0.7, 1)])


def test_answers_agree_whatever_their_words_and_errors_agree_with_nothing() -> None:
    from bigloop.atoms.models.base import ModelResponse, ToolCall
    from bigloop.routing.cascade import agree

    one = ModelResponse(tool_calls=[ToolCall(id="1", name="f", arguments={"a": 1, "b": [2]})])
    same = ModelResponse(tool_calls=[ToolCall(id="9", name="f", arguments={"b": [2], "a": 1})])
    other = ModelResponse(tool_calls=[ToolCall(id="1", name="f", arguments={"a": 2, "b": [2]})])
    assert agree(one, same) and not agree(one, other)
    assert agree(ModelResponse(text="6"), ModelResponse(text="six"))
    assert not agree(ModelResponse(text="6"), one)
    assert not agree(ModelResponse(error="bad"), ModelResponse(error="bad"))


def test_cascade_samples_must_not_be_negative() -> None:
    with pytest.raises(UserError, match="samples=-1"):
        CascadeModel(ScriptedModel([]), ScriptedModel([]), samples=-1)
