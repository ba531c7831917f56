from __future__ import annotations

import asyncio
import threading

import pytest

from bigloop import InvalidArguments, Tool, ToolFailure, UserError, tool


@tool
def book_flight(origin: str, destination: str, seats: int = 1, window: bool = False) -> str:
    """Book a flight between two cities.

    Args:
        origin: city the flight leaves from.
        destination: city the flight goes to,
            on more than one line.
        seats: how many seats.
        window: prefer a window seat.

    Returns:
        A confirmation code.
    """
    return f"{origin}-{destination}-{seats}-{window}"


def test_schema_from_hints_and_docstring() -> None:
    assert book_flight.name == "book_flight"
    assert book_flight.description == "Book a flight between two cities."
    assert book_flight.schema == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "origin": {"type": "string", "description": "city the flight leaves from."},
            "destination": {
                "type": "string",
                "description": "city the flight goes to, on more than one line.",
            },
            "seats": {"type": "integer", "default": 1, "description": "how many seats."},
            "window": {"type": "boolean", "default": False, "description": "prefer a window seat."},
        },
        "required": ["origin", "destination"],
    }


def test_missing_hint_fails_at_decoration_with_the_fix() -> None:
    with pytest.raises(UserError, match=r"parameter 'b' has no type hint.*b: str"):

        @tool
        def bad(a: int, b) -> int:  # type: ignore[no-untyped-def]
            return a


def test_arguments_validated_before_the_call() -> None:
    assert asyncio.run(
        book_flight.call({"origin": "Oslo", "destination": "Rome", "seats": "2"})
    ) == ("Oslo-Rome-2-False")
    with pytest.raises(InvalidArguments) as info:
        asyncio.run(book_flight.call({"origin": "Oslo", "seat": 2}))
    message = str(info.value)
    assert "destination: Field required" in message
    assert "seat: not a parameter of this tool" in message
    assert "required: origin, destination" in message
    with pytest.raises(InvalidArguments, match="must be a JSON object"):
        book_flight.validate(["Oslo"])


def test_async_tool_timeout_and_errors() -> None:
    cancelled: list[bool] = []

    @tool(timeout_s=0.05)
    async def slow(seconds: float) -> str:
        """Sleep."""
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "done"

    assert asyncio.run(slow.call({"seconds": 0})) == "done"
    # Far past the timeout: a call that is not cut off returns "done" instead of failing.
    with pytest.raises(ToolFailure, match=r"timed out after 0\.05 s"):
        asyncio.run(slow.call({"seconds": 60}))
    assert cancelled == [True]

    @tool
    def broken() -> None:
        """Always fails."""
        raise RuntimeError("disk on fire")

    with pytest.raises(ToolFailure, match="RuntimeError: disk on fire"):
        asyncio.run(broken.call({}))


def test_sync_tool_timeout_does_not_wait_for_its_thread() -> None:
    entered, release, finished = threading.Event(), threading.Event(), threading.Event()

    @tool(timeout_s=0.05)
    def stuck() -> str:
        """Blocks until released."""
        entered.set()
        release.wait(timeout=60)
        finished.set()
        return "done"

    async def call_then_release() -> None:
        try:
            with pytest.raises(ToolFailure, match="timed out"):
                await stuck.call({})
            assert entered.is_set()
            assert not finished.is_set(), "the call waited for the blocked thread"
        finally:
            release.set()

    asyncio.run(call_then_release())
    assert finished.wait(timeout=5)


def test_results_rendered_and_capped() -> None:
    @tool(max_result_chars=10)
    def big() -> str:
        """Big."""
        return "x" * 25

    @tool
    def structured() -> dict[str, list[int]]:
        """Structured."""
        return {"a": [1, 2]}

    assert asyncio.run(big.call({})) == "xxxxxxxxxx… [truncated 15 characters]"
    assert asyncio.run(structured.call({})) == '{"a": [1, 2]}'


def test_tool_card() -> None:
    assert isinstance(book_flight, Tool)
    card = book_flight.card
    assert (card.kind, card.name, card.privacy) == ("tool", "book_flight", "local")
    assert card.input_schema["required"] == ["origin", "destination"]
