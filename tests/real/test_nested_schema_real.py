"""A tool whose parameter is a nested pydantic model runs on the embedded model."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from bigloop import LocalModel, Loop, tool

pytestmark = pytest.mark.real


class Address(BaseModel):
    street: str
    city: str


class Person(BaseModel):
    name: str
    home: Address


def test_a_nested_model_parameter_is_called_with_its_structure(embedded: LocalModel) -> None:
    seen: list[Person] = []

    @tool(inline=True)
    def register(person: Person) -> str:
        """Register a person in the address book.

        Args:
            person: the person, with their home address.
        """
        seen.append(person)
        return f"registered {person.name}"

    result = Loop(embedded, [register]).run_sync(
        "Register Ann Lee, who lives at 12 Main Street in Oslo."
    )
    assert result.status == "ok", result.error
    assert seen, [s.output for s in result.steps]
    assert isinstance(seen[0].home, Address)
