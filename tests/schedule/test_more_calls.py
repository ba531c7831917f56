"""MoreCalls' rule: a forced extra call is kept only when it is new and takes a value the
user said that no earlier call used."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from bigloop.atoms.models.base import ToolCall
from bigloop.policies.more_calls import doomed, refusal

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


# `doomed` stops a continuation early only where `refusal` would refuse it anyway.

WORDS = st.sampled_from(["water", "iron", "40", "0", "kelvin", "six months", "a b", "ACME"])
WRITTEN = st.recursive(
    st.one_of(
        WORDS,
        WORDS.map(lambda w: w.upper().replace(" ", "_")),
        WORDS.map(lambda w: f" {w[:3]}"),
        st.text(max_size=8),
        st.integers(-1000, 1000),
        st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False),
        st.booleans(),
        st.none(),
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)


@settings(max_examples=600, deadline=None)
@given(
    st.dictionaries(st.text(min_size=1, max_size=6), WRITTEN, max_size=4),
    st.dictionaries(st.sampled_from(["substance", "altitude", "unit"]), WORDS, max_size=3),
    st.lists(WORDS, max_size=4),
)
def test_a_continuation_is_stopped_only_when_its_whole_call_would_be_refused(
    arguments: dict[str, object], earlier: dict[str, object], said: list[str]
) -> None:
    user = " ".join(said).lower()
    made = [call(**earlier)]
    whole = json.dumps({"name": "boiling_point", "arguments": arguments})
    test = doomed(made, user)
    for end in range(len(whole) + 1):
        if test(whole[:end]):
            assert refusal(call(**arguments), made, user) is not None, whole[:end]
            break


def test_a_continuation_with_a_value_nobody_said_stops_at_that_value() -> None:
    test = doomed([call(substance="water")], ASKED)
    assert not test('{"name": "boiling_point", "arguments": {"substance": "iron"')
    assert not test('{"name": "boiling_point", "arguments": {"substance": "iron", ')
    assert test('{"name": "boiling_point", "arguments": {"substance": "mercury", ')
    assert test('{"name": "boiling_point", "arguments": {"altitude": 1200}')


def test_a_string_nobody_said_stops_while_it_is_being_written() -> None:
    test = doomed([call(substance="water")], ASKED)
    assert not test('{"name": "boiling_point", "arguments": {"substance": "ir')
    assert not test('{"name": "boiling_point", "arguments": {"substance": "wat')
    assert test('{"name": "boiling_point", "arguments": {"substance": "merc')
    assert not test('{"name": "boiling_point", "arguments": {"substance": "1_0')  # a number?
    assert not test('{"name": "boiling_point", "arguments": {"subst')  # a key
