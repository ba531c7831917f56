"""Tasks no tool fits (answer directly, or decline) and tasks that lack a value the loop
cannot guess (it must ask: without an ask callback the run stops with a question)."""

from __future__ import annotations

from ..checks import Asked, NoTool
from ..task import CUSTOM, DEFAULT, Task


def _direct(id: str, text: str, *keywords: str) -> Task:
    return Task(id=id, category="no_tool", text=text, tools=DEFAULT, check=NoTool(any_of=keywords))


def _ask(id: str, text: str, tools: tuple[str, ...] = DEFAULT) -> Task:
    return Task(id=id, category="missing_value", text=text, tools=tools, check=Asked())


NO_TOOL = [
    _direct("notool-001", "Write a haiku about autumn."),
    _direct("notool-002", "What is the capital of France?", "Paris"),
    _direct("notool-003", "Who wrote Romeo and Juliet?", "Shakespeare"),
    _direct("notool-004", "Translate 'thank you' into Spanish.", "gracias"),
    _direct("notool-005", "What is the chemical symbol for gold?", "Au"),
    _direct("notool-006", "Book me a table for two at an Italian restaurant tonight."),
    _direct("notool-007", "Send an email to my boss saying I'll be late."),
    _direct("notool-008", "Tell me a joke about programmers."),
    _direct("notool-009", "What is the largest planet in our solar system?", "Jupiter"),
    _direct("notool-010", "Who painted the Mona Lisa?", "Leonardo", "da Vinci"),
    _direct("notool-011", "Turn on the living room lights."),
    _direct("notool-012", "Give me a synonym for 'happy'."),
    _direct(
        "notool-013",
        "Summarize in one sentence: The team meeting moved from Tuesday to Thursday because "
        "the room was double-booked.",
        "Thursday",
    ),
    _direct("notool-014", "What language do people speak in Brazil?", "Portuguese"),
]

MISSING_VALUE = [
    _ask("missing-001", "Convert my height to centimeters."),
    _ask("missing-002", "What is 15% of my monthly salary?"),
    _ask("missing-003", "How many days are there between my wedding day and 2025-06-01?"),
    _ask("missing-004", "What day of the week was I born on?"),
    _ask("missing-005", "Convert the temperature to Fahrenheit."),
    _ask("missing-006", "How much is my order in euros?", CUSTOM),
    _ask("missing-007", "How much does it cost to ship my parcel to Europe?", CUSTOM),
    _ask("missing-008", "What's the weather like in my city?", CUSTOM),
    _ask("missing-009", "What are my shares worth right now?", CUSTOM),
    _ask("missing-010", "Add 30 days to the contract start date."),
    _ask(
        "missing-011", "I drove 240 km every day of my trip. How many miles did I drive in total?"
    ),
    _ask("missing-012", "Split the restaurant bill evenly among my friends."),
    _ask("missing-013", "How much VAT is on this invoice?", CUSTOM),
    _ask("missing-014", "How long will my download take?"),
]
