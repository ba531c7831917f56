"""Dates and times said in words, in the forms tools take (`bigloop.policies.moments`)."""

from __future__ import annotations

import datetime as dt

from bigloop.policies.base import Evidence
from bigloop.policies.moments import moments


def test_times_in_12_and_24_hours_and_relative_days() -> None:
    forms = moments("today is 2024-03-01. a table at 6:30 pm next friday")
    assert {"2024-03-08", "18:30", "18:30:00", "6:30 pm", "friday"} <= set(forms)
    assert "6:30 pm" in moments("dinner at 18:30 on 2024-03-01")


def test_relative_words_count_from_the_given_day_or_the_text_s_own_date() -> None:
    assert "2024-03-02" in moments("remind me tomorrow", today=dt.date(2024, 3, 1))
    assert "2026-12-25" in moments("it is 24 december 2026; the party is tomorrow")


def test_text_without_dates_has_no_forms() -> None:
    assert moments("buy 100 shares of acme at 25.50 usd") == []


def test_grounding_finds_normalised_times_but_not_other_times_or_numbers() -> None:
    """A moment's forms match whole values only: its digits ground no other number."""
    said = Evidence("Today is 2024-03-01.\nBook a table at 6:30 PM next Friday")
    assert said.mentions("18:30:00") and said.mentions("6:30 PM")
    assert said.mentions("2024-03-08") and said.mentions("2024-03-08T18:30:00")
    assert not said.mentions("19:00:00")
    assert not Evidence("The meeting moved from Tuesday to Thursday.").mentions(2.0)
