from __future__ import annotations

from bigloop.atoms.models.runaway import Runaway, repeating


def digits(tokens: list[int]) -> str:
    return "".join(str(t % 10) for t in tokens)


def test_a_token_repeated_over_the_span_is_a_runaway() -> None:
    assert repeating([5] * 32)
    assert not repeating([5] * 31)


def test_a_short_cycle_repeated_is_a_runaway_but_a_list_of_a_few_equal_values_is_not() -> None:
    cycle = [7, 8, 9]  # "0", ",", " "
    assert repeating([1, 2, *cycle * 11])
    assert not repeating(cycle * 5)


def test_varied_text_is_not_a_runaway() -> None:
    assert not repeating(list(range(200)))


def test_the_guard_cuts_a_growing_number_and_says_so() -> None:
    guard = Runaway(start=3, text=lambda tokens: "".join("1234567890"[t % 10] for t in tokens))
    assert not guard([0, 0, 0, *range(20)], None)
    assert guard([0, 0, 0, *range(30)], None)
    assert guard.cut


def test_the_guard_looks_only_at_what_was_generated() -> None:
    guard = Runaway(start=40, text=digits)
    assert not guard([3] * 40 + [1, 2], None)


def test_without_a_start_the_guard_starts_at_what_it_is_first_given() -> None:
    guard = Runaway(start=None, text=lambda tokens: "x" * len(tokens))
    assert not guard([4] * 50, None)
    assert guard.start == 50
    assert guard([4] * 82, None)


def test_a_phrase_said_four_times_over_is_a_runaway_but_three_times_is_not() -> None:
    phrase = list(range(100, 110))  # ", the rise of Christianity in Egypt and Turkey"
    assert repeating([1, 2, *phrase * 4])
    assert not repeating([1, 2, *phrase * 3])
    assert not repeating([t for i in range(6) for t in (*phrase[:9], 200 + i)])
