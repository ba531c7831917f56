from __future__ import annotations

import asyncio
import json
from pathlib import Path

from bigloop import (
    Clarify,
    Loop,
    ReactPlanner,
    ScriptedModel,
    ToolCall,
    ToolSpec,
    TraceStore,
    default_rules,
    tool,
)
from bigloop.atoms.builtin.calculator import calculator

SENT: list[tuple[str, str]] = []


@tool(idempotent=False, effect="write")
def send_message(receiver: str, text: str) -> str:
    """Send a message to a person.

    Args:
        receiver: who gets the message.
        text: the message.
    """
    SENT.append((receiver, text))
    return "sent"


def call(name: str, **arguments: object) -> str:
    return json.dumps({"tool_calls": [{"name": name, "arguments": arguments}]})


def answer(text: str) -> str:
    return json.dumps({"answer": text})


def setup_function() -> None:
    SENT.clear()


SPEC = ToolSpec(name="send_message", parameters=send_message.schema)


def test_policy_asks_for_missing_and_ungrounded_required_values() -> None:
    policy = Clarify()
    guess = ToolCall(id="1", name="send_message", arguments={"receiver": "bob", "text": "hi"})
    assert policy.question(guess, SPEC, "say hi to my colleague") == (
        "To call send_message, what is the receiver (who gets the message)?"
    )
    assert policy.question(guess, SPEC, "say hi to Bob") is None
    missing = ToolCall(id="1", name="send_message", arguments={"text": "hi"})
    assert "receiver" in (policy.question(missing, SPEC, "say hi") or "")
    assert Clarify(ungrounded=False).question(guess, SPEC, "say hi to my colleague") is None


def test_loop_asks_through_the_callback_and_traces_the_question() -> None:
    questions: list[str] = []

    def ask(question: str) -> str:
        questions.append(question)
        return "Bob"

    model = ScriptedModel(
        [
            call("send_message", receiver="colleague_1", text="hi"),
            call("send_message", receiver="Bob", text="hi"),
            answer("Sent."),
        ]
    )
    loop = Loop(model, [send_message], clarify=Clarify(retry_first=False), ask=ask)
    result = loop.run_sync("Say hi to my colleague.")
    assert result.answer == "Sent."
    assert questions == ["To call send_message, what is the receiver (who gets the message)?"]
    assert SENT == [("Bob", "hi")]
    asked = [s for s in result.steps if s.kind == "ask"]
    assert len(asked) == 1 and "'Bob'" in asked[0].output


def test_without_a_callback_the_run_stops_with_the_question_and_resumes_with_the_answer(
    tmp_path: Path,
) -> None:
    store = TraceStore(tmp_path / "t.db")
    first = Loop(
        ScriptedModel([call("send_message", receiver="colleague_1", text="hi")]),
        [send_message],
        clarify=Clarify(retry_first=False),
        store=store,
    ).run_sync("Say hi to my colleague.")
    assert first.status == "input_required"
    assert first.question == "To call send_message, what is the receiver (who gets the message)?"
    assert SENT == []
    assert store.run(first.run_id).question == first.question  # its own column, not the error
    asked = [s for s in store.steps(first.run_id) if s.kind == "ask"][-1]
    assert asked.question is not None and asked.question.kind == "clarify"

    second = Loop(
        ScriptedModel([call("send_message", receiver="Ann", text="hi"), answer("Sent to Ann.")]),
        [send_message],
        clarify=Clarify(),
        store=store,
    )
    result = asyncio.run(second.resume(first.run_id, answer="Ann"))
    assert result.status == "ok" and result.answer == "Sent to Ann."
    assert SENT == [("Ann", "hi")]
    kinds = [(s.kind, s.error) for s in store.steps(first.run_id)]
    assert ("ask", "unanswered") in kinds and ("ask", None) in kinds


def test_abbreviations_of_the_request_count_as_grounded() -> None:
    from bigloop.policies.clarify import grounded

    request = "convert 26.2 miles to kilometers"
    assert grounded("km", request) and grounded("mi", request) and grounded(26.2, request)
    assert not grounded("kg", request)  # no word of the request starts with k…g
    assert not grounded("bob", "say hi to my colleague")


def test_normalised_request_values_count_as_grounded() -> None:
    from bigloop import Evidence

    said = Evidence("What is 17.5% of 2,480?")
    assert said.mentions("0.175 * 2480") and said.mentions("17.5/100*2,480")
    assert not said.mentions("0.3 * 9999")
    feb = Evidence("I run 5 km every day in February 2024.")
    assert feb.mentions("2024-02-01") and feb.mentions("2024-02-29") and feb.mentions("2024-03-01")
    assert not feb.mentions("2023-01-01")
    assert Evidence("Ship it on July 4, 2024").mentions("2024-07-04")
    assert Evidence("from 3rd March 2025").mentions("2025-03-03")


