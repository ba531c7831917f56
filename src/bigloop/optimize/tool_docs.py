"""Tool documentation rewritten from the mistakes models make calling the tool (DRAFT,
in small): a model reads a tool's description and schema and the calls that went wrong
with the reason each was refused, and writes a clearer description; the rewrite is kept
only when the dev score improves (`Optimizer`)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

from bigloop.atoms.models.base import ChatModel, Message, ModelSettings, ToolSpec
from bigloop.optimize.bench import Mistake

REWRITE = """\
A tool's description is read by an assistant that calls the tool with JSON arguments. \
Calls it made went wrong; rewrite the description so that such calls are written right \
the first time: say what the tool does, and for any argument that was gotten wrong, its \
exact format with a short example. Keep it under 400 characters.

Tool: {name}
Current description: {description}
Arguments (JSON schema): {schema}

Calls that went wrong, and why:
{mistakes}"""

SCHEMA = {
    "type": "object",
    "properties": {"description": {"type": "string", "minLength": 20, "maxLength": 500}},
    "required": ["description"],
}
SETTINGS = ModelSettings(temperature=0.7, max_tokens=250, response_schema=SCHEMA)


def rewrite_prompt(spec: ToolSpec, mistakes: Sequence[Mistake]) -> str:
    shown = "\n".join(
        f"- {json.dumps(m.arguments, ensure_ascii=False, default=str)[:200]} -> {m.error[:200]}"
        for m in mistakes
    )
    schema = json.dumps(spec.parameters, ensure_ascii=False)[:800]
    return REWRITE.format(
        name=spec.name, description=spec.description, schema=schema, mistakes=shown
    )


async def propose_doc(model: ChatModel, prompt: str, *, seed: int = 0) -> str | None:
    """A new description from `prompt` (`rewrite_prompt`); None when nothing usable."""
    settings = dataclasses.replace(SETTINGS, seed=seed)
    response = await model.chat([Message(role="user", content=prompt)], [], settings)
    try:
        text = json.loads(response.text)["description"]
    except (ValueError, KeyError, TypeError):
        return None
    text = " ".join(str(text).split())
    return text if len(text) >= 20 else None


def mistakes_by_tool(mistakes: Sequence[Mistake], tools: Sequence[str]) -> dict[str, list[Mistake]]:
    """The mistakes made calling each of `tools` (unknown tools left out), most first."""
    by: dict[str, list[Mistake]] = {}
    for m in mistakes:
        if m.tool in tools:
            by.setdefault(m.tool, []).append(m)
    return dict(sorted(by.items(), key=lambda kv: -len(kv[1])))
