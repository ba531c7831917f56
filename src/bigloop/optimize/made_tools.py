"""The optimizer's `tools` step (the review's §4.1.3, LATM): for each training example the
loop got wrong, a maker model writes a general tool for requests of that kind, checked
in the sandbox against the example's known answer (`bigloop.atoms.made.tool_for`); the
tools that pass go into a tool library, and the loop with that library (`tools_dir`)
is kept only when it beats the loop without it on dev.

Only benches that know their examples' answers (`KnowsAnswers`) can make tools: a tool
is accepted on a right answer, never on the maker's word.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from bigloop.atoms.made import MadeTool, ToolLibrary, tool_for
from bigloop.atoms.models.base import ChatModel
from bigloop.optimize.bench import Example


@runtime_checkable
class KnowsAnswers(Protocol):
    """A bench that can say an example's right answer and judge a candidate one."""

    def reference(self, example: Example) -> str | None:
        """The right answer of `example` in words; None when it has none to compute (a
        question to ask, a request to decline)."""
        ...

    def accepts(self, example: Example, answer: str) -> bool:
        """Whether `answer` is a right answer to `example` (the bench's own checker)."""
        ...


@dataclass(kw_only=True)
class Attempt:
    """One failure a tool was asked for, and what came of it."""

    example_id: str
    tool: str | None  # the accepted tool's name; None when rejected
    reason: str  # why it was rejected; "" when accepted
    source: str


async def make_tools(
    bench: KnowsAnswers,
    failures: list[Example],
    maker: ChatModel,
    library: ToolLibrary,
    *,
    log: Callable[[str], None] = lambda line: None,
) -> list[Attempt]:
    """A tool for each of `failures` that has a right answer, into `library` when
    accepted. A failure the library already holds a tool for (from an interrupted
    earlier run) is not asked again; a name already taken keeps its first tool."""
    held = _held(library)
    attempts = []
    for example in failures:
        if example.task in held:
            made = held[example.task]
            attempts.append(Attempt(example_id=example.id, tool=made.name, reason="", source=""))
            continue
        answer = bench.reference(example)
        if answer is None:
            continue

        def accepts(got: Any, example: Example = example) -> bool:
            return bench.accepts(example, _said(got))

        made_or_not = await tool_for(example.task, answer, accepts, maker)
        attempt = _attempt(example, made_or_not, held, library)
        log(
            f"[tools] {example.id}: "
            + (f"made {attempt.tool}" if attempt.tool else f"rejected ({attempt.reason})")
        )
        attempts.append(attempt)
    return attempts


def _attempt(
    example: Example, made: Any, held: dict[str, MadeTool], library: ToolLibrary
) -> Attempt:
    if not isinstance(made, MadeTool):
        return Attempt(example_id=example.id, tool=None, reason=made.reason, source=made.source)
    if any(m.name == made.name for m in held.values()):
        return Attempt(
            example_id=example.id,
            tool=None,
            reason=f"a tool named {made.name} exists already",
            source=made.source,
        )
    library.save(made)
    held[example.task] = made
    return Attempt(example_id=example.id, tool=made.name, reason="", source=made.source)


def _held(library: ToolLibrary) -> dict[str, MadeTool]:
    """The library's current tools by the request each was made from."""
    if not library.folder.is_dir():
        return {}
    return {m.made_for: m for m in library.made() if m.made_for}


def _said(result: Any) -> str:
    """A tool's result as an answer a checker reads."""
    if isinstance(result, float) and result.is_integer():
        return str(int(result))
    return str(result)


def record(attempts: list[Attempt], folder: Path) -> dict[str, object]:
    """What the step did, for the optimized config's provenance."""
    return {
        "folder": str(folder),
        "asked": len(attempts),
        "accepted": sum(a.tool is not None for a in attempts),
        "attempts": [asdict(a) for a in attempts],
    }