def test_composed_values_need_only_their_literals_grounded() -> None:
    from bigloop import Evidence

    eggs = Evidence("A box holds 24 eggs. How many boxes are needed for 1,000 eggs?")
    assert eggs.mentions("ceil(1000 / 24)") and eggs.mentions("1000 / 12 * 0.5")
    assert not eggs.mentions("ceil(500 / 36)")  # no number of the request: invented
    cities = Evidence("How many customers live in Oslo?")
    assert cities.mentions("SELECT COUNT(*) FROM customers WHERE city = 'Oslo'")
    assert not cities.mentions("SELECT COUNT(*) FROM customers WHERE city = 'Bergen'")
    march = Evidence("How many orders were placed in March 2024?")  # a date format is syntax
    assert march.mentions("SELECT COUNT(*) FROM orders WHERE strftime('%Y-%m', day) = '2024-03'")
    assert not march.mentions("SELECT COUNT(*) FROM orders WHERE strftime('%Y', day) = '2023'")
    assert not Evidence("say hi to my colleague").mentions("bob")  # a plain value: every word


def test_dates_need_their_year_and_currency_names_ground_codes() -> None:
    from bigloop import Evidence

    assert Evidence("What day is Christmas Day 2030?").mentions("2030-12-25")
    assert not Evidence("between 20 July 1969 and 2000").mentions("2069-07-20")
    yen = Evidence("How many British pounds is 5,000 yen?")
    assert yen.mentions("JPY") and yen.mentions("GBP") and not yen.mentions("EUR")


def test_an_ungrounded_value_goes_back_to_the_model_once_then_the_user_is_asked() -> None:
    fixed = Loop(
        ScriptedModel(
            [
                call("send_message", receiver="Bobb", text="hi"),  # a slip: Bob was said
                call("send_message", receiver="Bob", text="hi"),
                answer("Sent."),
            ]
        ),
        [send_message],
        clarify=Clarify(),
    ).run_sync("Say hi to Bob.")
    assert fixed.answer == "Sent." and SENT == [("Bob", "hi")]
    assert fixed.tool_steps[0].output == (
        "Error: send_message: receiver='Bobb' appears nowhere in the request. Use the values "
        "the request gives; if it gives none, make the same call again and the user will be "
        "asked."
    )
    guess = call("send_message", receiver="colleague_1", text="hi")
    insisted = Loop(ScriptedModel([guess, guess]), [send_message], clarify=Clarify()).run_sync(
        "Say hi to my colleague."
    )
    assert insisted.status == "input_required" and SENT == [("Bob", "hi")]
    assert insisted.question == "To call send_message, what is the receiver (who gets the message)?"


def test_an_answer_after_a_refused_guess_asks_the_user_instead() -> None:
    guess = call("send_message", receiver="colleague_1", text="hi")
    gave_up = Loop(
        ScriptedModel([guess, answer("I said hi to your colleague.")]),
        [send_message],
        clarify=Clarify(),
    ).run_sync("Say hi to my colleague.")
    assert gave_up.status == "input_required" and SENT == []
    assert gave_up.question == "To call send_message, what is the receiver (who gets the message)?"
    kinds = [(s.kind, s.error) for s in gave_up.steps]
    assert kinds == [
        ("model", None),
        ("tool", "invalid_arguments"),
        ("model", None),
        ("ask", "unanswered"),
    ]
    asked: list[str] = []

    def reply(question: str) -> str:
        asked.append(question)
        return "Ann"

    told = Loop(
        ScriptedModel(
            [
                guess,
                answer("Done."),
                call("send_message", receiver="Ann", text="hi"),
                answer("Sent to Ann."),
            ]
        ),
        [send_message],
        clarify=Clarify(),
        ask=reply,
    ).run_sync("Say hi to my colleague.")
    assert told.answer == "Sent to Ann." and SENT == [("Ann", "hi")] and len(asked) == 1
    plain = Loop(
        ScriptedModel([guess, answer("I said hi.")]),
        [send_message],
        planner=ReactPlanner(rules=default_rules(off={"ask_after_refusal"})),
        clarify=Clarify(),
    ).run_sync("Say hi to my colleague.")
    assert plain.status == "ok" and plain.answer == "I said hi."  # as before the policy
    no_clarify = Loop(ScriptedModel([guess, answer("Hi sent.")]), [send_message]).run_sync(
        "Say hi to my colleague."
    )
    assert no_clarify.status == "ok"  # nothing was refused for a missing value


