"""Semantic adapters: make a value fit the input an atom declares.

Two kinds of repair:

- of form (`coerce`): small models write `[1, 3]` where the schema says float, `"5"` where
  it says integer; a strict callee rejects both. The loop makes these repairs itself
  instead of spending a model turn.
- of meaning (`Adapter`): one atom's output feeds another's input — a worker's answer, a
  subtask written in words, a workflow step's text — and the target wants structured
  arguments. A value that already fits (after `coerce`) goes through without a model
  call; one that does not is extracted by a model under the target's schema (a grammar
  on the local model, `ModelSettings.response_schema`), validated, and recorded as an
  "adapt" step so the conversion shows in the trace. An extraction that still does not
  validate is an `InvalidArguments` naming the problems.

    adapter = Adapter(model)
    arguments = await adapter.fit("3 miles in km please", convert_units.schema,
                                  target="convert_units", on_step=steps.append)
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from bigloop._errors import InvalidArguments
from bigloop.atoms.models.base import ChatModel, Message, ModelResponse, ModelSettings
from bigloop.atoms.schema import grammar_safe, schema_problems
from bigloop.atoms.tool import Tool
from bigloop.trace.records import Step, valid_text

ADAPT_SYSTEM = """\
You fill in the input of a tool from a text. Reply with one JSON object that matches the \
tool's input schema. Take every value from the text, written as the schema asks (numbers \
as numbers); leave out an optional value the text does not give; never invent one."""

ADAPT_USER = """\
Tool: {target}{description}
Input schema: {schema}
Text:
{text}"""

OnStep = Callable[[Step], None]


class Adapter:
    """Fits values to a target atom's input schema, with a model when words must become
    structure.

    Args:
        model: the model that extracts structured input (any `ChatModel`; the embedded
            model decodes under the schema's grammar).
        settings: its settings (`response_schema` is set per extraction).
    """

    def __init__(self, model: ChatModel, *, settings: ModelSettings | None = None) -> None:
        self.model = model
        self.settings = settings or ModelSettings()

    async def fit(
        self,
        value: Any,
        schema: dict[str, Any],
        *,
        target: str,
        description: str = "",
        source: str = "",
        run_id: str = "",
        on_step: OnStep | None = None,
    ) -> dict[str, Any]:
        """`value` as arguments valid under `schema`.

        A dict, or text holding a JSON object, that validates (after `coerce`) is returned
        as is; text for a schema with a single string parameter becomes that parameter.
        Anything else takes one model turn; the "adapt" step recording it goes to
        `on_step`, failed or not.

        Args:
            target: the atom whose input `schema` is (named in the prompt and the step).
            source: who produced `value` (the step is named "source→target").

        Raises:
            InvalidArguments: the extracted value does not validate; the message says why.
        """
        direct = fits(value, schema)
        if direct is not None:
            return direct
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        messages = _extraction_messages(text, schema, target=target, description=description)
        settings = replace(self.settings, response_schema=grammar_safe(schema))
        started = time.time()
        response = await self.model.chat(messages, [], settings)
        extracted, problem = _parse(response.text, schema)
        step = _adapt_step(
            response,
            text,
            extracted,
            problem,
            name=f"{source}→{target}" if source else target,
            run_id=run_id,
            started=started,
        )
        if on_step is not None:
            on_step(step)
        if problem or extracted is None:
            raise InvalidArguments(
                f"Could not turn the text into input for {target!r}: {problem}. "
                f"The model wrote {_clip(response.text)!r} from {_clip(text)!r}."
            )
        return extracted


def _extraction_messages(
    text: str, schema: dict[str, Any], *, target: str, description: str
) -> list[Message]:
    """The system and user messages asking a model to turn `text` into input for
    `target` under `schema`."""
    about = f": {description}" if description else ""
    prompt = ADAPT_USER.format(
        target=target, description=about, schema=json.dumps(schema), text=text
    )
    return [
        Message(role="system", content=ADAPT_SYSTEM),
        Message(role="user", content=prompt),
    ]


