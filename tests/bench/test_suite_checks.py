"""The suite's checks: numbers as people write them, rounding asked for, whole words,
dates in several forms, set match, asking, answering without tools."""

from __future__ import annotations

from bigloop_eval.suite.checks import (
    AllOf,
    Asked,
    NoTool,
    Outcome,
    all_of,
    date,
    every,
    number,
    numbers,
    text,
)

from bigloop import RunResult, Step


def ok(answer: str, *tools: str) -> Outcome:
    return Outcome(status="ok", answer=answer, tools_called=tools)


def test_numbers_reads_separators_signs_percentages_and_decimals() -> None:
    assert numbers("17.5% of 2,480 is $434.00; it fell by -3 (−2.50)") == [
        (17.5, 1),
        (2480.0, 0),
        (434.0, 0),
        (-3.0, 0),
        (-2.5, 1),
    ]
    assert numbers("1,234,567 / 89") == [(1234567.0, 0), (89.0, 0)]
    assert [v for v, _ in numbers("on 2024-03-01")] == [2024.0, 3.0, 1.0]


def test_number_finds_the_expected_value_among_others() -> None:
    check = number(0.175 * 2480)
    assert check(ok("17.5% of 2,480 is 434."))[0]
    passed, why = check(ok("It is 433."))
    assert not passed and "434" in why and "433" in why
    assert number(1048576)(ok("2^20 = 1,048,576"))[0]


def test_number_with_places_requires_the_rounding_asked_for() -> None:
    miles = number(42.195 / 1.609344, places=2)
    assert miles(ok("About 26.22 miles."))[0]
    assert miles(ok("26.220 mi"))[0]
    passed, why = miles(ok("26.218757 miles"))
    assert not passed and "not rounded" in why
    assert not miles(ok("26.2 miles"))[0]
    celsius = number((350 - 32) * 5 / 9, places=0)
    assert celsius(ok("177 °C"))[0] and celsius(ok("177.0 °C"))[0]
    assert not celsius(ok("176.666667 °C"))[0]
    assert not celsius(ok("178 °C"))[0] and not celsius(ok("176 °C"))[0]
    half = number(26.215, places=2)  # either neighbour of a half-way value counts
    assert half(ok("26.21"))[0] and half(ok("26.22"))[0] and not half(ok("26.23"))[0]


def test_number_default_tolerance() -> None:
    assert number(19)(ok("19"))[0] and not number(19)(ok("19.01"))[0]
    liters = number(18.927059)
    assert liters(ok("18.93 L"))[0] and not liters(ok("19 L"))[0]
    assert number(5.25, tol=0.5)(ok("5"))[0]


def test_answer_checks_fail_when_the_run_did_not_answer() -> None:
    asked = Outcome(status="input_required", asked=True)
    assert number(19)(asked) == (False, "status input_required (asked)")
    assert text("Paris")(Outcome(status="ok", answer="  ")) == (False, "empty answer")


def test_text_matches_whole_words_case_and_space_insensitively() -> None:
    gold = text("Au")
    assert gold(ok("The symbol for gold is AU."))[0]
    assert not gold(ok("Because it is shiny."))[0]
    assert text("Road Bike")(ok("The road\n bike costs most"))[0]
    assert text("maple-tiger-42")(ok("Password: maple-tiger-42."))[0]


def test_date_accepts_iso_and_spelled_out_forms() -> None:
    check = date("2024-06-13")
    for answer in [
        "2024-06-13",
        "It is June 13, 2024.",
        "Thursday, 13 June 2024",
        "the 13th of June, 2024",
        "Jun 13th 2024",
    ]:
        assert check(ok(answer))[0], answer
    assert not check(ok("June 14, 2024"))[0]
    assert not check(ok("2024-06-31"))[0]


def test_all_of_is_a_set_match_with_forbidden_items() -> None:
    check = all_of(["atlas", "cobalt"], forbid=["delta"])
    assert check(ok("Atlas and Cobalt are active."))[0]
    assert check(ok("atlas, cobalt")) == (True, "all 2 items found")
    assert check(ok("atlas")) == (False, "missing ['cobalt']")
    assert not check(ok("atlas, cobalt, delta"))[0]
    assert AllOf(items=("todo.txt",))(ok("notes/todo.txt"))[0]


def test_asked_and_no_tool() -> None:
    assert Asked()(Outcome(status="input_required", asked=True))[0]
    assert Asked()(ok("180 cm")) == (False, "answered without asking (status ok)")
    assert NoTool()(ok("Leaves fall softly"))[0]
    assert NoTool()(ok("3", "calculator")) == (False, "called ['calculator']")
    assert NoTool(any_of=("Paris",))(ok("Paris."))[0]
    assert not NoTool(any_of=("Paris",))(ok("Lyon."))[0]
    assert not NoTool()(Outcome(status="input_required", asked=True))[0]


def test_every_needs_all_checks() -> None:
    check = every(number(46), number(46 / 7, places=1))
    assert check(ok("46 days, 6.6 weeks"))[0]
    passed, why = check(ok("46 days"))
    assert not passed and why.startswith("46 found; ")


def test_outcome_of_a_run_sees_asks_and_tool_calls() -> None:
    steps = [
        Step(run_id="r", index=0, kind="model", name="m"),
        Step(run_id="r", index=1, kind="tool", name="calculator"),
        Step(run_id="r", index=2, kind="ask", name="user"),
    ]
    outcome = Outcome.of(RunResult(run_id="r", task="t", status="ok", answer="x", steps=steps))
    assert outcome == Outcome(status="ok", answer="x", asked=True, tools_called=("calculator",))
    stopped = Outcome.of(RunResult(run_id="r", task="t", status="input_required"))
    assert stopped.asked