def test_the_loops_own_notes_never_ground_a_value() -> None:
    @tool
    def to_fahrenheit(celsius: float) -> float:
        """Convert a temperature in Celsius to Fahrenheit."""
        return celsius * 9 / 5 + 32

    guess = call("to_fahrenheit", celsius=3)
    said = answer("3 degrees Celsius is 98.6 degrees Fahrenheit.")
    # the answer check's note quotes "3"; the call made again must still ask
    result = Loop(ScriptedModel([guess, said, said]), [to_fahrenheit], clarify=Clarify()).run_sync(
        "What is the temperature outside, in Fahrenheit?"
    )
    assert result.status == "input_required", [(s.kind, s.output) for s in result.steps]
    assert "celsius" in (result.question or "")


@tool
def shipping_cost(weight_kg: float, zone: str) -> float:
    """The price of shipping a parcel.

    Args:
        weight_kg: the parcel's weight in kilograms.
        zone: where it goes.
    """
    return 8.5 * weight_kg + 4


@tool
def convert_units(value: float, from_unit: str, to_unit: str) -> float:
    """Convert a value between units.

    Args:
        value: the value.
        from_unit: its unit.
        to_unit: the unit wanted.
    """
    return value * 2


@tool
def today() -> str:
    """Today's date."""
    return "2026-12-01"


@tool
def add_days(date: str, days: int) -> str:
    """A date plus a number of days.

    Args:
        date: the starting date, YYYY-MM-DD.
        days: how many days.
    """
    return date


def test_guesses_after_a_result_end_in_an_answer_from_the_results_not_a_question() -> None:
    wander = call("convert_units", value=12, from_unit="kg", to_unit="miles")
    script = [call("shipping_cost", weight_kg=12, zone="world"), wander, wander, answer("106.0")]
    task = "How much does shipping a 12 kg parcel to the world zone cost?"
    settled = Loop(
        ScriptedModel(script), [shipping_cost, convert_units], clarify=Clarify()
    ).run_sync(task)
    assert settled.status == "ok" and settled.answer == "106.0"
    tools = [(s.name, s.error) for s in settled.steps if s.kind == "tool"]
    assert tools == [
        ("shipping_cost", None),
        ("convert_units", "invalid_arguments"),
        ("convert_units", "invalid_arguments"),
    ]
    first, second = (str(s.output) for s in settled.steps if s.error)
    assert "give the answer" in first and "answer the request from them now" in second
    asked = Loop(
        ScriptedModel(script), [shipping_cost, convert_units], clarify=Clarify(settle=False)
    ).run_sync(task)
    assert asked.status == "input_required" and "to_unit" in (asked.question or "")


def test_a_call_without_arguments_is_no_result_to_settle_on() -> None:
    guess = call("add_days", date="2023-01-01", days=30)
    result = Loop(
        ScriptedModel([call("today"), guess, guess]), [today, add_days], clarify=Clarify()
    ).run_sync("What date is 30 days after my contract starts?")
    assert result.status == "input_required" and "date" in (result.question or "")


