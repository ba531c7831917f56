from __future__ import annotations

from bigloop import ToolSpec
from bigloop.policies import RankTools, RelevanceGate
from bigloop.policies.select import rank_tools

TOOLS = [
    ToolSpec(name="calculator", description="Evaluate an arithmetic expression."),
    ToolSpec(
        name="convert_units", description="Convert a quantity between units, e.g. miles to km."
    ),
    ToolSpec(
        name="sql_query",
        description="Run a read-only SQL query on the database.",
        parameters={"type": "object", "properties": {"query": {"type": "string"}}},
    ),
]


def test_most_relevant_tool_first_ties_keep_order() -> None:
    assert rank_tools("Convert 26.2 miles to kilometers", TOOLS)[0].name == "convert_units"
    assert rank_tools("Query the database for orders", TOOLS)[0].name == "sql_query"
    assert [t.name for t in rank_tools("hello", TOOLS)] == [
        "calculator",
        "convert_units",
        "sql_query",
    ]


def relevant_tools(task: str, tools: list[ToolSpec]) -> list[ToolSpec]:
    """The default selectors, in order."""
    return RankTools().select(task, RelevanceGate().select(task, tools))


def test_relevance_gate_offers_no_tools_for_unrelated_requests() -> None:
    unrelated = "Tell me about the history of the Roman empire and its famous emperors"
    assert relevant_tools(unrelated, TOOLS) == []
    assert relevant_tools("Query the database for orders", TOOLS)[0].name == "sql_query"
    assert len(relevant_tools("What is 2 + 2?", TOOLS)) == 3, "short requests keep every tool"
    assert len(relevant_tools("上海的天气怎么样", TOOLS)) == 3, "unreadable words: no gate"


def test_a_request_with_numbers_keeps_a_tool_that_computes_them() -> None:
    def spec(name: str, parameter: str, about: str) -> ToolSpec:
        schema = {"type": "string", "description": about}
        return ToolSpec(
            name=name,
            description="A tool.",
            parameters={"type": "object", "properties": {parameter: schema}},
        )

    calculator = spec("calc", "expression", "e.g. 2 * (3 + 4)")
    maths = spec("evaluate", "formula", "A math formula to evaluate.")
    grep = spec("grep", "pattern", "A regular expression, e.g. ^a.*z$; arithmetic not allowed")
    lamp = "A lamp costs $80 and is 15% off. What do I pay for it?"
    assert relevant_tools(lamp, [calculator]) == [calculator]  # arithmetic in words
    assert relevant_tools(lamp, [maths]) == [maths]
    assert relevant_tools(lamp, [grep]) == []  # a regular expression computes nothing
    assert relevant_tools("A lamp costs $80. What colour should it be?", [calculator]) == []
    assert relevant_tools("Write a haiku about autumn leaves and cold rain", [calculator]) == []
