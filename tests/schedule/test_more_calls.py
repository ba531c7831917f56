"""MoreCalls' rule: a forced extra call is kept only when it is new and takes a value the
user said that no earlier call used."""

from __future__ import annotations

from bigloop.atoms.models.base import ToolCall
from bigloop.schedule.more_calls import refusal

ASKED = "find the boiling points of water and iron at sea level, in kelvin."


def call(**arguments: object) -> ToolCall:
    return ToolCall(id="", name="boiling_point", arguments=arguments)


def test_a_call_for_another_item_the_user_named_is_kept() -> None:
    assert refusal(call(substance="iron"), [call(substance="water")], ASKED) is None


def test_a_repeat_is_refused_whatever_the_number_type() -> None:
    first = call(substance="water", altitude=0)
    assert refusal(call(substance="water", altitude=0.0), [first], ASKED) == "a repeat"


def test_a_call_that_only_reorders_known_values_is_refused() -> None:
    first = call(a="water", b="iron")
    assert refusal(call(a="iron", b="water"), [first], ASKED) == "a repeat"
    assert refusal(call(a="iron", b="iron"), [first], ASKED) == "nothing new"


def test_a_new_value_the_user_never_said_is_refused() -> None:
    reason = refusal(call(substance="mercury"), [call(substance="water")], ASKED)
    assert reason == "a value the user did not say"


def test_a_value_must_be_said_as_a_whole_word() -> None:
    assert refusal(call(substance="ir"), [call(substance="water")], ASKED) is not None
    assert refusal(call(substance="kelvin"), [call(substance="water")], ASKED) is None


def test_an_enum_value_counts_when_its_words_are_said() -> None:
    asked = "precipitation for the last six months and the last year"
    first = ToolCall(id="", name="rain", arguments={"frame": "last_year"})
    kept = ToolCall(id="", name="rain", arguments={"frame": "six_months"})
    assert refusal(kept, [first], asked) is None


def test_a_number_said_by_the_user_is_not_another_ticker() -> None:
    first = ToolCall(id="", name="stock_price", arguments={"symbol": "ACME"})
    forced = ToolCall(id="", name="stock_price", arguments={"symbol": "40"})
    asked = "what do 40 shares of acme cost?"
    assert refusal(forced, [first], asked) == "a value of another kind"