def _adapt_step(
    response: ModelResponse,
    text: str,
    extracted: dict[str, Any] | None,
    problem: str | None,
    *,
    name: str,
    run_id: str,
    started: float,
) -> Step:
    """The "adapt" step recording one extraction of `text` (failed when `problem`)."""
    return Step(
        run_id=run_id,
        index=0,
        kind="adapt",
        name=name,
        input={"text": text},
        output=extracted if extracted is not None else valid_text(response.text),
        error="invalid_extraction" if problem else None,
        seconds=response.usage.seconds,
        prompt_tokens=response.usage.prompt_tokens,
        completion_tokens=response.usage.completion_tokens,
        started_at=started,
    )


def fits(value: Any, schema: dict[str, Any]) -> dict[str, Any] | None:
    """`value` as valid arguments for `schema` without a model (None: it does not fit).

    Accepted: a dict or a JSON object in text that validates after `coerce`, and text
    for a schema whose one parameter is a string.
    """
    candidate: Any = value
    if isinstance(value, str):
        try:
            candidate = json.loads(value)
        except ValueError:
            candidate = None
        if not isinstance(candidate, dict):
            candidate = _as_only_string(value, schema)
    if not isinstance(candidate, dict):
        return None
    candidate = coerce(candidate, schema)
    return None if schema_problems(candidate, schema) else candidate


def adapted(
    tool: Tool,
    adapter: Adapter,
    *,
    source: str = "",
    on_step: OnStep | None = None,
    timeout_s: float | None = None,
) -> Tool:
    """`tool` taking whatever an earlier step produced: arguments that fit its schema are
    passed on; anything else (`input="free text"`, or keywords that do not fit) is fitted
    by `adapter` first. For developer-wired steps (`Workflow`), not for a model to call:
    its schema accepts any object.

        Do("book", adapted(book_flight, Adapter(model)), input="$summary")

    Args:
        source: who produces the input (names the "adapt" steps).
        on_step: receives each "adapt" step.
        timeout_s: the whole call, extraction included (default: the tool's timeout
            plus two minutes for the model).
    """

    async def run(**arguments: Any) -> str:
        value = arguments["input"] if set(arguments) == {"input"} else arguments
        fitted = await adapter.fit(
            value,
            tool.schema,
            target=tool.name,
            description=tool.description,
            source=source,
            on_step=on_step,
        )
        return await tool.call(fitted)

    return Tool.from_schema(
        tool.name,
        tool.description,
        {"type": "object", "additionalProperties": True},
        run,
        timeout_s=timeout_s if timeout_s is not None else tool.timeout_s + 120.0,
        max_result_chars=tool.max_result_chars,
        effect=tool.effect,
        idempotent=tool.idempotent,
    )


def coerce(value: Any, schema: dict[str, Any]) -> Any:
    """`value` converted to the types `schema` declares, where that loses nothing."""
    kind = schema.get("type")
    if kind == "number" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    if kind in ("integer", "number") and isinstance(value, str):
        return _number(value, kind) if _is_number(value) else value
    if kind == "string" and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if kind == "array":
        items = schema.get("items", {})
        if not isinstance(value, list):
            return value
        return [coerce(v, items) for v in value] if isinstance(items, dict) else value
    if kind == "object" and isinstance(value, dict):
        props = schema.get("properties", {})
        return {k: coerce(v, props[k]) if k in props else v for k, v in value.items()}
    return value


def _as_only_string(text: str, schema: dict[str, Any]) -> dict[str, Any] | None:
    props = schema.get("properties") or {}
    if len(props) != 1:
        return None
    ((name, prop),) = props.items()
    if not isinstance(prop, dict) or prop.get("type") != "string":
        return None
    return {name: text}


def _parse(text: str, schema: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """The extracted arguments and what is wrong with them (None: nothing)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None, "the reply is not JSON"
    if not isinstance(data, dict):
        return None, f"the reply is a JSON {type(data).__name__}, not an object"
    data = coerce(data, schema)
    problems = schema_problems(data, schema)
    return data, "; ".join(problems) if problems else None


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _number(text: str, kind: str) -> int | float:
    number = float(text)
    return int(number) if kind == "integer" and number.is_integer() else number