@tool
def city_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: the city's name, e.g. "Lisbon".
    """
    return f"sunny in {city}"


def test_a_copied_example_given_up_on_is_asked_about_when_clarify_asks() -> None:
    """The docs' example city, refused as copied, then an answer from memory: whenever
    clarify asks at all ("missing", the default, or "ungrounded"), the call is made again
    and the user is asked (a copy is a missing value in disguise); with clarify off the
    answer stands; in a conversation that already called tools, nothing judges its
    values, so the answer stands and no call is made."""
    from bigloop import LoopConfig

    copied = call("city_weather", city="Lisbon")
    script = [copied, answer("It is measured in Celsius.")]
    asked = Loop.from_config(
        LoopConfig(), model=ScriptedModel(list(script)), tools=[city_weather]
    ).run_sync("What's the weather like right now?")
    assert asked.status == "input_required", [(s.kind, s.error) for s in asked.steps]
    assert "city" in (asked.question or "")
    for clarify in ("missing", "ungrounded"):
        asked = Loop.from_config(
            LoopConfig(clarify=clarify), model=ScriptedModel(list(script)), tools=[city_weather]
        ).run_sync("What's the weather like right now?")
        assert asked.status == "input_required" and "city" in (asked.question or ""), clarify
    plain = Loop.from_config(
        LoopConfig(clarify="off"), model=ScriptedModel(list(script)), tools=[city_weather]
    ).run_sync("What's the weather like right now?")
    assert plain.status == "ok" and plain.answer == "It is measured in Celsius."
    earlier = Loop.from_config(
        LoopConfig(),
        model=ScriptedModel([call("city_weather", city="Porto"), answer("Sunny.")]),
        tools=[city_weather],
    ).run_sync("What's the weather in Porto?")
    assert earlier.status == "ok"
    later = Loop.from_config(
        LoopConfig(), model=ScriptedModel(list(script)), tools=[city_weather]
    ).run_sync("And what's it like now?", history=earlier.messages)
    assert later.status == "ok" and not any(s.kind == "ask" for s in later.steps)


@tool
def scale(value: float, unit: str) -> str:
    """Scale a quantity.

    Args:
        value: the number.
        unit: its unit, e.g. "furlongs".
    """
    return f"{value} {unit}"


def test_a_made_up_call_with_a_copied_example_is_not_asked_about() -> None:
    """A call whose other required values nobody said either is no question for the
    user: the answer that followed its refusal stands."""
    from bigloop import LoopConfig

    made_up = call("scale", value=2.0, unit="furlongs")
    result = Loop.from_config(
        LoopConfig(),
        model=ScriptedModel([made_up, answer("The meeting moved to Thursday.")]),
        tools=[scale],
    ).run_sync("Summarize in one sentence: the meeting moved from Tuesday to Thursday.")
    assert result.status == "ok", [(s.kind, s.error) for s in result.steps]
    assert result.answer == "The meeting moved to Thursday."
    grounded = Loop.from_config(
        LoopConfig(),
        model=ScriptedModel([call("scale", value=3.0, unit="furlongs"), answer("3 it is.")]),
        tools=[scale],
    ).run_sync("Scale 3 for me.")
    assert grounded.status == "input_required" and "unit" in (grounded.question or "")


def test_a_copy_the_model_insists_on_is_asked_about_even_when_only_missing_values_are() -> None:
    """clarify="missing": the copied example made twice is a question, not a call."""
    from bigloop import LoopConfig

    copied = call("city_weather", city="Lisbon")
    result = Loop.from_config(
        LoopConfig(clarify="missing"),
        model=ScriptedModel([copied, copied, answer("Sunny.")]),
        tools=[city_weather],
    ).run_sync("What's the weather like right now?")
    assert result.status == "input_required" and "city" in (result.question or "")
    assert not any(s.kind == "tool" and s.error is None for s in result.steps)


@tool
def book_table(date: str, time: str, people: int) -> str:
    """Book a restaurant table.

    Args:
        date: the day, YYYY-MM-DD.
        time: the time, HH:MM:SS (24-hour).
        people: how many.
    """
    return f"booked {date} {time} for {people}"


def test_values_said_another_way_or_in_the_system_prompt_are_grounded() -> None:
    """ "6:30 PM next Friday" with today's date in the system prompt grounds 18:30:00
    and 2024-03-08; a value only the system prompt gives grounds too (clarify
    "ungrounded", the strictest)."""
    booking = call("book_table", date="2024-03-08", time="18:30:00", people=2)
    result = Loop(
        ScriptedModel([booking, answer("Booked.")]),
        [book_table],
        system="Today is Friday, 2024-03-01.",
        clarify=Clarify(),
    ).run_sync("A table for 2 at 6:30 PM next Friday, please.")
    assert result.status == "ok", [(s.kind, s.name, s.error, s.output) for s in result.steps]
    assert result.answer == "Booked."
    wrong = call("book_table", date="2024-03-08", time="19:00:00", people=2)
    refused = Loop(
        ScriptedModel([wrong, wrong, answer("Booked.")]),
        [book_table],
        system="Today is Friday, 2024-03-01.",
        clarify=Clarify(),
    ).run_sync("A table for 2 at 6:30 PM next Friday, please.")
    assert refused.status == "input_required" and "time" in (refused.question or "")


def test_a_value_under_a_wrong_name_is_repaired_not_asked_about() -> None:
    """`expr` for `expression`: the model's slip goes back to it; the user said the value."""
    slip = call("calculator", expr="3*4")
    result = Loop(
        ScriptedModel([slip, call("calculator", expression="3*4"), answer("12")]),
        [calculator],
        clarify=Clarify(ungrounded=False),
    ).run_sync("3 times 4?")
    assert result.status == "ok" and result.answer == "12"
    assert [s.error for s in result.tool_steps] == ["invalid_arguments", None]
